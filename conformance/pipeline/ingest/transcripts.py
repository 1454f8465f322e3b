"""Transcripts (.jsonl) into exchanges and rejects: Spark's JSON reader parses the lines
against the schema derived from ``schemas/transcript.schema.json``; each connection's
frames are decoded by the codec in the executors."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ..decode import Frame, pair
from ..tables import REJECT, transcript_line_schema
from .frames import per_connection

KINDS = ("header", "request", "response", "close")


def line_problem(text: str | None) -> str:
    """Why a line Spark could not read as a transcript event is bad (rejected lines only)."""
    if text is None or not text.strip():
        return "empty line (every line is one JSON object)"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            return f"truncated line: the JSON object ends early (after {len(text)} characters)"
        return f"invalid JSON: {e.msg} at column {e.colno}"
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    kind = obj.get("kind")
    if kind not in KINDS:
        return f"kind: {kind!r} is not one of {', '.join(KINDS)}"
    return "conn: required for request, response and close lines"


def lines(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """(source, source_hash, line, value, j): every line of the files, parsed. ``files``
    maps path to content hash."""
    names = spark.createDataFrame(list(files.items()), "source string, source_hash string")
    raw = (spark.read.text(list(files)).select(
        F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", "")).alias("source"),
        F.monotonically_increasing_id().alias("_pos"), "value"))
    # Splits of one file keep their order in partition ids, so position within the file
    # is the rank of the monotonically increasing id.
    w = Window.partitionBy("source").orderBy("_pos")
    return (raw.withColumn("line", F.row_number().over(w)).drop("_pos")
            .join(F.broadcast(names), "source")
            .withColumn("j", F.from_json("value", transcript_line_schema())))


def _connection_rows(pdf: pd.DataFrame) -> list[dict[str, Any]]:
    first = pdf.iloc[0]
    frames = [Frame(kind=r.kind, ref=int(r.line),
                    raw=bytes.fromhex(r.raw) if isinstance(r.raw, str) else None,
                    body=json.loads(r.body) if isinstance(r.body, str) and r.body != "null" else None,
                    api_key=_int(r.api_key), version=_int(r.version),
                    correlation_id=_int(r.correlation_id), client_id=r.client_id,
                    time=_float(r.time), vtime_ms=_int(r.vtime_ms))
              for r in pdf.itertuples(index=False)]
    frames.sort(key=lambda f: f.ref)
    extra = {"source": first.source, "source_kind": "transcript", "source_hash": first.source_hash,
             "conn": str(first.conn)}
    return [{**row, **extra} for row in pair(frames)]


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _float(v: Any) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def ingest(spark: SparkSession, files: dict[str, str]) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(decoded exchanges and rejects, line rejects, headers) of the transcripts."""
    parsed = lines(spark, files).cache()
    ok = F.col("j.kind").isin(*KINDS) & (F.col("j.kind").eqNullSafe("header") | F.col("j.conn").isNotNull())
    problem = F.udf(lambda text: line_problem(text), "string")
    bad = (parsed.where(~F.coalesce(ok, F.lit(False)))
           .select("source", F.lit("transcript").alias("source_kind"), "source_hash",
                   F.col("line").cast("long").alias("ref"), F.lit("line").alias("ref_kind"),
                   problem("value").alias("reason")))
    headers = parsed.where(ok & (F.col("j.kind") == "header")).select("source", "source_hash", "value")
    frames = (parsed.where(ok & F.col("j.kind").isin("request", "response"))
              .select("source", "source_hash", "line", "j.kind", "j.conn", "j.raw", "j.body",
                      "j.api_key", "j.version", "j.correlation_id", "j.client_id", "j.time", "j.vtime_ms"))
    decoded = per_connection(frames, _connection_rows, "line")
    return decoded, bad.select(*REJECT.fieldNames()), headers
