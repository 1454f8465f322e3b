"""``conformance run`` as a user runs it, from a test: a subprocess tagged so that any
process it leaves behind (a worker, a broker) is found and fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def processes_tagged(tag: str) -> list[int]:
    """Live processes whose environment carries ``tag`` (everything a run started inherits it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if tag.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def run_certification(target_file: Path, reports: Path, *extra: str, suite: str,
                      workers: int | str = 0, timeout_s: float = 1500) -> subprocess.CompletedProcess[str]:
    """``conformance run`` of one suite; afterwards no process it started may be left."""
    name, value = "CONNECT_CONFORMANCE_RUN", uuid.uuid4().hex
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", str(target_file),
                        "--suite", suite, "-n", str(workers), "--reports", str(reports), "--no-html",
                        *extra],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout_s,
                       env={**os.environ, name: value})
    assert processes_tagged(f"{name}={value}") == [], "processes outlived the run (workers or brokers)"
    return r
