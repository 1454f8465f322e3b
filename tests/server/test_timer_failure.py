"""A coordinator tick that raises is loud, and the broker's timers go on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.broker import FakeBroker
from fakebroker.server.coordinator_glue import TICK_RETRY_MS
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig

REG = default_registry()


def _join(member_id: str) -> object:
    jg = REG["JoinGroupRequest"]
    return jg.new(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                  member_id=member_id, protocol_type="connect",
                  protocols=[jg.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")])


def test_a_failing_tick_is_logged_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        clock = VirtualClock()
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=3000), clock)
        real_tick, calls = b.coordinator.tick, []

        def failing_twice(now_ms: int) -> list:  # type: ignore[type-arg]
            calls.append(now_ms)
            if len(calls) <= 2:
                raise RuntimeError(f"injected tick failure {len(calls)}")
            return real_tick(now_ms)

        b.coordinator.tick = failing_twice  # type: ignore[method-assign]
        async with b, await KafkaConnection.open(b.bootstrap, timeout_s=20) as c:
            member = (await c.send(_join(""), 9)).response.member_id
            parked = c.submit(_join(member), 9)  # completes when the initial delay's timer fires
            await clock.until_sleeping(3000)
            clock.advance(3000)                      # tick 1 raises
            await clock.until_sleeping(3000 + TICK_RETRY_MS)
            assert not parked.done()
            clock.advance(TICK_RETRY_MS)             # tick 2 raises
            await clock.until_sleeping(3000 + 2 * TICK_RETRY_MS)
            clock.advance(TICK_RETRY_MS)             # tick 3 runs the delayed join
            j = await c.wait(parked)
            assert j.response.error_code == ErrorCode.NONE and j.response.leader == member
            assert calls == [3000, 4000, 5000]
            # Other requests were served throughout.
            assert (await c.send(REG["ApiVersionsRequest"].new(), 3)).response.error_code == 0
        failures = [r for r in caplog.records if "coordinator timers failed" in r.getMessage()]
        assert len(failures) == 2  # the 1st and 2nd occurrences (powers of two)
        assert failures[0].exc_info and not failures[1].exc_info  # one traceback, then one line each
        assert "injected tick failure 1" in failures[0].getMessage()
    with caplog.at_level(logging.ERROR, logger="fakebroker"):
        asyncio.run(go())
