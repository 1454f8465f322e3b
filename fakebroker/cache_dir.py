"""Where the project keeps what it can rebuild, outside the repository:
``$CONNECT_CONFORMANCE_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/connect-conformance``
(Kafka's and Connect's jars, the Connect worker's class archive, spec-check verdicts)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def cache_root() -> Path:
    explicit = os.environ.get("CONNECT_CONFORMANCE_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "connect-conformance"


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """One holder at a time of ``directory/.lock`` across processes (pytest-xdist workers
    racing to the first resolve or image build)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
