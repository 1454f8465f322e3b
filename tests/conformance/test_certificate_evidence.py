"""A target that never answers still leaves evidence: every request is in the case's
transcript (the one format, fakebroker.exchange.transcript) when it is sent, and in the pcap
made from it."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakebroker.protocol import default_registry
from fakebroker.protocol.framing import encode_response
from fakebroker.script.export import exchanges
from fakebroker.script.pcap import pcap_bytes
from fakebroker.script.recorder import Recorder
from fakebroker.exchange.transcript import parse_lines
from fakebroker.script.recorded import RecordedConnection

from conformance.catalogue.requirements import default_catalogue
from conformance import suites
from conformance.harness.cases import load_cases
from conformance.harness.outcomes import Outcome
from conformance.harness.runner import run_case
from conformance.harness.sessions import CoordinatorSession
from conformance.harness.target import load_target

load_cases(suites)  # run_case finds each live case in the registry the suites fill


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and reads everything; answers nothing."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except TimeoutError:
                for c in conns:
                    try:
                        c.setblocking(False)
                        c.recv(65536)
                    except (BlockingIOError, OSError):
                        pass
                continue
            conns.append(c)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    for c in conns:
        c.close()
    srv.close()


def test_an_unanswered_request_is_in_the_transcript_and_the_pcap(silent_server: int, tmp_path: Path) -> None:
    path = tmp_path / "silent.toml"
    path.write_text(f'name = "silent"\nkind = "coordinator"\nprotocols = ["classic"]\n'
                    f'[start]\nbootstrap = "127.0.0.1:{silent_server}"\n[timing]\nwait_scale = 0.1\n')
    target = load_target(path)
    result = run_case(default_catalogue()["CLS-JOIN-01"], CoordinatorSession.start(target))
    assert result.outcome in (Outcome.FAIL, Outcome.BROKEN), (result.outcome, result.message)
    assert "no response" in result.message
    t = result.transcript
    assert t is not None and t.requests(), "the request sent must be in the transcript"
    first = t.requests()[0]
    assert first.api == "ApiVersions" and t.response_to(first) is None  # every connection negotiates first
    assert first.raw and first.time is not None and first.time > 0
    assert not [e for e in t.events if e.kind == "response"]
    assert t.header is not None and t.header["broker"]["port"] == silent_server

    # The one format: the transcript reads back as a valid file (a close of its own).
    reread = parse_lines([line + "\n" for line in t.lines()], default_registry())
    assert [e.to_json() for e in reread.events] == [e.to_json() for e in t.events]
    assert [e.by for e in t.events if e.kind == "close"] == ["client"] * len({e.conn for e in t.requests()})

    pcap = pcap_bytes(exchanges(t, default_registry()), silent_server)
    assert first.raw in pcap  # the bytes that went out


def test_an_answered_request_gets_its_response_and_a_dead_connection_a_close() -> None:
    """A recorded connection puts the request in the transcript when sent, its response when
    it arrives, and the peer closing the connection as a close by the broker."""
    asyncio.run(_answered_then_closed())


async def _answered_then_closed() -> None:
    registry = default_registry()
    answered = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = int.from_bytes(await reader.readexactly(4), "big")
        frame = await reader.readexactly(size)
        body = registry["HeartbeatResponse"].new(error_code=0)
        writer.write(encode_response(registry, body, 4, int.from_bytes(frame[4:8], "big"),
                                     size_prefix=True))
        await writer.drain()
        await answered.wait()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    rec = Recorder(origin="record")
    conn = RecordedConnection("127.0.0.1", port, name="m1", recorder=rec, now_ms=lambda: 42,
                              client_id="m1")
    await conn.connect()
    req = registry["HeartbeatRequest"].new(group_id="g", generation_id=1, member_id="m")
    fut = conn.submit(req, 4)
    assert [e.kind for e in rec.events] == ["request"]  # recorded before any answer
    ex = await conn.wait(fut)
    answered.set()
    for _ in range(100):
        if rec.events[-1].kind == "close":
            break
        await asyncio.sleep(0.01)
    server.close()
    assert [(e.kind, e.conn, e.vtime_ms) for e in rec.events] == [
        ("request", "m1", 42), ("response", "m1", 42), ("close", "m1", 42)]
    request, response, close = rec.events
    assert (request.raw, response.raw) == (ex.request_frame, ex.response_frame)
    assert response.body == {"ThrottleTimeMs": 0, "ErrorCode": 0}
    assert close.by == "broker" and "closed by" in (close.reason or "")
    await conn.close()
    assert len(rec.events) == 3, "the client's close after the broker's is not a second close"


def test_a_replayed_golden_leaves_the_targets_answers_in_the_transcript_and_pcap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A requirement judged by its golden alone, on an external coordinator: what the
    coordinator answered is the case's transcript (header with its port) and pcap."""
    import conformance.harness.golden
    from fakebroker.coordinator.config import CoordinatorConfig
    from fakebroker.server.broker import FakeBroker
    from fakebroker.server.config import BrokerConfig, Topic
    from fakebroker.server.thread import BrokerThread
    topic = Topic("events", 3)
    bt = BrokerThread(FakeBroker(BrokerConfig(topics=[topic]), CoordinatorConfig(initial_rebalance_delay_ms=0),
                                 strict_topics=True)).start()
    # The broker has the golden's topic (it serves no CreateTopics): known, as if created.
    monkeypatch.setitem(conformance.harness.golden._TOPICS, bt.bootstrap, {"events": topic.topic_id})
    try:
        path = tmp_path / "external.toml"
        path.write_text(f'name = "external"\nkind = "coordinator"\nprotocols = ["classic"]\n'
                        f'[start]\nbootstrap = "{bt.bootstrap}"\n[timing]\ninitial_rebalance_delay_ms = 0\n')
        req = default_catalogue()["CLS-DESC-01"]
        result = run_case(req, CoordinatorSession.start(load_target(path)))
    finally:
        bt.stop()
    assert result.outcome is Outcome.PASS, result.message
    t = result.transcript
    assert t is not None and t.header is not None
    assert t.header["broker"]["port"] == int(bt.bootstrap.rpartition(":")[2])
    answers = [e for e in t.events if e.kind == "response" and e.api == "DescribeGroups"]
    assert answers and all(str(e.conn).startswith("CLS-DESC-01/") for e in answers)
    assert answers[0].body["Groups"][0]["ErrorCode"] == 69 and answers[0].raw
    assert pcap_bytes(exchanges(t, default_registry()), t.header["broker"]["port"])
