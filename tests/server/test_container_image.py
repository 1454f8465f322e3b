"""The container image definition (Dockerfile) for `fakebroker serve`, checked without a
Docker engine: its instructions parsed, its entrypoint the documented `fakebroker serve`
with the documented defaults, and that exact entrypoint run here as a process a real client
(kafka-python) talks to, reaching the broker at the host it advertises."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, backslash continuations joined."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        word, _, rest = (pending + line).strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    assert not pending, "a continuation runs off the end of the file"
    return out


def parse_env(args: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in args.split())


def test_the_healthcheck_probes_a_serving_broker_and_not_a_silent_port(tmp_path: Path) -> None:
    """The HEALTHCHECK's command: ApiVersions answered is healthy; a port that accepts and
    says nothing, or nothing listening, is not."""
    import socket
    import threading

    from fakebroker.containers.healthcheck import answers
    from fakebroker.server.broker import FakeBroker
    from fakebroker.server.config import BrokerConfig
    from fakebroker.server.thread import BrokerThread
    b = BrokerThread(FakeBroker(BrokerConfig(host="127.0.0.1", port=0))).start()
    try:
        host, port = b.bootstrap.rsplit(":", 1)
        assert answers(host, int(port), tls=False)
    finally:
        b.stop()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True).start()
    try:
        assert not answers("127.0.0.1", silent.getsockname()[1], tls=False, timeout_s=0.5)
    finally:
        silent.close()
        for c in accepted:
            c.close()
    assert not answers("127.0.0.1", port=int(port), tls=False, timeout_s=0.5)


@pytest.fixture(scope="module")
def image() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for word, args in instructions(DOCKERFILE.read_text()):
        found.setdefault(word, []).append(args)
    return found


def test_the_image_is_a_supported_python_running_fakebroker_serve_unprivileged(image) -> None:
    args = dict(a.split("=", 1) for a in image["ARG"] if "=" in a)
    assert image["FROM"] == ["${BASE}"]
    minor = re.fullmatch(r"python:3\.(\d+)-slim", args["BASE"])  # by default; offline: the project's base
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert minor and requires == ">=3.11,<3.14" and 11 <= int(minor[1]) <= 13, args["BASE"]
    assert args["PACKAGE"] == "/src"
    assert any(cmd.startswith("python3 -m venv /opt/fakebroker && /opt/fakebroker/bin/pip install "
                              "--no-cache-dir $PIP_OPTIONS \"$PACKAGE\"") for cmd in image["RUN"])
    assert image["USER"] == ["fakebroker"]
    (health,) = image["HEALTHCHECK"]
    assert health.endswith('CMD ["python3", "-m", "fakebroker.containers.healthcheck"]')
    (entry,) = image["ENTRYPOINT"]
    argv = json.loads(entry)  # the exec form: no shell of Docker's own around it
    assert argv[:2] == ["sh", "-c"] and argv[3] == "fakebroker"
    assert argv[2].startswith("exec fakebroker serve ") and argv[2].endswith(' "$@"')
    assert json.loads(image["CMD"][0]) == []


def test_the_defaults_are_the_documented_ones(image) -> None:
    env: dict[str, str] = {}
    for args in image["ENV"]:
        env.update(parse_env(args))
    assert env["FAKEBROKER_HOST"] == "0.0.0.0" and env["FAKEBROKER_ADVERTISED_HOST"] == "localhost"
    assert image["EXPOSE"] == [env["FAKEBROKER_PORT"]] == ["9092"]
    script = json.loads(image["ENTRYPOINT"][0])[2]
    for option, var in (("--host", "FAKEBROKER_HOST"), ("--port", "FAKEBROKER_PORT"),
                        ("--advertised-host", "FAKEBROKER_ADVERTISED_HOST")):
        assert f'{option} "${var}"' in script
    # Loopback-safe as documented: published on the host's loopback only.
    docs = (ROOT / "docs" / "fake-broker.md").read_text()
    for text in (docs, DOCKERFILE.read_text()):
        assert "-p 127.0.0.1:9092:9092" in text and "FAKEBROKER_ADVERTISED_HOST" in text


def test_the_build_context_keeps_what_the_wheel_needs() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert ".venv" in ignored and ".git" in ignored
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = set(wheel["packages"]) | set(wheel["force-include"]) | {"pyproject.toml", "README.md"}
    for path in needed:
        assert not any(path == i or path.startswith(i + "/") for i in ignored), path


def entrypoint_env(image: dict[str, list[str]], **overrides: str) -> dict[str, str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for args in image["ENV"]:  # as Docker does, $PATH in a value is the PATH so far
        env.update({k: v.replace("$PATH", env["PATH"]) for k, v in parse_env(args).items()})
    env.update(overrides)
    return env


def test_the_entrypoint_run_directly_serves_a_real_client_at_the_advertised_host(image, tmp_path: Path) -> None:
    """The image's own entrypoint and environment; only the bind is this machine's loopback
    and an ephemeral port (a test must not listen on every interface nor on a fixed port)."""
    argv = json.loads(image["ENTRYPOINT"][0]) + ["--topic", "events:3", "--ready-file", str(tmp_path / "ready")]
    proc = subprocess.Popen(argv, env=entrypoint_env(image, FAKEBROKER_HOST="127.0.0.1", FAKEBROKER_PORT="0"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        host, port = line.rsplit(":", 1)
        assert host == "localhost", line + proc.stderr.read() if proc.poll() is not None else line

        async def coordinator() -> tuple[str, int]:
            async with await KafkaConnection.open(f"127.0.0.1:{port}") as c:
                req = default_registry()["FindCoordinatorRequest"].new(key="g", key_type=0)
                r = (await c.send(req, 3)).response
                return r.host, r.port
        assert asyncio.run(coordinator()) == ("localhost", int(port))

        from kafka import KafkaConsumer  # a real client: bootstraps by address, then uses the advertised name
        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}",
                                 request_timeout_ms=15000)
        try:
            assert consumer.partitions_for_topic("events") == {0, 1, 2}
            assert {(b.host, b.port) for b in consumer._client.cluster.brokers()} == {("localhost", int(port))}
        finally:
            consumer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert f"listening on 127.0.0.1:{port} (advertised as localhost)" in err
