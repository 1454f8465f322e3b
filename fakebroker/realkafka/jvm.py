"""What the real Kafka broker (``launcher``) and the Connect worker (``fakebroker.realconnect``)
share about their JVM: the base of their log4j2 configuration, a start in a process group
of its own (killed by the kernel with this process when started from the main thread,
``setpriv --pdeathsig KILL``), and a stop of that whole group (SIGTERM, SIGKILL)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

#: log4j2.properties up to the root logger: the console at INFO; each JVM appends its loggers.
LOG4J2_BASE = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
"""


def log_tail(path: Path | None, lines: int = 40) -> str:
    """The last ``lines`` lines of a JVM's log file (read from its last 200 kB: a JVM logs a
    lot), or "(no log)" (none, or not a regular file: a worker logging to a terminal)."""
    if path is None or not path.is_file():
        return "(no log)"
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 200_000))
            text = fh.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def spawn_in_group(cmd: list[str], log_path: Path, *, cwd: Path | None = None,
                   env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``cmd`` in a new session (its own process group), output appended to ``log_path``."""
    pdeath = shutil.which("setpriv")
    if pdeath and threading.current_thread() is threading.main_thread():
        # The kernel kills the JVM if this (main) thread's process dies unannounced.
        cmd = [pdeath, "--pdeathsig", "KILL", "--", *cmd]
    with open(log_path, "ab") as log:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, cwd=cwd, env=env,
                                stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group(proc: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """SIGTERM the group, wait, SIGKILL; returns the exit code (None if it would not die)."""
    if proc.poll() is None:
        kill_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            pass
    kill_group(proc.pid, signal.SIGKILL)  # also anything the JVM started
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        return None
