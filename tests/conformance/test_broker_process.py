"""A coordinator target's own broker (``[start] command``, conformance.harness.broker_process):
each way of learning its address, a broker that does not start reported with its command
and what it printed, and one that crashed started again. The "brokers" are
real processes (small Python programs) that listen, write a file or print a line."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.harness.broker_process import BrokerStartError, accepts, ready_pattern, start_broker
from conformance.harness.target import Target, load_target

# A broker that listens on 127.0.0.1 at the port it is given (its last argument, 0: any),
# (no brackets: [...] marks an optional part of a command template), then announces it as told: "print" prints
# "serving on HOST:PORT", "file=PATH" writes it, "none" says nothing (the harness gave it the port).
LISTENER = ("{python} -c 'import socket, sys, time; s = socket.socket(); "
            "s.bind((\"127.0.0.1\", int(sys.argv.pop()))); s.listen(); a = \"%s:%d\" % s.getsockname(); "
            "how = sys.argv.pop(); print(\"serving on \" + a, flush=True) if how == \"print\" else "
            "open(how.removeprefix(\"file=\"), \"w\").write(a) if how.startswith(\"file=\") else None; "
            "time.sleep(300)' ")


def target(tmp_path: Path, command: str, ready_line: str | None = None, startup_timeout_s: float = 20.0) -> Target:
    text = ('name = "b"\nkind = "coordinator"\nprotocols = ["classic"]\n[start]\n'
            f"command = {json.dumps(command)}\n" + (f"ready_line = {json.dumps(ready_line)}\n" if ready_line else ""))
    p = tmp_path / "b.toml"
    p.write_text(text)
    t = load_target(p)
    return replace(t, timing=replace(t.timing, startup_timeout_s=startup_timeout_s))


@pytest.mark.parametrize("command, ready_line", [
    (LISTENER + "none {port}", None),
    (LISTENER + "file={ready_file} 0", None),
    (LISTENER + "print 0", "serving on {bootstrap}"),
], ids=["port", "ready_file", "ready_line"])
def test_each_way_gives_the_address_the_broker_serves_on(tmp_path: Path, command: str, ready_line: str | None) -> None:
    broker = start_broker(target(tmp_path, command, ready_line))
    try:
        assert broker.bootstrap.startswith("127.0.0.1:") and accepts(broker.bootstrap)
        assert broker.proc.poll() is None
    finally:
        broker.stop()
    assert broker.proc.poll() is not None and not broker.directory.exists()
    assert not accepts(broker.bootstrap)


def test_the_ready_line_may_stand_among_other_output() -> None:
    m = ready_pattern("READY {bootstrap}").search("[12:00:01] READY 127.0.0.1:4242 (1 broker)")
    assert m is not None and m.group(1) == "127.0.0.1:4242"
    assert ready_pattern("READY {bootstrap}").search("READY soon") is None


def test_a_broker_that_exits_first_names_its_command_and_output(tmp_path: Path) -> None:
    t = target(tmp_path, "{python} -c 'import sys; print(\"bind: address in use\"); sys.exit(5)' {port}")
    with pytest.raises(BrokerStartError, match=r"(?s)the coordinator command .* exited \(5\) before it served; "
                                               r"it printed:\n.*bind: address in use"):
        start_broker(t)


def test_a_silent_broker_is_given_up_within_its_bound(tmp_path: Path) -> None:
    t = target(tmp_path, "{python} -c 'import time; print(\"warming up\", flush=True); time.sleep(300)'",
               ready_line="READY {bootstrap}", startup_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(BrokerStartError, match=r"(?s)did not print a line like 'READY \{bootstrap\}' within 1s; "
                                               r"it printed:\n.*warming up"):
        start_broker(t)
    assert time.monotonic() - started < 20


def test_a_missing_program_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError, match=r"^cannot start the coordinator with 'no-such-broker-program "):
        start_broker(target(tmp_path, "no-such-broker-program -p {port}"))


def test_port_placeholder_is_a_free_loopback_port(tmp_path: Path) -> None:
    t = target(tmp_path, LISTENER + "none {port}")
    broker = start_broker(t)
    try:
        host, _, port = broker.bootstrap.rpartition(":")
        assert host == "127.0.0.1" and f" {port}" in broker.command
        with pytest.raises(OSError):  # it is the broker's now
            socket.create_server(("127.0.0.1", int(port)))
    finally:
        broker.stop()


def test_a_broker_that_died_is_started_again_before_the_next_case(tmp_path: Path) -> None:
    """A crash on one case must not decide every later case: the process's own broker (here
    kfake, as .ci/setup.sh builds it) is started again, and the next case is told."""
    from conformance.harness.sessions import CoordinatorSession
    from conformance.harness.command import find_program
    assert find_program("kfake-broker"), "kfake-broker not built: run .ci/setup.sh"
    session = CoordinatorSession.start(target(tmp_path, "kfake-broker -port {port}"))
    try:
        assert session.revive() is None  # alive: nothing to do
        first = session.bootstrap
        session.process.proc.kill()
        session.process.proc.wait(10)
        note = session.revive()
        assert note is not None and note.startswith("the coordinator's process had exited (-9)")
        assert session.bootstrap in note and accepts(session.bootstrap) and not accepts(first)
    finally:
        session.stop()
    assert session.process.proc.poll() is not None
