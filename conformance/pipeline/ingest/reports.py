"""Report folders (``results.json`` beside ``certificate.json``) into runs and outcomes:
one outcome row per (run, target, implementation version, requirement, level, outcome,
duration). Read by Spark's JSON reader (multi-line documents)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..tables import OUTCOME, REJECT, RUN


def ingest(spark: SparkSession, folders: dict[str, str]) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(runs, outcomes, rejects) of the report folders (folder -> hash of its results.json)."""
    names = spark.createDataFrame([(f"{k}/results.json", k, v) for k, v in folders.items()],
                                  "file string, report string, source_hash string")
    docs = (spark.read.option("multiLine", True).option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", "_corrupt_record")
            .json([f"{k}/results.json" for k in folders])
            .withColumn("file", F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", "")))
            .join(F.broadcast(names), "file"))
    cols = set(docs.columns)
    usable = F.lit(True)
    if "_corrupt_record" in cols:
        usable = F.col("_corrupt_record").isNull()
    if not {"target", "results"} <= cols:
        usable = F.lit(False)
    bad = docs.where(~usable).select(
        F.col("file").alias("source"), F.lit("report").alias("source_kind"), "source_hash",
        F.lit(0).cast("long").alias("ref"), F.lit("file").alias("ref_kind"),
        F.lit("not a results.json: invalid JSON or no target/results").alias("reason"))
    if not {"target", "results"} <= cols:
        empty = spark.createDataFrame([], RUN), spark.createDataFrame([], OUTCOME)
        return empty[0], empty[1], bad.select(*REJECT.fieldNames())
    good = docs.where(usable).withColumn(
        "run_id", F.concat_ws("@", "target.name", "target.version",
                              F.date_format(F.from_unixtime("started"), "yyyy-MM-dd'T'HH:mm:ss'Z'"),
                              F.substring("source_hash", 1, 8)))
    base = [F.col("run_id"), F.col("report"), F.col("target.name").alias("target"),
            F.col("target.implementation").alias("implementation"),
            F.col("target.version").alias("impl_version"), F.col("suite"),
            F.col("started").cast("double").alias("started")]
    runs = good.select(*base, F.col("finished").cast("double").alias("finished"),
                       _verdict(spark, folders).alias("verdict"),
                       F.size("results").cast("long").alias("cases"), "source_hash")
    outcomes = good.select(*base, F.explode("results").alias("r")).select(
        *[c for c in OUTCOME.fieldNames()[:7]], F.col("r.id").alias("requirement"),
        F.col("r.level").alias("level"), F.col("r.outcome").alias("outcome"),
        F.col("r.duration_s").cast("double").alias("duration_s"), F.col("r.message").alias("message"))
    return runs.select(*RUN.fieldNames()), outcomes.select(*OUTCOME.fieldNames()), \
        bad.select(*REJECT.fieldNames())


def _verdict(spark: SparkSession, folders: dict[str, str]):  # noqa: ANN202 (a Column)
    """The certificate's verdict, looked up beside results.json (driver side: one small file
    per run)."""
    import json
    import os
    verdicts = {}
    for folder in folders:
        try:
            with open(os.path.join(folder, "certificate.json"), encoding="utf-8") as f:
                verdicts[folder] = json.load(f).get("verdict")
        except (OSError, ValueError):
            verdicts[folder] = None
    m = F.create_map(*[x for k, v in sorted(verdicts.items()) for x in (F.lit(k), F.lit(v))]) \
        if verdicts else None
    return m[F.col("report")] if m is not None else F.lit(None).cast("string")
