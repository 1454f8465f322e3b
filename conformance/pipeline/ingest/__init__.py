"""Ingest: named inputs into the warehouse's exchanges, rejects, sources, runs and
outcomes. A file whose content hash the warehouse already holds adds nothing."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..inputs import Inputs
from ..tables import DECODED, EXCHANGE, PARTITIONS, REJECT, SOURCE
from ..warehouse import Warehouse
from . import pcaps, reports, transcripts


@dataclass
class IngestSummary:
    files: int = 0
    skipped: int = 0  # already in the warehouse (same content hash)
    exchanges: int = 0
    rejects: int = 0
    outcomes: int = 0
    reject_samples: list[str] = field(default_factory=list)


def _new(files: dict[str, str], known: set[str], summary: IngestSummary) -> dict[str, str]:
    out: dict[str, str] = {}
    seen: set[str] = set()
    for path, digest in sorted(files.items()):
        summary.files += 1
        if digest in known or digest in seen:
            summary.skipped += 1
            continue
        seen.add(digest)
        out[path] = digest
    return out


def ingest(wh: Warehouse, inputs: Inputs) -> IngestSummary:
    spark = wh.spark
    summary = IngestSummary()
    known = ({r.source_hash for r in wh.read("sources", SOURCE).select("source_hash").collect()}
             if wh.exists("sources") else set())  # a new warehouse: no job to learn that
    parts: list[DataFrame] = []
    line_rejects: list[DataFrame] = []
    sources: list[tuple] = []
    now = time.time()
    tx = _new(inputs.transcripts, known, summary)
    if tx:
        parts.append(transcripts.ingest(spark, tx))
        sources += [(p, "transcript", d, _size(p), now, transcripts.title(p)) for p, d in tx.items()]
    px = _new(inputs.pcaps, known, summary)
    if px:
        parts.append(pcaps.ingest(spark, px))
        sources += [(p, "pcap", d, _size(p), now, None) for p, d in px.items()]
    rx = _new(inputs.reports, known, summary)
    if rx:
        runs, outcomes, bad_reports = reports.ingest(spark, rx)
        line_rejects.append(bad_reports)
        wh.append("runs", runs)
        summary.outcomes = outcomes.count()
        wh.append("outcomes", outcomes)
        sources += [(p, "report", d, None, now, None) for p, d in rx.items()]
    if parts:
        decoded = parts[0]
        for p in parts[1:]:
            decoded = decoded.unionByName(p)
        summary.exchanges, bad = _write_decoded(wh, decoded)
        if bad is not None:
            line_rejects.append(bad)
    empty = [(p, kind, d, 0, "file", "empty file: nothing to read")
             for kind, files in (("transcript", tx), ("pcap", px)) for p, d in files.items()
             if _size(p) == 0]
    if empty:
        line_rejects.append(spark.createDataFrame(empty, REJECT))
    if line_rejects:
        rej = line_rejects[0]
        for r in line_rejects[1:]:
            rej = rej.unionByName(r)
        rej = rej.select(*REJECT.fieldNames()).cache()
        wh.append("rejects", rej)
        summary.rejects = rej.count()
        summary.reject_samples = [f"{r.source}:{r.ref_kind} {r.ref}: {r.reason}"
                                  for r in rej.orderBy("source", "ref").limit(5).collect()]
        rej.unpersist()
    wh.discard_staged()
    if sources:
        wh.append("sources", spark.createDataFrame(sources, SOURCE))
    return summary


def _write_decoded(wh: Warehouse, decoded: DataFrame) -> tuple[int, DataFrame | None]:
    """Exchanges and rejects from one pass over the decode: written once, split by a
    partition column into the staging folder; the exchanges' files then move into their
    table (a rename) and the rejects (few) are read back from theirs. Returns the number
    of exchanges (from the Parquet footers) and the rejects in the table's shape, None when
    the footers say there are none (a clean recording costs no jobs to write and count them)."""
    staged = decoded.select(
        *[c for c in EXCHANGE.fieldNames() if c != "day"], "reject",
        F.when(F.col("reject").isNull(), F.coalesce(
            F.date_format(F.from_unixtime("req_time"), "yyyy-MM-dd"), F.lit("unknown"))).alias("day"),
        F.col("reject").isNull().alias("_exchange"))
    folder = wh.stage(staged, ["_exchange", *PARTITIONS["exchanges"]])
    exchanges = wh.adopt_staged(folder / "_exchange=true", "exchanges")
    if not wh.staged_rows(folder / "_exchange=false"):
        return exchanges, None
    rejects = wh.read_staged(folder / "_exchange=false", DECODED).select(
        "source", "source_kind", "source_hash", "ref",
        F.when(F.col("source_kind") == "pcap", "frame").otherwise("line").alias("ref_kind"),
        F.col("reject").alias("reason"))
    return exchanges, rejects


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None
