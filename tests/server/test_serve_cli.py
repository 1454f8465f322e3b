"""`fakebroker serve` run as a user runs it: a separate process on an ephemeral port."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from fakebroker import __version__
from fakebroker.exit_codes import EXIT_BROKEN
from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.protocol.framing import encode_request

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
                   "--max-frame-bytes", "--api-max-version", "--log-level", "--tls-cert",
                   "--tls-key", "--sasl-mechanism", "--sasl-users"):
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
    assert r.returncode == EXIT_BROKEN, r.stderr  # could not run: the table's code, not 1 (a finding)
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_version() -> None:
    r = subprocess.run([*CMD, "--version"], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == f"fakebroker (connect-conformance) {__version__}"


def test_serve_with_sasl_advertises_the_sasl_apis_and_refuses_unauthenticated_groups(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("alice=alice-secret\n")
    proc = subprocess.Popen([*CMD, "serve", "--port", "0", "--sasl-mechanism", "SCRAM-SHA-256",
                             "--sasl-mechanism", "PLAIN", "--sasl-users", str(users)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reg = default_registry()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()

        async def talk() -> tuple[dict[int, tuple[int, int]], list[str], int, bool]:
            async with await KafkaConnection.open(line) as c:
                av = await c.send(reg["ApiVersionsRequest"].new(), 3)
                hs = await c.send(reg["SaslHandshakeRequest"].new(mechanism="PLAIN"), 1)
                auth = await c.send(reg["SaslAuthenticateRequest"].new(
                    auth_bytes=b"\x00alice\x00alice-secret"), 2)
                lg = await c.send(reg["ListGroupsRequest"].new(), 4)  # now served
                versions = {k.api_key: (k.min_version, k.max_version) for k in av.response.api_keys}
                return versions, hs.response.mechanisms, auth.response.error_code, lg.response.error_code == 0

        versions, mechanisms, auth_code, listed = asyncio.run(talk())
        assert versions[17] == (1, 1) and versions[36] == (0, 2)
        assert mechanisms == ["SCRAM-SHA-256", "PLAIN"] and auth_code == 0 and listed

        async def unauthenticated() -> bytes:
            host, port = line.rsplit(":", 1)
            r, w = await asyncio.open_connection(host, int(port))
            lg = reg["ListGroupsRequest"].new()
            w.write(encode_request(reg, lg, 4, 7, "x", size_prefix=True))
            return await asyncio.wait_for(r.read(), 20)
        assert asyncio.run(unauthenticated()) == b""  # closed, nothing answered
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert "security protocol SASL_PLAINTEXT" in err
    assert "ListGroups request during the SASL handshake (rule sasl-handshake-first)" in err


def test_serve_refuses_bad_security_options(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("alice\n")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for args, says in ((["--tls-cert", str(junk)], "--tls-cert and --tls-key go together"),
                       (["--tls-cert", str(junk), "--tls-key", str(junk)], "TLS: cannot load certificate"),
                       (["--sasl-mechanism", "PLAIN"], "--sasl-mechanism and --sasl-users go together"),
                       (["--sasl-mechanism", "PLAIN", "--sasl-users", str(users)], "users:1: expected NAME=PASSWORD")):
        r = subprocess.run([*CMD, "serve", "--port", "0", *args], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert says in r.stderr and "Traceback" not in r.stderr
