"""Certification history over the outcomes table: timelines, regressions between two runs
(or implementation versions), flaky requirements, duration trends."""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

# Worse outcomes rank higher; a regression is a candidate ranking above its baseline.
RANK = {"PASS": 0, "NOT-APPLICABLE": 0, "NON-STRICT": 1, "FAIL": 2, "BROKEN": 2}


def _rank(col: str) -> F.Column:
    expr = F.lit(None).cast("int")
    for k, v in RANK.items():
        expr = F.when(F.col(col) == k, v).otherwise(expr)
    return expr


def select_run(outcomes: DataFrame, key: str) -> DataFrame:
    """A run by id, by report folder, or every run of an implementation version (the
    latest run per requirement then counts)."""
    folder = os.path.abspath(key)
    hit = outcomes.where((F.col("run_id") == key) | (F.col("report") == folder) |
                         (F.col("impl_version") == key))
    latest = Window.partitionBy("target", "requirement").orderBy(F.desc("started"))
    return hit.withColumn("_n", F.row_number().over(latest)).where("_n = 1").drop("_n")


def regressions(outcomes: DataFrame, baseline: str, candidate: str) -> DataFrame:
    b = select_run(outcomes, baseline).select("requirement", F.col("outcome").alias("baseline"))
    c = select_run(outcomes, candidate).select("requirement", F.col("outcome").alias("candidate"),
                                               "message")
    return (b.join(c, "requirement").where(_rank("candidate") > _rank("baseline"))
            .orderBy("requirement"))


def flaky(outcomes: DataFrame) -> DataFrame:
    """Requirements whose outcome changes across runs of one target version."""
    return (outcomes.groupBy("target", "impl_version", "requirement")
            .agg(F.countDistinct("outcome").alias("outcomes"), F.countDistinct("run_id").alias("runs"),
                 F.sort_array(F.collect_set("outcome")).alias("seen"))
            .where("outcomes > 1").orderBy("target", "requirement"))


def duration_trends(outcomes: DataFrame) -> DataFrame:
    """Per requirement and target: first and latest duration and their ratio."""
    w = Window.partitionBy("target", "requirement").orderBy("started")
    return (outcomes.where(F.col("duration_s").isNotNull())
            .withColumn("first", F.first("duration_s").over(w.rowsBetween(Window.unboundedPreceding, 0)))
            .withColumn("_n", F.row_number().over(w.orderBy(F.desc("started"))))
            .where("_n = 1").select("target", "requirement", "first", F.col("duration_s").alias("latest"))
            .withColumn("ratio", F.col("latest") / F.greatest(F.col("first"), F.lit(1e-3))))


def compare(outcomes: DataFrame, baseline: str, candidate: str) -> tuple[int, list[str]]:
    rows = regressions(outcomes, baseline, candidate).collect()
    lines = [f"regressions {baseline} -> {candidate}: {len(rows)}"]
    lines += [f"  {r.requirement}: {r.baseline} -> {r.candidate} {r.message or ''}".rstrip() for r in rows]
    return len(rows), lines


def summary_lines(outcomes: DataFrame) -> list[str]:
    runs = outcomes.select("run_id").distinct().count()
    reqs = outcomes.select("requirement").distinct().count()
    fl = flaky(outcomes).collect()
    lines = [f"history: {runs} run(s), {reqs} requirement(s), {len(fl)} flaky"]
    lines += [f"  flaky {r.target} {r.impl_version} {r.requirement}: {'/'.join(r.seen)} over {r.runs} runs"
              for r in fl[:20]]
    return lines
