"""`fakebroker pcap`: a recorded transcript opens in tshark with the Kafka fields decoded,
the streams reassembled and the connections torn down where they closed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.intercept.hooks import Close
from fakebroker.script.recorder import Recorder
from fakebroker.exchange.transcript import load
from fakebroker.server.broker import FakeBroker

from .helpers import REG, api_versions, heartbeat, join, new_broker, run_with, until

CMD = [sys.executable, "-m", "fakebroker.cli"]


def tshark(pcap: Path, *fields: str, display: str = "kafka") -> list[list[str]]:
    exe = shutil.which("tshark")
    if exe is None:
        pytest.fail("tshark is not installed (Debian package tshark; make setup installs it)")
    env = dict(os.environ, WIRESHARK_CONFIG_DIR=str(pcap.parent / "ws-home"))
    args = [exe, "-n", "-r", str(pcap), "-2", "-Y", display, "-T", "fields", "-E", "separator=|"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """Two connections: w1 joins and heartbeats, then closes; w2's JoinGroup makes the
    broker close its connection (a hook). Versions tshark 4.0 dissects (JoinGroup <= 7)."""
    path = tmp_path / "run.jsonl"

    async def go(b: FakeBroker) -> None:
        rec = b.record(Recorder(path))
        async with await KafkaConnection.open(b.bootstrap, client_id="w1") as c:
            await c.send(api_versions(), 2)
            member = (await c.send(join(), 7)).response.member_id
            await c.send(join(member), 7)
            await c.send(heartbeat(member), 4)
        b.hooks.add(lambda call: Close(), api="JoinGroup", name="close-join")
        async with await KafkaConnection.open(b.bootstrap, client_id="w2") as c2:
            lost = c2.submit(join(), 7)
            lost.add_done_callback(lambda f: f.exception())  # its error is expected
            await until(lambda: len(rec.events) == 11, "w2's connection closed by the broker")
    run_with(new_broker(), go)
    return path


@pytest.mark.tshark
def test_pcap_of_a_transcript_dissects_in_tshark(transcript: Path, tmp_path: Path) -> None:
    pcap = tmp_path / "run.pcap"
    r = subprocess.run([*CMD, "pcap", str(transcript), "-o", str(pcap)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "9 frame(s) on 2 connection(s)" in r.stdout
    rows = tshark(pcap, "tcp.stream", "kafka.api_key", "kafka.correlation_id", "kafka.error",
                  "kafka.client_id", "kafka.member_id")
    got = [(s, key, cid, err) for s, key, cid, err, _, _ in rows]
    assert got == [("0", "18", "1", ""), ("0", "18", "1", "0"),
                   ("0", "11", "2", ""), ("0", "11", "2", "79"),
                   ("0", "11", "3", ""), ("0", "11", "3", "0"),
                   ("0", "12", "4", ""), ("0", "12", "4", "0"),
                   ("1", "11", "1", "")]
    assert rows[0][4] == "w1" and rows[8][4] == "w2"
    assert rows[4][5] == "w1-1" and rows[6][5] == "w1-1"  # the rejoin and the heartbeat
    # Every stream: handshake first, FIN/ACKs last; w2's ends with the broker's FIN first.
    flags = tshark(pcap, "tcp.stream", "tcp.flags", "tcp.srcport", display="tcp")
    for stream, first_fin_from_server in (("0", False), ("1", True)):
        mine = [(f, int(p)) for s, f, p in flags if s == stream]
        assert [f for f, _ in mine[:3]] == ["0x0002", "0x0012", "0x0010"]
        assert [f for f, _ in mine[-3:]] == ["0x0011", "0x0011", "0x0010"]
        assert (mine[-3][1] == 9092) is first_fin_from_server
    # (The ApiVersions response lists APIs tshark 4.0 does not know: notes about those are
    # tshark's, not faults of the capture.)
    assert not tshark(pcap, "frame.number", display="_ws.malformed || tcp.analysis.flags")


def test_pcap_refuses_an_invalid_transcript_with_its_line(transcript: Path, tmp_path: Path) -> None:
    lines = transcript.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40] + "\n")  # cut mid-file: refused
    r = subprocess.run([*CMD, "pcap", str(bad), "-o", str(tmp_path / "x.pcap")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith(f"fakebroker pcap: {bad}:6: truncated line")
    assert not (tmp_path / "x.pcap").exists()
    r = subprocess.run([*CMD, "pcap", str(transcript), "-o", str(tmp_path / "y.pcap"),
                        "--server-port", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a TCP port" in r.stderr


def test_serve_record_writes_one_transcript_per_run(tmp_path: Path) -> None:
    import asyncio
    import signal
    out = tmp_path / "records"
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--record", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        addr = proc.stdout.readline().strip()

        async def ask() -> None:
            async with await KafkaConnection.open(addr, client_id="probe") as c:
                await c.send(api_versions(), 3)
        asyncio.run(ask())
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    (path,) = out.iterdir()
    assert f"recording to {path}" in err
    t = load(path, REG)
    assert t.header is not None and t.header["origin"] == "serve" and t.header["clock"] == "real"
    assert t.header["broker"]["port"] == int(addr.rsplit(":", 1)[1])
    assert [(e.kind, e.api) for e in t.events] == [("request", "ApiVersions"),
                                                   ("response", "ApiVersions"), ("close", None)]
    assert t.events[0].client_id == "probe"
