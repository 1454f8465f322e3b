"""``KafkaConnection`` when an answer comes after its caller stopped waiting."""

from __future__ import annotations

import asyncio

import pytest

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.intercept.hooks import Gate, Hold
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig

REG = default_registry()


def test_a_late_response_is_dropped_and_the_connection_keeps_working() -> None:
    async def go() -> None:
        gate = Gate("late")
        async with FakeBroker(BrokerConfig(), clock=VirtualClock()) as b:
            b.hooks.add(lambda call: Hold(gate), api="ApiVersions")  # once: the first only
            async with await KafkaConnection.open(b.bootstrap, timeout_s=10) as conn:
                body = REG["ApiVersionsRequest"].new()
                with pytest.raises(ClientError, match="no response"):
                    await conn.send(body, 0, timeout_s=0.05)  # held: times out
                gate.open()  # now its answer arrives, after the caller gave up
                ex = await conn.send(body, 0)  # answered after the late one, in order
                assert ex.response.error_code == 0
                assert ex.correlation_id == 2
                # The reader is still alive: a third request is answered too.
                assert (await conn.send(body, 0)).correlation_id == 3
    asyncio.run(go())


def test_a_reader_that_fails_fails_its_waiters_at_once() -> None:
    """An unexpected error in the reader must not leave requests waiting their timeout."""
    async def go() -> None:
        async with FakeBroker(BrokerConfig(), clock=VirtualClock()) as b:
            conn = await KafkaConnection.open(b.bootstrap, timeout_s=30)
            try:
                conn._waiting.clear()
                fut = conn.submit(REG["ApiVersionsRequest"].new(), 0)
                # Poison the waiter table so delivering the answer raises inside the reader.
                conn._waiting = _Exploding(conn._waiting)  # type: ignore[assignment]
                with pytest.raises(ClientError, match="reader failed"):
                    await asyncio.wait_for(fut, 5)
            finally:
                await conn.close()
    asyncio.run(go())


class _Exploding(dict):  # type: ignore[type-arg]
    def pop(self, *a: object) -> object:
        raise RuntimeError("boom")
