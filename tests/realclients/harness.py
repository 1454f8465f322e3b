"""Group members as real client processes, and waiting on what they report."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

MEMBER = Path(__file__).with_name("member.py")
# Real clients run on real time; every wait is bounded so a broken broker fails, not hangs.
WAIT_S = 60.0


class Member:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, name: str,
                 strategies: str = "range", session_timeout_ms: int = 6000,
                 group_protocol: str = "classic", remote_assignor: str | None = None,
                 instance_id: str | None = None, debug: str | None = None) -> None:
        self.name = name
        extra = ["--group-protocol", group_protocol]
        if remote_assignor is not None:
            extra += ["--remote-assignor", remote_assignor]
        if instance_id is not None:
            extra += ["--instance-id", instance_id]
        if debug is not None:
            extra += ["--debug", debug]
        self.proc = subprocess.Popen(
            [sys.executable, str(MEMBER), client, "--bootstrap", bootstrap, "--group", group,
             "--topic", topic, "--name", name, "--strategies", strategies,
             "--session-timeout-ms", str(session_timeout_ms), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.assignment: list[tuple[str, int]] | None = None
        self._lines: queue.Queue[str] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def refresh(self) -> None:
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            self.assignment = [tuple(x) for x in json.loads(line)["assignment"]]  # type: ignore[misc]

    def close(self) -> None:
        """Leave the group cleanly (the client sends LeaveGroup) and wait for the exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        self.proc.wait(WAIT_S)

    def freeze(self) -> None:
        """Stop the process: it can no longer heartbeat."""
        self.proc.send_signal(signal.SIGSTOP)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(WAIT_S)

    def log_tail(self) -> str:
        return "".join(self._stderr[-30:])


def wait_until(members: Iterable[Member], ok: Callable[[list[Member]], bool], what: str,
               timeout: float = WAIT_S) -> None:
    members = list(members)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.refresh()
            if m.proc.poll() is not None:
                raise AssertionError(f"member {m.name} exited ({m.proc.returncode}):\n{m.log_tail()}")
        if ok(members):
            return
        time.sleep(0.05)  # polling real processes; the assertion is the predicate, not the time
    state = {m.name: m.assignment for m in members}
    tails = "\n".join(f"--- {m.name}\n{m.log_tail()}" for m in members)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; assignments: {state}\n{tails}")


def partitions_split(topic: str, count: int) -> Callable[[list[Member]], bool]:
    """Every partition assigned, exactly once, and every member holds at least one."""
    want = sorted((topic, p) for p in range(count))

    def ok(members: list[Member]) -> bool:
        held = [tp for m in members for tp in (m.assignment or [])]
        return sorted(held) == want and all(m.assignment for m in members)

    return ok
