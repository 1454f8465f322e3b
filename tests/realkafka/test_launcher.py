"""The local-process backend with a real JVM: it starts, answers and stops; each failure
(port clash, never ready, early death, bad configuration, a dying test process) names its
cause and leaves no Java process of ours behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.realkafka import (BrokerFailed, BrokerNotReady, JavaMissing, KafkaSettings,
                                  LocalKafka, PortInUse, RealKafka, our_java_processes)
from fakebroker.realkafka import launcher

pytestmark = pytest.mark.realkafka
REG = default_registry()


def leftovers(workdir: Path | str | None) -> list[int]:
    """Live JVMs of ours started in ``workdir``."""
    return [pid for pid, wd in our_java_processes() if workdir is not None and wd == str(workdir)]


def wait_gone(workdir: Path | str, timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = leftovers(workdir)
        if not left:
            return []
        time.sleep(0.1)
    return leftovers(workdir)


@pytest.fixture
def listening() -> Iterator[int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    yield s.getsockname()[1]
    s.close()


def test_real_kafka_fixture_answers(real_kafka: RealKafka) -> None:
    async def go() -> None:
        async with await KafkaConnection.open(real_kafka.bootstrap) as c:
            av = (await c.send(REG["ApiVersionsRequest"].new(
                client_software_name="t", client_software_version="1"), 3)).response
            keys = {k.api_key: k.max_version for k in av.api_keys}
            assert av.error_code == 0 and keys[11] >= 9 and keys[14] >= 5  # JoinGroup, SyncGroup
            lg = (await c.send(REG["ListGroupsRequest"].new(states_filter=[], types_filter=[]), 5)).response
            assert lg.error_code == 0
    asyncio.run(go())
    assert real_kafka.version == "4.2.0"


def test_port_clash_on_a_chosen_port_starts_nothing(listening: int) -> None:
    k = LocalKafka(KafkaSettings(port=listening))
    t0 = time.monotonic()
    with pytest.raises(PortInUse) as e:
        k.start()
    assert time.monotonic() - t0 < 5
    assert f"127.0.0.1:{listening} is already in use" in str(e.value)
    assert "0 for a free one" in str(e.value)
    assert k.proc is None


def test_port_clash_found_by_kafka_itself(listening: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone takes the port between our check and Kafka's bind: Kafka fails to bind, the
    message says so, nothing is left running."""
    monkeypatch.setattr(launcher, "check_port_free", lambda *a, **k: None)
    k = LocalKafka(KafkaSettings(port=listening, ready_timeout_s=60))
    with pytest.raises(PortInUse) as e:
        k.start()
    assert "address already in use" in str(e.value)
    assert wait_gone(k.workdir or "") == []
    k.stop()


def test_never_ready_is_bounded_and_cleans_up() -> None:
    k = LocalKafka(KafkaSettings(ready_timeout_s=0.3))
    t0 = time.monotonic()
    with pytest.raises(BrokerNotReady) as e:
        k.start()
    msg = str(e.value)
    assert "did not become ready" in msg and "ready_timeout_s" in msg and "kafka.log" in msg
    assert time.monotonic() - t0 < 40
    assert k.workdir is not None and leftovers(k.workdir) == []  # stopped before raising
    k.stop()
    assert k.workdir is None


def test_broker_dying_during_start_is_reported(tmp_path: Path) -> None:
    """The JVM is killed from outside while it is awaited: the start fails at once with the
    exit code and the log's last lines."""
    k = LocalKafka(KafkaSettings(ready_timeout_s=90), workdir=tmp_path / "wd")
    killer_done = threading.Event()

    def killer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pids = leftovers(tmp_path / "wd")
            if pids and k.proc is not None:  # the broker, not the format step
                os.kill(pids[0], signal.SIGKILL)
                break
            time.sleep(0.05)
        killer_done.set()

    threading.Thread(target=killer, daemon=True).start()
    with pytest.raises(BrokerFailed) as e:
        k.start()
    killer_done.wait(10)
    assert "exited before it was ready" in str(e.value) and "code -9" in str(e.value)
    assert leftovers(tmp_path / "wd") == []
    k.stop()


def test_bad_configuration_fails_the_format_step() -> None:
    k = LocalKafka(KafkaSettings(properties={"node.id": "not-a-number"}))
    with pytest.raises(BrokerFailed, match="formatting the broker's storage failed"):
        k.start()
    assert leftovers(k.workdir) == []
    k.stop()


def test_missing_java_before_anything_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("REAL_KAFKA_JAVA", raising=False)
    with pytest.raises(JavaMissing):
        LocalKafka().start()


CHILD = textwrap.dedent("""
    import sys, time
    from fakebroker.realkafka import LocalKafka, KafkaSettings
    k = LocalKafka(KafkaSettings()).start()
    print(k.workdir, flush=True)
    if sys.argv[1] == "raise":
        raise SystemExit("a failing test run, no stop()")
    time.sleep(600)
""")


@pytest.mark.parametrize("how", ["sigkill", "raise"])
def test_no_orphan_when_the_test_process_dies(how: str) -> None:
    """A test process that exits without stopping its broker (an exception: atexit) or is
    killed outright (SIGKILL: the kernel's parent-death signal) leaves no JVM behind."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, how], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    workdir = ""
    try:
        assert child.stdout is not None
        workdir = child.stdout.readline().strip()
        assert workdir, child.stderr.read() if child.stderr else ""
        if how == "sigkill":
            assert leftovers(workdir), "the broker should run while its parent lives"
            child.kill()
        child.wait(60)
        assert wait_gone(workdir) == [], f"orphaned JVM of {workdir}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for pid in leftovers(workdir):
            os.killpg(pid, signal.SIGKILL)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def test_stop_is_clean_and_idempotent() -> None:
    k = LocalKafka(KafkaSettings())
    k.start()
    wd = k.workdir
    assert leftovers(wd)
    t0 = time.monotonic()
    k.stop()
    assert time.monotonic() - t0 < KafkaSettings().stop_timeout_s
    assert leftovers(wd) == [] and not Path(str(wd)).exists()
    k.stop()


def test_fixture_is_exported_to_users(real_kafka: RealKafka, tmp_path: Path) -> None:
    """A user's test file gets ``real_kafka`` from the installed plugin (pointed here at the
    session's broker with REAL_KAFKA_BOOTSTRAP, so no second JVM starts)."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.realkafka
        def test_uses_it(real_kafka):
            assert real_kafka.backend == "external"
            assert real_kafka.bootstrap.startswith("127.0.0.1:")
    """))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                          "-o", "markers=realkafka: x", str(tmp_path / "test_user.py")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "REAL_KAFKA_BOOTSTRAP": real_kafka.bootstrap,
                              "REAL_KAFKA_BACKEND": "auto"})  # a user's default, not the suite's pin
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 passed" in res.stdout


def test_a_non_empty_directory_is_never_reused(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(Exception, match="is not empty"):
        LocalKafka(workdir=tmp_path).start()
    assert (tmp_path / "precious.txt").read_text() == "keep me"
