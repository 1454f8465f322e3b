"""Connect-store writes behind the event loop (``FakeBroker``'s ``WriteBehind``): a store
with ``submit`` is handed each state change without waiting; every coordinator answer
is held until the writes made before it are acknowledged, in order; a failed write
closes the connections waiting on it; the broker's own APIs are answered meanwhile.

The store here is acknowledged by hand, so nothing depends on timing."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any

import pytest

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig

REG = default_registry()
CG = REG["ConnectGroupHeartbeatRequest"]
JOIN = REG["JoinGroupRequest"]
API_VERSIONS = REG["ApiVersionsRequest"]
COMPUTE_ASSIGNMENT = 1000  # the draft's: the first member is asked to compute


class HandAckedStore:
    """Records every submitted state change; the test acknowledges (or fails) each."""

    def __init__(self) -> None:
        self.writes: list[tuple[list[Any], Future[None]]] = []

    def submit(self, records: Any) -> Future[None]:
        fut: Future[None] = Future()
        self.writes.append((list(records), fut))
        return fut


def connect_join(member: str) -> Any:
    assignor = CG.cls.Assignor(name="sessioned", minimum_version=0, maximum_version=2,  # type: ignore[attr-defined]
                               reason=0, version=2, metadata=b"meta")
    return CG.new(group_id="connect", member_id=member, member_epoch=0, rebalance_timeout_ms=60_000,
                  client_assignors=[assignor], connectors_and_tasks=CG.cls.ConnectorsAndTasks(  # type: ignore[attr-defined]
                      connectors=[], tasks=[]))


def classic_join() -> Any:
    return JOIN.new(group_id="classic", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                    member_id="", protocol_type="connect",
                    protocols=[JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=b"m")])  # type: ignore[attr-defined]


async def until(check: Any) -> None:
    """Yield to the loop until ``check()`` (bounded: the requests are local)."""
    for _ in range(2000):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never held")


def run(test: Any) -> None:
    async def go() -> None:
        store = HandAckedStore()
        broker = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0),
                            VirtualClock(), connect_store=store)  # type: ignore[arg-type]
        async with broker:
            a = await KafkaConnection.open(broker.bootstrap)
            b = await KafkaConnection.open(broker.bootstrap)
            try:
                await test(store, a, b)
            finally:
                await a.close()
                await b.close()
    asyncio.run(go())


def test_an_answer_waits_for_its_write_while_the_loop_serves_others() -> None:
    async def test(store: HandAckedStore, a: KafkaConnection, b: KafkaConnection) -> None:
        joined = a.submit(connect_join("w1"), 0)
        await until(lambda: store.writes)
        assert store.writes[0][0], "the join wrote records"
        # The broker's own APIs are not held: the loop is free.
        assert (await b.send(API_VERSIONS.new(), 3)).response.error_code == 0
        # A coordinator answer queues behind the unacknowledged write.
        classic = b.submit(classic_join(), 9)
        await asyncio.sleep(0.05)
        assert not joined.done() and not classic.done()
        store.writes[0][1].set_result(None)
        assert (await a.wait(joined)).response.error_code == COMPUTE_ASSIGNMENT
        assert (await b.wait(classic)).response.error_code == 79  # MEMBER_ID_REQUIRED
    run(test)


def test_each_answer_is_held_until_the_writes_before_it() -> None:
    async def test(store: HandAckedStore, a: KafkaConnection, b: KafkaConnection) -> None:
        first = a.submit(connect_join("w1"), 0)
        await until(lambda: len(store.writes) == 1)
        second = b.submit(connect_join("w2"), 0)
        await until(lambda: len(store.writes) == 2)
        store.writes[0][1].set_result(None)
        assert (await a.wait(first)).response.error_code == COMPUTE_ASSIGNMENT
        await asyncio.sleep(0.05)
        assert not second.done(), "answered before its own write was acknowledged"
        store.writes[1][1].set_result(None)
        assert (await b.wait(second)).response.error_code == 0
    run(test)


def test_a_failed_write_closes_the_connection_waiting_on_it(caplog: pytest.LogCaptureFixture) -> None:
    async def test(store: HandAckedStore, a: KafkaConnection, b: KafkaConnection) -> None:
        joined = a.submit(connect_join("w1"), 0)
        await until(lambda: store.writes)
        store.writes[0][1].set_exception(RuntimeError("Produce refused"))
        with pytest.raises(ClientError, match="closed"):
            await a.wait(joined)
        assert (await b.send(API_VERSIONS.new(), 3)).response.error_code == 0
    run(test)
    assert "connect store write failed: Produce refused" in caplog.text
