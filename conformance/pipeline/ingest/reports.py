"""Report folders (``results.json`` beside ``certificate.json``) into runs and outcomes:
one outcome row per (run, target, implementation version, requirement, level, outcome,
duration). Each results.json is one small document per run: it is read and checked on the
driver through the schema the writer uses (``conformance.reports.results_file``), so every format
version reads alike and a bad one is named with its field before Spark plans anything."""

from __future__ import annotations

import json
import os

from pyspark.sql import DataFrame, SparkSession

from ...reports.results_file import ResultsError, read
from ..tables import OUTCOME, REJECT, RUN


def ingest(spark: SparkSession, folders: dict[str, str]) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(runs, outcomes, rejects) of the report folders (folder -> hash of its results.json)."""
    runs, outcomes, bad = [], [], []
    for folder, digest in sorted(folders.items()):
        file = os.path.join(folder, "results.json")
        try:
            run = read(file)
        except ResultsError as e:
            bad.append((file, "report", digest, 0, "file", str(e).removeprefix(f"{file}: ")))
            continue
        d, t = run.doc, run.doc["target"]
        base = (run.run_id, folder, t["name"], t.get("implementation"), t.get("version"), d["suite"],
                run.started)
        runs.append((*base, run.finished, _verdict(folder), len(d["results"]), digest,
                     len(run.ran), sorted(run.left_out)))
        outcomes += [(*base, r["id"], r["level"], r["outcome"],
                      None if r.get("duration_s") is None else float(r["duration_s"]), r.get("message"))
                     for r in d["results"]]
    return (spark.createDataFrame(runs, RUN), spark.createDataFrame(outcomes, OUTCOME),
            spark.createDataFrame(bad, REJECT))


def _verdict(folder: str) -> str | None:
    """The certificate's verdict beside results.json (None without one)."""
    try:
        with open(os.path.join(folder, "certificate.json"), encoding="utf-8") as f:
            return json.load(f).get("verdict")
    except (OSError, ValueError, AttributeError):
        return None
