"""``results.json``: one run's outcomes, its scope left out and its times, checked against
``schemas/results.schema.json`` by the writer (the plugin) and by every reader.

Readers get one shape whatever the format version: ``started``/``finished`` as epoch
seconds (the first format had them at the top level; the current one as ISO strings under
``provenance``) and a ``run_id`` (the writer's, when it wrote one)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_FILE = "results.schema.json"


class ResultsError(ValueError):
    """A results.json that is not one: the message names the file and the field."""


@cache
def _validator() -> jsonschema.Draft202012Validator:
    from fakebroker.protocol import default_schema_dir
    schema = json.loads((default_schema_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def check(doc: Any, where: str) -> None:
    """Raise ResultsError naming ``where`` and the first offending field."""
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        field = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        what = e.message[:200]
        if e.validator == "anyOf" and not e.absolute_path:  # the run's times, in either format
            what = "no run times: neither provenance.started/finished (ISO UTC) nor started (epoch s)"
        raise ResultsError(f"{where}: at {field}: {what} (schema {SCHEMA_FILE})")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Run:
    """A results.json as readers use it."""
    run_id: str
    doc: dict[str, Any]
    started: float
    finished: float | None
    ran: frozenset[str]  # requirement ids with an outcome
    left_out: frozenset[str]


def read(path: Path | str) -> Run:
    """The results.json at ``path``, checked and normalised (ResultsError if it is not one)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        doc = json.loads(raw)
    except OSError as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise ResultsError(f"{path}: not JSON: {e}") from None
    check(doc, str(path))
    prov = doc.get("provenance")
    if prov is not None:
        started, finished = _epoch(prov["started"]), _epoch(prov["finished"])
    else:
        started, finished = float(doc["started"]), doc.get("finished")
    t = doc["target"]
    run_id = doc.get("run_id") or "@".join(
        [t["name"], str(t.get("version")), _utc(started), hashlib.sha256(raw).hexdigest()[:8]])
    return Run(run_id, doc, started, None if finished is None else float(finished),
               frozenset(r["id"] for r in doc["results"]),
               frozenset(x["id"] for x in doc.get("left_out", [])))


def _utc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
