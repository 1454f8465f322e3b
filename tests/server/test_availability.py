"""No single client can freeze the broker: big frames are decoded off the event loop,
read-ahead is bounded in bytes, idle and half-sent connections are closed, the connection
count is capped, and accept failures (out of descriptors) are one throttled line."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import default_registry
from fakebroker.intercept.hooks import Drop
from fakebroker.script.recorder import Recorder
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.protocol.framing import encode_request
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import DEFAULT_MAX_FRAME_BYTES, BrokerConfig

REG = default_registry()
JOIN, SYNC, HB = REG["JoinGroupRequest"], REG["SyncGroupRequest"], REG["HeartbeatRequest"]


def worst_join_frame(max_frame: int) -> bytes:
    """A JoinGroup v5 frame of exactly ``max_frame`` bytes packed with empty protocols
    (6 bytes each: the most array elements a frame of that size can carry)."""
    head = struct.pack(">hhih", 11, 5, 1, 1) + b"x"
    body = (struct.pack(">h", 3) + b"big" + struct.pack(">iih", 10000, 10000, 0)
            + struct.pack(">hh", -1, 7) + b"connect")
    n = (max_frame - len(head) - len(body) - 4) // 6
    frame = head + body + struct.pack(">i", n) + bytes(6 * n)  # within 6 bytes of the limit
    return struct.pack(">i", len(frame)) + frame


async def _member(c: KafkaConnection) -> tuple[str, int]:
    proto = [JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")]
    def join(m: str) -> object:
        return JOIN.new(group_id="hb", session_timeout_ms=30000, rebalance_timeout_ms=30000,
                        member_id=m, protocol_type="connect", protocols=proto)
    member = (await c.send(join(""), 5)).response.member_id
    j = (await c.send(join(member), 5)).response
    await c.send(SYNC.new(group_id="hb", generation_id=j.generation_id, member_id=member,
                          assignments=[]), 3)
    return member, j.generation_id


def test_a_maximal_frame_does_not_stall_a_heartbeating_member() -> None:
    """The whole path of the worst legal frame: decoded and prepared on a thread, answered
    by the coordinator (MEMBER_ID_REQUIRED), freed on a thread (the bench,
    bench/frame_stall.py, measures the same path with frames back to back)."""
    async def go() -> None:
        b = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0), VirtualClock())
        async with b, await KafkaConnection.open(b.bootstrap, timeout_s=60) as c:
            member, gen = await _member(c)
            host, port = b.bootstrap.rsplit(":", 1)
            r, w = await asyncio.open_connection(host, int(port))
            w.write(worst_join_frame(DEFAULT_MAX_FRAME_BYTES))
            answered = asyncio.ensure_future(r.readexactly(4 + 4 + 4 + 2))  # size, id, throttle, error
            started = time.perf_counter()
            lat = []
            hb = HB.new(group_id="hb", generation_id=gen, member_id=member)
            while not answered.done():
                assert time.perf_counter() - started < 120, "the big frame was never answered"
                t = time.perf_counter()
                assert (await c.send(hb, 3)).response.error_code == 0
                lat.append(time.perf_counter() - t)
            took = time.perf_counter() - started
            error = struct.unpack(">h", answered.result()[-2:])[0]
            assert error == ErrorCode.MEMBER_ID_REQUIRED
            w.close()
        lat.sort()
        p99, worst = lat[int(0.99 * (len(lat) - 1))], lat[-1]
        # Decoding ~1.4M elements takes seconds; on the loop it would be one heartbeat's
        # latency. Bounds are generous for a loaded 2-core machine.
        assert took > 0.5, f"the frame was handled in {took:.2f} s: too fast to prove anything"
        assert len(lat) >= 20, f"only {len(lat)} heartbeats in {took:.2f} s"
        assert p99 < 0.25 and worst < max(0.5, took / 3), (p99, worst, took)
    asyncio.run(go())


def test_an_idle_or_half_sent_connection_is_closed_but_a_parked_one_is_not() -> None:
    async def go() -> None:
        clock = VirtualClock()
        cfg = BrokerConfig(idle_timeout_ms=200)
        async with FakeBroker(cfg, CoordinatorConfig(initial_rebalance_delay_ms=3000), clock) as b:
            host, port = b.bootstrap.rsplit(":", 1)
            rec = b.record(Recorder())
            r1, w1 = await asyncio.open_connection(host, int(port))  # sends nothing
            r2, w2 = await asyncio.open_connection(host, int(port))
            w2.write(struct.pack(">i", 100) + b"\x00\x12")  # 2 of 100 bytes
            async with await KafkaConnection.open(b.bootstrap, timeout_s=30) as c:
                proto = [JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")]
                j = JOIN.new(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                             member_id="", protocol_type="connect", protocols=proto)
                member = (await c.send(j, 5)).response.member_id
                j.member_id = member
                parked = c.submit(j, 5)  # parked for the initial delay: not idle
                assert await asyncio.wait_for(r1.read(), 10) == b""  # closed by the broker
                assert await asyncio.wait_for(r2.read(), 10) == b""
                await asyncio.sleep(0.4)  # twice the idle timeout (wall time): still open
                clock.advance(3000)
                assert (await c.wait(parked)).response.error_code == 0
            # Only the two silent connections count: under load the client's own connection can
            # also sit idle for 200 ms of wall time after its last answer, which is correct too.
            talking = {e.conn for e in rec.events if e.kind == "request" and e.error is None}
            reasons = sorted(e.reason or "" for e in rec.events
                             if e.kind == "close" and e.by == "broker" and e.conn not in talking)
            assert reasons == ["idle: a partly sent frame for 200 ms (connections.max.idle.ms)",
                               "idle: nothing for 200 ms (connections.max.idle.ms)"]
    asyncio.run(go())


def test_connections_beyond_the_cap_are_closed_with_one_line_per_power_of_two(
        caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        async with FakeBroker(BrokerConfig(max_connections=2), clock=VirtualClock()) as b:
            host, port = b.bootstrap.rsplit(":", 1)
            kept = [await KafkaConnection.open(b.bootstrap) for _ in range(2)]
            for k in kept:  # both served (the server has registered them)
                assert (await k.send(REG["ApiVersionsRequest"].new(), 0)).response.error_code == 0
            for _ in range(5):
                r, w = await asyncio.open_connection(host, int(port))
                assert await asyncio.wait_for(r.read(), 10) == b""
                w.close()
            assert (await kept[0].send(REG["ApiVersionsRequest"].new(), 0)).response.error_code == 0
            for k in kept:
                await k.close()
    with caplog.at_level(logging.ERROR, logger="fakebroker"):
        asyncio.run(go())
    lines = [r.getMessage() for r in caplog.records if "connection refused" in r.getMessage()]
    assert len(lines) == 3 and "(4 time(s) so far" in lines[-1]  # the 1st, 2nd and 4th of 5


def test_accept_failures_are_one_throttled_line(caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        async with FakeBroker(BrokerConfig(), clock=VirtualClock()):
            loop = asyncio.get_running_loop()
            for _ in range(1000):  # what asyncio reports on each failed accept (EMFILE)
                loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                             "exception": OSError(24, "Too many open files")})
    with caplog.at_level(logging.ERROR):
        asyncio.run(go())
    lines = [r for r in caplog.records if "accept" in r.getMessage()]
    assert len(lines) == 10 and all(not r.exc_info for r in lines)  # 1, 2, 4, ... 512
    assert "Too many open files (errno 24)" in lines[0].getMessage()


def test_read_ahead_is_bounded_in_bytes() -> None:
    """A client pipelining frames behind a parked request gets at most about one maximal
    frame read ahead; the rest stays in the socket (TCP pushes back)."""
    async def go() -> None:
        clock = VirtualClock()
        cfg = BrokerConfig(max_frame_bytes=64 * 1024)
        async with FakeBroker(cfg, CoordinatorConfig(initial_rebalance_delay_ms=3000), clock) as b:
            async with await KafkaConnection.open(b.bootstrap, timeout_s=30) as c:
                proto = [JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")]
                j = JOIN.new(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                             member_id="", protocol_type="connect", protocols=proto)
                j.member_id = (await c.send(j, 5)).response.member_id
                parked = c.submit(j, 5)
                big = REG["ApiVersionsRequest"].new(client_software_name="x" * 30000,
                                                    client_software_version="1")
                behind = [c.submit(big, 3) for _ in range(12)]  # ~360 kB behind the join
                for _ in range(200):
                    await asyncio.sleep(0)
                (conn,) = b._connections.values()
                assert conn.buffered <= cfg.max_frame_bytes + 31000
                clock.advance(3000)
                await c.wait(parked)
                for f in behind:
                    assert (await c.wait(f)).response.error_code == 0
    asyncio.run(go())


def test_serve_record_streams_and_keeps_nothing(tmp_path: Path) -> None:
    from fakebroker.script.serving import start_recording

    async def go() -> None:
        b = FakeBroker(BrokerConfig(), clock=VirtualClock())
        path = start_recording(b, tmp_path / "rec")
        async with b, await KafkaConnection.open(b.bootstrap) as c:
            for _ in range(200):
                await c.send(REG["ApiVersionsRequest"].new(), 0)
            (rec,) = b.recorders
            assert rec.events == [] and rec.requests_seen == 200
            # Streamed as it goes: every exchange is on disk before the run ends.
            assert path.read_text().count("\n") == 1 + 400
    asyncio.run(go())


def test_advertised_host_is_what_metadata_and_find_coordinator_report() -> None:
    async def go() -> None:
        cfg = BrokerConfig(host="127.0.0.1", advertised_host="broker.example")
        async with FakeBroker(cfg, clock=VirtualClock()) as b:
            port = b.bootstrap.rsplit(":", 1)[1]
            assert b.bootstrap == f"broker.example:{port}"
            async with await KafkaConnection.open(f"127.0.0.1:{port}") as c:
                md = (await c.send(REG["MetadataRequest"].new(topics=[]), 9)).response
                assert [(x.host, x.port) for x in md.brokers] == [("broker.example", int(port))]
                fc = (await c.send(REG["FindCoordinatorRequest"].new(key="g"), 3)).response
                assert (fc.host, fc.port) == ("broker.example", int(port))
    asyncio.run(go())


def test_a_client_that_does_not_read_its_answers_stops_being_served() -> None:
    """Back-pressure on the sending side: a client pipelining requests without reading the
    answers gets no more served once the broker's write buffer is full (the rest waits,
    read ahead or in the socket); when it reads, every answer comes, in order."""
    async def go() -> None:
        async with FakeBroker(BrokerConfig(), clock=VirtualClock()) as b:
            host, port = b.bootstrap.rsplit(":", 1)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # no autotuning
            sock.connect((host, int(port)))
            sock.setblocking(False)
            reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
            req = REG["ApiVersionsRequest"].new(client_software_name="x", client_software_version="1")
            count = 20000  # ~9 MB of answers: more than the kernel's socket buffers hold
            for cid in range(count):
                writer.write(encode_request(REG, req, 3, cid, "c", size_prefix=True))
            for _ in range(2000):  # until the broker stops serving (or this bound runs out)
                await asyncio.sleep(0.005)
                (conn,) = b._connections.values()
                if conn.writing_paused and not writer.transport.get_write_buffer_size():
                    break
            assert conn.writing_paused
            served = conn.requests
            await asyncio.sleep(0.2)
            assert conn.requests == served < count  # nothing served while it does not read
            high = conn.transport.get_write_buffer_limits()[1]
            assert conn.transport.get_write_buffer_size() <= high + 1024  # + one answer
            for cid in range(count):
                size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), 10), "big")
                body = await reader.readexactly(size)
                assert struct.unpack(">i", body[:4])[0] == cid
            writer.close()
    asyncio.run(go())
