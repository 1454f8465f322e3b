"""A target that never answers still leaves evidence: every request is in the case's
transcript when it is sent (marked unanswered) and in the pcap made from it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.catalogue import default_catalogue
from conformance.harness.outcomes import Outcome
from conformance.harness.runner import run_case
from conformance.harness.sessions import CoordinatorSession
from conformance.target import load_target


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
    assert result.transcript, "the request sent must be in the transcript"
    first = result.transcript[0]
    assert first["api"] == "JoinGroup" and first["answered"] is False and first["response"] is None
    assert first["requestHex"] and first["sentWall"] > 0
    requests = [f for f in result.frames if f[1] == "request"]
    assert requests and not [f for f in result.frames if f[1] == "response"]
    assert requests[0][2].hex() == first["requestHex"]  # the bytes that went out

    from fakebroker.script.pcap import Exchange, pcap_bytes
    pcap = pcap_bytes([Exchange(*f) for f in result.frames], 9092)
    assert bytes.fromhex(first["requestHex"]) in pcap


def test_an_answered_request_gets_its_response_in_place() -> None:
    from conformance.harness.transcript import Transcript
    t = Transcript()
    e = t.sent("m1", "Heartbeat", 12, 4, 7, {"groupId": "g"}, b"\x00\x01", 10.0)
    assert t.unanswered == [e]
    t.answered(e, {"errorCode": 0}, b"\x00\x02", 10.5)
    assert t.unanswered == [] and t.entries == [e]
    assert (e["response"], e["responseHex"], e["receivedWall"]) == ({"errorCode": 0}, "0002", 10.5)
    assert [(f.direction, f.time) for f in t.frames] == [("request", 10.0), ("response", 10.5)]
