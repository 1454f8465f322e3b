"""Big frames: decoded and prepared on a thread, freed on a thread, and the process-wide
settings changed meanwhile (GIL switch interval, garbage collector) are put back."""

from __future__ import annotations

import asyncio
import gc
import struct
import sys
import threading
from typing import Any

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.protocol.framing import Request, encode_request
from fakebroker.server import offload
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig

REG = default_registry()
JOIN = REG["JoinGroupRequest"]


def big_join(group_id: str = "big", protocols: int = 20_000) -> bytes:
    """A JoinGroup v5 frame (no size prefix) over the offload threshold."""
    p = JOIN.cls.JoinGroupRequestProtocol
    msg = JOIN.new(group_id=group_id, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                   member_id="", protocol_type="connect",
                   protocols=[p(name=f"p{i}", metadata=b"") for i in range(protocols)])
    frame = encode_request(REG, msg, 5, 7, "c")
    assert len(frame) >= offload.OFFLOAD_DECODE_BYTES
    return frame


class _Witness:
    """A prepared view that notes the thread it is made and freed on."""

    def __init__(self, req: Request, made: list[int], freed: list[int]) -> None:
        self.protocols = len(req.body.protocols)  # type: ignore[attr-defined]
        self.freed = freed
        made.append(threading.get_ident())

    def __del__(self) -> None:
        self.freed.append(threading.get_ident())


async def _thawed() -> bool:
    """Wait (boundedly) until no big request is alive: nothing is left frozen (nothing else
    in the test process freezes objects)."""
    for _ in range(1000):
        if gc.get_freeze_count() == 0:
            return True
        await asyncio.sleep(0.01)
    return False


def test_a_big_frame_is_decoded_prepared_and_freed_on_threads_and_settings_come_back() -> None:
    seen: list[int] = []
    freed: list[int] = []

    def prepare(req: Request) -> _Witness:
        return _Witness(req, seen, freed)

    interval, gc_on = sys.getswitchinterval(), gc.isenabled()

    async def go() -> None:
        assert await _thawed()  # what earlier tests decoded is gone
        req, prepared = await offload.decode(REG, big_join(), prepare)
        assert prepared.protocols == 20_000 and req.body.group_id == "big"  # type: ignore[attr-defined]
        assert seen and seen[0] != threading.get_ident()
        # While the request lives, its objects are out of the collector's generations.
        assert gc.get_freeze_count() > 20_000
        del req, prepared
        assert await _thawed()  # freed on a thread
        assert freed and freed[0] != threading.get_ident()
        small, none = await offload.decode(REG, encode_request(REG, JOIN.new(), 5, 1, "c"), prepare)
        assert none is None and len(seen) == 1  # a small frame: no thread, no prepare
    asyncio.run(go())
    assert (sys.getswitchinterval(), gc.isenabled()) == (interval, gc_on)


async def _send_raw(bootstrap: str, frame: bytes) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    r, w = await asyncio.open_connection(host, int(port))
    w.write(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", await asyncio.wait_for(r.readexactly(4), 60))[0]
    data = await r.readexactly(size)
    w.close()
    return REG.response(11).decode(data[4:], 5)


def test_a_big_join_gets_kafkas_answer_through_the_prepared_view() -> None:
    async def go() -> None:
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0), VirtualClock())
        async with b:
            resp = await _send_raw(b.bootstrap, big_join())
            assert resp.error_code == ErrorCode.MEMBER_ID_REQUIRED and resp.member_id
    asyncio.run(go())


def test_a_hook_that_edits_a_big_request_is_not_overridden_by_the_prepared_view() -> None:
    async def go() -> None:
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0), VirtualClock())

        def edit(call: Any) -> None:
            call.request.group_id = ""  # observed and edited, not decided
        async with b:
            b.hooks.add(edit, api="JoinGroup", keep=True)
            resp = await _send_raw(b.bootstrap, big_join())
            assert resp.error_code == ErrorCode.INVALID_GROUP_ID
    asyncio.run(go())


def test_a_big_decode_whose_task_is_cancelled_is_still_freed_and_thawed() -> None:
    async def go() -> None:
        assert await _thawed()
        task = asyncio.ensure_future(offload.decode(REG, big_join(protocols=100_000)))
        await asyncio.sleep(0.01)  # on its thread now
        task.cancel()
        await asyncio.wait([task])
        assert task.cancelled()
        del task  # (its CancelledError's traceback refers to the thread's future)
        assert await _thawed()  # the thread finished the decode, then it was freed
    asyncio.run(go())


def test_big_sequences_are_found_through_messages_views_and_small_arrays() -> None:
    """What the freeing thread frees a slice at a time: here a JoinGroup's protocols (a
    field of the message), its view's (a field of a dataclass) and a big array nested in
    a small one."""
    from fakebroker.coordinator.classic.join_request import JoinRequest
    n = offload.FREE_SLICE
    req = JOIN.cls.JoinGroupRequestProtocol
    body = JOIN.new(group_id="g", protocols=[req(name=str(i), metadata=b"") for i in range(n)])
    view = JoinRequest.from_struct(body, 5)
    commit = REG["OffsetCommitRequest"]
    topic = commit.cls.OffsetCommitRequestTopic(
        name="t", partitions=[commit.cls.OffsetCommitRequestPartition(partition_index=i)
                              for i in range(n + 1)])
    small = JOIN.new(protocols=[req(name="x")] * (n - 1))
    found = offload.big_sequences([body, view, commit.new(topics=[topic]), small])
    assert sorted(len(f) for f in found) == [n, n, n + 1]
    assert found[0] is not body.protocols  # copies: the originals are freed cheaply
