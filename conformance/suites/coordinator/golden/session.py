"""Scripted clients for golden scenarios: requests over real sockets to an in-process
FakeBroker on a virtual clock, one at a time, so what the broker records is deterministic.

After every request the session waits (in loop turns, never in time) until the broker has
read it and is idle: handled, or parked in the coordinator. A scenario therefore reads as
the sequence of its transcript:

    w1 = await s.client("w1")                   # a fakebroker.testing ScriptedClient
    member, parked = await w1.new_member(g)     # MEMBER_ID_REQUIRED, then the parked rejoin
    await s.advance(3000)                       # the initial rebalance delay ends
    joined = await s.result(parked)
    s.check(joined.generation_id == 1, "the first generation is 1")
"""

from __future__ import annotations

import asyncio
import itertools
import re
import uuid
from collections.abc import Callable
from typing import Any

from fakebroker.client import Exchange
from fakebroker.protocol import Registry
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.testing.client import Pending, ScriptedClient
from fakebroker.testing.session import ScriptedSession
from fakebroker.script.recorder import Recorder

# The suffix of generated member ids in golden runs: UUID-shaped like Kafka's, counting.
GENERATED = re.compile(r"-00000000-0000-0000-0000-[0-9a-f]{12}$")


def golden_suffixes() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: str(uuid.UUID(int=next(counter)))


def _answered(f: asyncio.Future[Exchange]) -> bool:
    return f.done() and not f.cancelled() and f.exception() is None


class ScenarioFailed(AssertionError):
    """The coordinator did not answer as the scenario's rule says it must."""


async def until(pred: Callable[[], bool], what: str, turns: int = 200_000) -> None:
    for i in range(turns):
        if pred():
            return
        # Loopback delivery is immediate; after many idle turns, let the selector block a
        # little so a slow machine still gets there (bounded either way).
        await asyncio.sleep(0 if i < 2000 else 0.001)
    raise ScenarioFailed(f"never happened: {what}")


class Session(ScriptedSession):
    """Golden generation's session: after every request it settles the broker."""

    # The broker is our own, at the codec's ranges; a golden holds the scenario's requests only.
    negotiates = False

    def __init__(self, broker: FakeBroker, recorder: Recorder, scenario_id: str,
                 registry: Registry) -> None:
        super().__init__(broker.bootstrap, registry, scenario_id.lower(), timeout_s=10)
        self.broker = broker
        self.rec = recorder
        self.scenario_id = scenario_id
        self._sent = 0
        self._closed = 0
        self._futures: list[asyncio.Future[Exchange]] = []

    def group(self, name: str = "g1") -> str:
        """A group id for this scenario, distinct across scenarios; replays may make it
        unique per run (it is bound as ``group.<name>``)."""
        return super().group(name)

    async def pair(self) -> tuple[str, ScriptedClient, ScriptedClient]:
        """The scenario's group and two clients, w1 and w2 (most scenarios' cast)."""
        g = self.group()
        return g, await self.client("w1"), await self.client("w2")

    # ------------------------------------------------------------------ the policy

    def sent(self, pending: Pending) -> None:
        self._sent += 1
        self._futures.append(pending.future)

    async def after_submit(self, pending: Pending) -> None:
        await self.settle()

    async def answer(self, pending: Pending, timeout_s: float | None = None) -> Any:
        """The response of a request sent earlier; it must have been answered by now."""
        await self.settle()
        if not pending.done():
            raise ScenarioFailed("the request is still parked (advance the clock first?)")
        return pending.future.result().response

    async def close_client(self, client: ScriptedClient) -> None:
        self._closed += 1
        await super().close_client(client)
        await self.settle()

    def unexpected(self, what: str, expected: Any, actual: Any) -> None:
        raise ScenarioFailed(f"{what}: expected {expected}, got {actual}")

    # ------------------------------------------------------------------ time

    @property
    def now(self) -> int:
        return self.broker.clock.now_ms()

    async def settle(self) -> None:
        """Wait until every request sent is read and handled (or parked), every response
        written has arrived, and every close is recorded."""
        rec = self.rec
        closes = lambda: sum(1 for e in rec.events if e.kind == "close")  # noqa: E731
        await until(lambda: rec.requests_seen == self._sent and self.broker.quiet()
                    and rec.responses_seen == sum(1 for f in self._futures if _answered(f))
                    and closes() == self._closed, "the broker to settle")

    async def advance(self, ms: int) -> None:
        clock = self.broker.clock
        assert isinstance(clock, VirtualClock)
        clock.advance(ms)
        await self.settle()

    async def result(self, pending: Pending) -> Any:
        return await self.answer(pending)

    def parked(self, pending: Pending) -> bool:
        return not pending.done()

    def check(self, cond: bool, what: str) -> None:
        if not cond:
            raise ScenarioFailed(what)

    async def close(self) -> None:
        await super().close()
        await self.settle()
