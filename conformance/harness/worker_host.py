"""A target's worker host (``[start] host_command``): one process per test process, started
before its first case and stopped after its last, in which the workers of the target's
command run (the command names it by ``{worker_host}``: a Unix socket path picked here, on
which the host listens). For a JVM worker most of whose start is the JVM warming up, e.g.
``python -m fakebroker.realconnect host`` (fakebroker.realconnect.host)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fakebroker.realconnect.host import HostFailed, wait_listening
from fakebroker.realkafka.jvm import log_tail, spawn_in_group, stop_group

from .command import base_dir, child_env
from .target import Target

# Generous: a host whose JVM writes its class archive as it stops takes a while under load.
HOST_STOP_TIMEOUT_S = 120.0


@dataclass
class WorkerHostProcess:
    command: str
    socket_path: str
    proc: subprocess.Popen[bytes]
    directory: Path  # the socket and the host's log

    @property
    def log_path(self) -> Path:
        return self.directory / "host.log"

    def log_tail(self, n: int = 25) -> str:
        return log_tail(self.log_path, n)

    def stop(self, timeout_s: float = HOST_STOP_TIMEOUT_S) -> None:
        """SIGTERM (the host stops the workers it still runs), SIGKILL after ``timeout_s``."""
        stop_group(self.proc, timeout_s)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_worker_host(target: Target) -> WorkerHostProcess:
    """The target's host, listening, within its start-up bound; a failure says why with its output."""
    directory = Path(tempfile.mkdtemp(prefix="conformance-host-"))
    socket_path = str(directory / "host.sock")
    command = target.render_host_command(worker_host=socket_path, python=shlex.quote(sys.executable))
    try:
        # Its own process group, killed with this process (the kernel's parent-death signal).
        proc = spawn_in_group(shlex.split(command), directory / "host.log", cwd=base_dir(target), env=child_env())
    except OSError as e:
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"cannot start the worker host with {command!r}: {e}") from None
    host = WorkerHostProcess(command, socket_path, proc, directory)
    try:
        wait_listening(proc, socket_path, target.timing.startup_timeout_s * target.timing.wait_scale)
    except HostFailed as e:
        tail = host.log_tail()
        host.stop()
        raise RuntimeError(f"the worker host {command!r} {e}:\n{tail}") from None
    return host
