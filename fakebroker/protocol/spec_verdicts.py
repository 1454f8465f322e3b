"""Spec sets that passed the strict check, remembered between processes.

Every fake broker, worker process and test process loads the ~70 bundled specs; checking
them (``spec_check``: JSON Schema, then the semantic rules) cost each process ~0.25 s of CPU,
more than building them. A directory whose spec files all passed is remembered under a
digest of their names and bytes and of the checker itself (its source, its JSON Schema,
jsonschema's version, Python's); a later load of the very same bytes by the very same
checker builds them unchecked. Anything else (one changed byte, a changed rule, a new file)
is checked as before, and a set with an error is never remembered. Verdicts are empty
files under ``<cache>/spec-verdicts`` (``fakebroker.cache_dir``); where that cannot be
written, every load checks.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from ..cache_dir import cache_root

CHECKER = Path(__file__).with_name("spec_check")  # the checker package: every module of it


def _checker_identity() -> bytes:
    from .spec_check import SCHEMA_PATH

    try:
        engine = metadata.version("jsonschema")
    except metadata.PackageNotFoundError:
        engine = "none"
    sources = [p.read_bytes() for p in sorted(CHECKER.glob("*.py"))]
    return b"\0".join([*sources, SCHEMA_PATH.read_bytes(), engine.encode(),
                       f"{sys.version_info[0]}.{sys.version_info[1]}".encode()])


def verdict_key(files: Sequence[tuple[str, bytes]]) -> str:
    """The digest of a set of spec files (name relative to its directory, bytes), in the
    given order, checked by this checker."""
    h = hashlib.sha256(_checker_identity())
    for name, raw in files:
        h.update(b"\0%d\0%s\0" % (len(raw), name.encode()))
        h.update(raw)
    return h.hexdigest()[:32]


def _path(key: str) -> Path:
    return cache_root() / "spec-verdicts" / key


def passed(key: str) -> bool:
    return _path(key).is_file()


def remember(key: str) -> None:
    try:
        p = _path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch()
    except OSError:  # a read-only cache: the next process checks again
        pass
