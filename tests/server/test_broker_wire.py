"""The server shell over real sockets, on a virtual clock: framing, ordering, garbage,
ApiVersions, Metadata/FindCoordinator/ListOffsets/Fetch for real consumers' needs."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Awaitable, Callable

import pytest

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.protocol.framing import decode_response
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig, Topic

REG = default_registry()


async def started(**config: object) -> FakeBroker:
    b = FakeBroker(BrokerConfig(topics=[Topic("events", 6)], **config),  # type: ignore[arg-type]
                   CoordinatorConfig(initial_rebalance_delay_ms=0), VirtualClock())
    await b.start()
    return b


def run(coro: object) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


def with_broker(test: Callable[[FakeBroker], Awaitable[None]]) -> None:
    async def go() -> None:
        b = await started()
        try:
            await test(b)
        finally:
            await b.stop()
    asyncio.run(go())


def join(member_id: str = "", group: str = "g") -> object:
    jg = REG["JoinGroupRequest"]
    return jg.new(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                  member_id=member_id, protocol_type="connect",
                  protocols=[jg.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")])


async def raw_roundtrip(b: FakeBroker, payload: bytes, *, one_frame: bool = False) -> bytes:
    """Send raw bytes and half-close; return what comes back (one frame, or all until the
    server closes). Bounded, so a server that neither answers nor closes fails the test."""
    host, port = b.bootstrap.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(payload)
    await writer.drain()
    try:
        if one_frame:
            head = await asyncio.wait_for(reader.readexactly(4), 5)
            return head + await asyncio.wait_for(
                reader.readexactly(int.from_bytes(head, "big")), 5)
        writer.write_eof()
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


def test_api_versions_advertises_implemented_apis_and_caps() -> None:
    async def go() -> None:
        b = await started(api_max_versions={11: 5})
        try:
            async with await KafkaConnection.open(b.bootstrap) as c:
                ex = await c.send(REG["ApiVersionsRequest"].new(), 3)
                got = {k.api_key: (k.min_version, k.max_version) for k in ex.response.api_keys}
        finally:
            await b.stop()
        assert got[11] == (0, 5)  # JoinGroup capped by configuration
        assert got[14] == (0, 5) and got[3] == (0, 13) and got[10] == (0, 6)
        assert 0 not in got  # Produce is not implemented without an upstream
    run(go())


def test_api_versions_beyond_range_gets_v0_unsupported_version() -> None:
    async def go(broker: FakeBroker) -> None:
        # ApiVersions v99, header v2 (flexible form) as a newer client would send it.
        body = struct.pack(">hhi", 18, 99, 42) + b"\x00\x01x" + b"\x00"
        data = await raw_roundtrip(broker, struct.pack(">i", len(body)) + body, one_frame=True)
        resp = decode_response(REG, data[4:], 18, 0)
        assert resp.correlation_id == 42
        assert resp.body.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert any(k.api_key == 18 and k.max_version == 4 for k in resp.body.api_keys)
    with_broker(go)


@pytest.mark.parametrize("garbage", [
    b"\x00\x00\x00\x03abc",                       # frame too short for a header
    b"\x00\x00\x00\x08\x7f\x7f\x00\x00\x00\x00\x00\x01",  # unknown API key
    b"\xff\xff\xff\xf0",                          # negative size
    b"\x7f\xff\xff\xff",                          # larger than the frame limit
    struct.pack(">i", 12) + struct.pack(">hhi", 11, 9, 1) + b"\x00\x00\x05",  # cut JoinGroup
    bytes(range(256)) * 4,                        # noise
])
def test_garbage_closes_only_that_connection(garbage: bytes) -> None:
    async def go() -> None:
        b = await started()
        try:
            async with await KafkaConnection.open(b.bootstrap) as good:
                assert await raw_roundtrip(b, garbage) == b""  # closed without a reply
                ex = await good.send(REG["ApiVersionsRequest"].new(), 3)  # still served
                assert ex.response.error_code == 0
                async with await KafkaConnection.open(b.bootstrap) as fresh:  # still accepting
                    assert (await fresh.send(REG["ApiVersionsRequest"].new(), 3)).response.error_code == 0
        finally:
            await b.stop()
    run(go())


def test_pipelined_requests_answered_in_order_behind_a_parked_join() -> None:
    async def go() -> None:
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=3000),
                       VirtualClock())
        await b.start()
        try:
            async with await KafkaConnection.open(b.bootstrap) as c:
                first = await c.send(join(), 9)
                member = first.response.member_id
                assert first.response.error_code == ErrorCode.MEMBER_ID_REQUIRED
                parked = c.submit(join(member), 9)            # waits for the initial delay
                behind = c.submit(REG["ApiVersionsRequest"].new(), 3)
                await asyncio.sleep(0)
                done, _ = await asyncio.wait({parked, behind}, timeout=0.2)
                assert not done  # the ApiVersions waits behind the parked JoinGroup
                assert isinstance(b.clock, VirtualClock)
                b.clock.advance(3000)
                j = await c.wait(parked)
                a = await c.wait(behind)
                assert j.response.error_code == 0 and j.response.leader == member
                assert a.correlation_id > j.correlation_id
        finally:
            await b.stop()
    run(go())


def test_stop_ends_a_connection_whose_join_is_parked() -> None:
    """A parked request waits outside any task; stopping the broker cancels it all the
    same: its connection closes as stopped by the broker, and nothing is left waiting."""
    async def go() -> None:
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=3000),
                       VirtualClock())
        await b.start()
        stopped = False
        try:
            async with await KafkaConnection.open(b.bootstrap) as c:
                member = (await c.send(join(), 9)).response.member_id
                parked = c.submit(join(member), 9)            # waits for the initial delay
                for _ in range(100):
                    if b._pending:
                        break
                    await asyncio.sleep(0.01)
                (conn,) = b._connections.values()
                assert conn.exchange is not None and len(b._pending) == 1
                await b.stop()
                stopped = True
                with pytest.raises(ClientError):
                    await c.wait(parked)
            assert (conn.closed, conn.closed_by, conn.close_reason) == (True, "broker", "broker stopped")
            assert (b._busy, b._pending, b._tasks, b._waits, b._connections) == (0, {}, set(), {}, {})
        finally:
            if not stopped:
                await b.stop()
    run(go())


def test_a_cancelled_wait_ends_only_its_connection() -> None:
    """What a parked request waits on being cancelled ends that connection, as a cancelled
    task did; the broker goes on serving the others."""
    async def go() -> None:
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=3000),
                       VirtualClock())
        await b.start()
        try:
            async with await KafkaConnection.open(b.bootstrap) as c, \
                    await KafkaConnection.open(b.bootstrap) as other:
                member = (await c.send(join(), 9)).response.member_id
                parked = c.submit(join(member), 9)
                for _ in range(100):
                    if b._pending:
                        break
                    await asyncio.sleep(0.01)
                (waited_on,) = b._pending.values()
                waited_on.cancel()
                with pytest.raises(ClientError):
                    await c.wait(parked)
                ex = await other.send(REG["ApiVersionsRequest"].new(), 3)
                assert ex.response.error_code == 0
                assert (b._busy, b._pending, b._waits, len(b._connections)) == (0, {}, {}, 1)
        finally:
            await b.stop()
    run(go())


def test_metadata_find_coordinator_list_offsets_fetch() -> None:
    async def go(broker: FakeBroker) -> None:
        host, port = broker.bootstrap.rsplit(":", 1)
        async with await KafkaConnection.open(broker.bootstrap) as c:
            md = (await c.send(REG["MetadataRequest"].new(topics=None), 12)).response
            assert [(x.node_id, x.host, x.port) for x in md.brokers] == [(1, host, int(port))]
            (t,) = md.topics
            assert t.name == "events" and len(t.partitions) == 6 and t.topic_id != uuid.UUID(int=0)
            missing = (await c.send(REG["MetadataRequest"].new(
                topics=[REG["MetadataRequest"].cls.MetadataRequestTopic(name="nope")]), 12)).response
            assert missing.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            fc = REG["FindCoordinatorRequest"]
            single = (await c.send(fc.new(key="g"), 3)).response
            assert (single.error_code, single.host, single.port) == (0, host, int(port))
            batched = (await c.send(fc.new(coordinator_keys=["a", "b"]), 6)).response
            assert [x.key for x in batched.coordinators] == ["a", "b"]
            lo = REG["ListOffsetsRequest"]
            part = lo.cls.ListOffsetsPartition(partition_index=2, timestamp=-1)
            offs = (await c.send(lo.new(replica_id=-1, topics=[lo.cls.ListOffsetsTopic(
                name="events", partitions=[part])]), 7)).response
            assert offs.topics[0].partitions[0].offset == 0
            f = REG["FetchRequest"]
            fetch = c.submit(f.new(max_wait_ms=500, min_bytes=1, topics=[f.cls.FetchTopic(
                topic_id=t.topic_id, partitions=[f.cls.FetchPartition(partition=0)])]), 13)
            assert isinstance(broker.clock, VirtualClock)
            await broker.clock.until_sleeping(500)  # the Fetch waits its max wait ...
            assert not fetch.done()
            broker.clock.advance(500)  # ... on the broker's clock
            resp = (await c.wait(fetch)).response
            p = resp.responses[0].partitions[0]
            assert (p.error_code, p.high_watermark, p.records) == (0, 0, b"")
    with_broker(go)


def test_unreachable_broker_is_a_client_error() -> None:
    async def go() -> None:
        b = await started()
        addr = b.bootstrap
        await b.stop()
        with pytest.raises(ClientError, match="cannot connect"):
            await KafkaConnection.open(addr, timeout_s=2)
    run(go())
