"""A coordinator target's own broker (``[start] command``): one per test process, started
before its first case, started again after a crash (``CoordinatorSession.revive``), stopped
after its last case.

The command tells the harness where it listens in one of three ways (rule
broker-address-known): it listens on the ``{port}`` the harness picked (a free 127.0.0.1
port; ready once it accepts a connection), it writes ``host:port`` to the ``{ready_file}``
the harness names, or it prints its ``ready_line`` (``"READY {bootstrap}"``). Each is waited
for within the target's start-up bound; a broker that exits or stays silent is reported with
its command and the last lines it printed.

Not shared by the test processes of a run, as the real Kafka is (``shared_kafka``): these
brokers start in well under a second, and a broker written by others may crash on a case
(librdkafka's mock aborts on some requests); shared, one crash would cascade into the cases
every process runs next, and only its owner can start it again.
"""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fakebroker.realkafka.jvm import log_tail, spawn_in_group, stop_group

from .command import base_dir, child_env, find_program
from .target import Target

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 15.0
ADDRESS = re.compile(r"^[^\s:]+:[0-9]{1,5}$")


class BrokerStartError(RuntimeError):
    """The target's broker did not start; the message names the command and what it printed."""


@dataclass
class BrokerProcess:
    command: str
    bootstrap: str
    proc: subprocess.Popen[bytes]
    directory: Path  # its log (stdout and stderr) and ready file

    def stop(self) -> None:
        """SIGTERM its process group, SIGKILL after ``STOP_TIMEOUT_S``."""
        stop_group(self.proc, STOP_TIMEOUT_S)
        shutil.rmtree(self.directory, ignore_errors=True)


def ready_pattern(ready_line: str) -> re.Pattern[str]:
    """The target's ready_line as a pattern whose one group is the address."""
    before, _, after = ready_line.partition("{bootstrap}")
    return re.compile(re.escape(before) + r"(\S+:[0-9]{1,5})" + re.escape(after))


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def accepts(bootstrap: str) -> bool:
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def start_broker(target: Target) -> BrokerProcess:
    """The target's broker, serving, within ``startup_timeout_s`` (times ``wait_scale``)."""
    directory = Path(tempfile.mkdtemp(prefix="conformance-broker-"))
    log, ready_file = directory / "broker.log", directory / "ready"
    port = free_port() if target.takes("port") else 0
    command = target.render_broker_command(port=port, ready_file=shlex.quote(str(ready_file)),
                                           python=shlex.quote(sys.executable))
    argv = shlex.split(command)
    program = find_program(argv[0])
    if program is None:
        shutil.rmtree(directory, ignore_errors=True)
        raise BrokerStartError(f"cannot start the coordinator with {command!r}: {argv[0]} is neither in "
                               f"{Path(sys.executable).parent} nor on PATH (.ci/setup.sh builds the bundled ones)")
    try:
        # In the target file's folder, as a worker's command runs (conformance.harness.command).
        proc = spawn_in_group([program, *argv[1:]], log, cwd=base_dir(target), env=child_env())
    except OSError as e:
        shutil.rmtree(directory, ignore_errors=True)
        raise BrokerStartError(f"cannot start the coordinator with {command!r}: {e}") from None
    bound = target.timing.startup_timeout_s * target.timing.wait_scale
    try:
        bootstrap = _wait_ready(target, proc, port, ready_file, log, bound)
    except BrokerStartError as e:
        stop_group(proc, STOP_TIMEOUT_S)
        tail = log_tail(log, 20)
        shutil.rmtree(directory, ignore_errors=True)
        raise BrokerStartError(f"the coordinator command {command!r} {e}; it printed:\n{tail}") from None
    return BrokerProcess(command, bootstrap, proc, directory)


def _wait_ready(target: Target, proc: subprocess.Popen[bytes], port: int, ready_file: Path, log: Path,
                bound: float) -> str:
    pattern = ready_pattern(target.ready_line) if target.ready_line else None
    deadline = time.monotonic() + bound
    while True:
        found = _address(pattern, port, ready_file, log)
        if found is not None:
            return found
        if proc.poll() is not None:
            raise BrokerStartError(f"exited ({proc.returncode}) before it served")
        if time.monotonic() > deadline:
            how = ("wrote no host:port to {ready_file}" if target.takes("ready_file")
                   else f"did not print a line like {target.ready_line!r}" if pattern
                   else f"did not accept connections on {HOST}:{port}")
            raise BrokerStartError(f"{how} within {bound:.0f}s")
        time.sleep(0.05)  # a process starting on real time; the bound is the deadline


def _address(pattern: re.Pattern[str] | None, port: int, ready_file: Path, log: Path) -> str | None:
    """Where the broker serves, once it says so (or, given a port, once it accepts)."""
    if port:
        bootstrap = f"{HOST}:{port}"
        return bootstrap if accepts(bootstrap) else None
    if pattern is not None:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        m = next((m for m in map(pattern.search, text.splitlines()) if m), None)
        return m.group(1) if m else None
    try:
        text = ready_file.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text if ADDRESS.match(text) else None  # a half-written file: read it again
