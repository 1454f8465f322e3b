"""Scripted clients for golden scenarios: requests over real sockets to an in-process
FakeBroker on a virtual clock, one at a time, so what the broker records is deterministic.

After every request the session waits (in loop turns, never in time) until the broker has
read it and is idle: handled, or parked in the coordinator. A scenario therefore reads as
the sequence of its transcript:

    w1 = await s.client("w1")
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

from ...client import Exchange, KafkaConnection
from ...protocol import Registry
from ...server.broker import FakeBroker
from ...server.clock import VirtualClock
from ...testing.client import ScriptedClient
from ..recorder import Recorder

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


class Session:
    def __init__(self, broker: FakeBroker, recorder: Recorder, scenario_id: str,
                 registry: Registry) -> None:
        self.broker = broker
        self.rec = recorder
        self.registry = registry
        self.scenario_id = scenario_id
        self.groups: dict[str, str] = {}  # binding name -> group id
        self._clients: list[Client] = []
        self._sent = 0
        self._closed = 0
        self._futures: list[asyncio.Future[Exchange]] = []

    # ------------------------------------------------------------------ setup

    def group(self, name: str = "g1") -> str:
        """A group id for this scenario, distinct across scenarios; replays may make it
        unique per run (it is bound as ``group.<name>``)."""
        gid = f"{self.scenario_id.lower()}-{name}"
        self.groups[f"group.{name}"] = gid
        return gid

    async def client(self, client_id: str) -> Client:
        conn = await KafkaConnection.open(self.broker.bootstrap, client_id=client_id,
                                          registry=self.registry, timeout_s=10)
        c = Client(self, conn, client_id)
        self._clients.append(c)
        return c

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

    async def result(self, fut: asyncio.Future[Exchange]) -> Any:
        """The response of a request sent earlier; it must have been answered by now."""
        await self.settle()
        if not fut.done():
            raise ScenarioFailed("the request is still parked (advance the clock first?)")
        return fut.result().response

    def parked(self, fut: asyncio.Future[Exchange]) -> bool:
        return not fut.done()

    def check(self, cond: bool, what: str) -> None:
        if not cond:
            raise ScenarioFailed(what)

    async def close(self) -> None:
        for c in self._clients:
            await c.close()
        await self.settle()


class Client(ScriptedClient):
    """One connection with one client id: the group APIs' verbs (``ScriptedClient``), each
    request followed by the session settling."""

    def __init__(self, session: Session, conn: KafkaConnection, client_id: str) -> None:
        self.s = session
        self.registry = session.registry
        self.conn = conn
        self.client_id = client_id
        self._open = True

    async def submit(self, api: str, version: int, *, label: str = "",
                     **fields: Any) -> asyncio.Future[Exchange]:
        fut = self.conn.submit(self.registry[f"{api}Request"].new(**fields), version)
        # A request still parked when its connection closes fails; that is expected.
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.s._sent += 1
        self.s._futures.append(fut)
        await self.s.settle()
        return fut

    async def result(self, pending: asyncio.Future[Exchange]) -> Any:
        return await self.s.result(pending)

    async def close(self) -> None:
        if self._open:
            self._open = False
            self.s._closed += 1
            await self.conn.close()
            await self.s.settle()

    # ------------------------------------------------------------------ group APIs

    async def new_member(self, group: str, **kw: Any) -> tuple[str, asyncio.Future[Exchange]]:
        """KIP-394: join without an id (MEMBER_ID_REQUIRED), rejoin with the id given.
        Returns the member id and the (possibly parked) rejoin."""
        first = await self.join(group, **kw)
        self.s.check(first.error_code == 79, f"expected MEMBER_ID_REQUIRED, got {first.error_code}")
        return first.member_id, await self.join_later(group, first.member_id, **kw)

    async def commit(self, group: str, offsets: dict[str, dict[int, int]], *, version: int = 9,
                     member_id: str = "", generation: int = -1, instance: str | None = None,
                     metadata: str | None = None, leader_epoch: int = -1,
                     topic_ids: dict[str, uuid.UUID] | None = None) -> Any:
        """``offsets``: topic -> partition -> offset (v10: topics by id from ``topic_ids``)."""
        cls = self.s.registry["OffsetCommitRequest"].cls
        topics = []
        for name, parts in offsets.items():
            tf: dict[str, Any] = {"partitions": [cls.OffsetCommitRequestPartition(  # type: ignore[attr-defined]
                partition_index=p, committed_offset=o, committed_leader_epoch=leader_epoch if version >= 6 else -1,
                committed_metadata=metadata) for p, o in parts.items()]}
            if version >= 10:
                tf["topic_id"] = (topic_ids or {})[name]
            else:
                tf["name"] = name
            topics.append(cls.OffsetCommitRequestTopic(**tf))  # type: ignore[attr-defined]
        f: dict[str, Any] = dict(group_id=group, generation_id_or_member_epoch=generation,
                                 member_id=member_id, topics=topics)
        if version >= 7:
            f["group_instance_id"] = instance
        return await self.call("OffsetCommit", version, **f)

    async def fetch_offsets(self, group: str, topics: dict[str, list[int]] | None, *,
                            version: int = 7, topic_ids: dict[str, uuid.UUID] | None = None,
                            more: dict[str, dict[str, list[int]] | None] | None = None) -> Any:
        """v1-7: one group; v8+: ``group`` and then the groups of ``more``."""
        cls = self.s.registry["OffsetFetchRequest"].cls
        if version < 8:
            ts = None if topics is None else [cls.OffsetFetchRequestTopic(  # type: ignore[attr-defined]
                name=n, partition_indexes=ps) for n, ps in topics.items()]
            f: dict[str, Any] = dict(group_id=group, topics=ts)
            if version >= 7:
                f["require_stable"] = False
            return await self.call("OffsetFetch", version, **f)
        groups = []
        for gid, tps in [(group, topics), *(more or {}).items()]:
            ts = None if tps is None else [cls.OffsetFetchRequestTopics(  # type: ignore[attr-defined]
                **({"topic_id": (topic_ids or {})[n]} if version >= 10 else {"name": n}),
                partition_indexes=ps) for n, ps in tps.items()]
            groups.append(cls.OffsetFetchRequestGroup(group_id=gid, topics=ts))  # type: ignore[attr-defined]
        return await self.call("OffsetFetch", version, groups=groups, require_stable=False)
