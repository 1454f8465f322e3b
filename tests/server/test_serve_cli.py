"""`fakebroker serve` run as a user runs it: a separate process on an ephemeral port."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from fakebroker import __version__
from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry

CMD = [sys.executable, "-m", "fakebroker.cli"]


def test_serve_prints_address_writes_ready_file_serves_and_stops(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--ready-file", str(ready),
                             "--topic", "events:6", "--api-max-version", "JoinGroup=5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        host, port = line.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        assert ready.read_text().strip() == line

        async def ask() -> dict[int, int]:
            async with await KafkaConnection.open(line) as c:
                av = await c.send(default_registry()["ApiVersionsRequest"].new(), 3)
                return {k.api_key: k.max_version for k in av.response.api_keys}
        assert asyncio.run(ask())[11] == 5
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "listening on" in err


def test_serve_help_explains_every_option() -> None:
    out = subprocess.run([*CMD, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    for option in ("--host", "--port", "--ready-file", "--topic", "--initial-rebalance-delay-ms",
                   "--min-session-timeout-ms", "--max-session-timeout-ms", "--max-group-size",
                   "--max-frame-bytes", "--api-max-version", "--log-level"):
        assert option in out


def test_serve_refuses_bad_options_with_usage_status() -> None:
    for args in (["--topic", "events"], ["--topic", "events:zero"], ["--api-max-version", "Nope=3"]):
        r = subprocess.run([*CMD, "serve", "--port", "0", *args], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip().startswith("fakebroker serve:")


def test_serve_reports_a_port_in_use() -> None:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([*CMD, "serve", "--port", str(port)], capture_output=True, text=True,
                           timeout=30)
    assert r.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_version() -> None:
    r = subprocess.run([*CMD, "--version"], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == f"fakebroker {__version__}"
