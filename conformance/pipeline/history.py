"""Certification history over the runs and outcomes tables: what each run covered and left
out, regressions and fixes between two runs (or implementation versions), flaky
requirements, and durations that changed beyond run-to-run noise."""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

# Worse outcomes rank higher; a regression is a candidate ranking above its baseline.
RANK = {"PASS": 0, "NOT-APPLICABLE": 0, "NON-STRICT": 1, "FAIL": 2, "BROKEN": 2}
# A duration is judged only against at least this many earlier runs of the same target and
# requirement, and called slower only beyond their spread (NOISE_SPREADS standard
# deviations) AND beyond a floor: a fake broker's 3 ms case taking 6 ms is scheduling noise.
MIN_EARLIER_RUNS = 3
NOISE_SPREADS = 3.0
FLOOR_S = 0.5
RATIO = 1.5


def _rank(col: str) -> F.Column:
    expr = F.lit(None).cast("int")
    for k, v in RANK.items():
        expr = F.when(F.col(col) == k, v).otherwise(expr)
    return expr


def labelled(runs: DataFrame) -> DataFrame:
    """Runs oldest first, each with a short label (#1, #2, ...) the report's grid and lists use."""
    w = Window.orderBy("started", "run_id")
    return runs.withColumn("label", F.concat(F.lit("#"), F.row_number().over(w).cast("string")))


def select_run(outcomes: DataFrame, key: str) -> DataFrame:
    """A run by id, by report folder, or every run of an implementation version (the
    latest run per requirement then counts)."""
    folder = os.path.abspath(key)
    hit = outcomes.where((F.col("run_id") == key) | (F.col("report") == folder) |
                         (F.col("impl_version") == key))
    latest = Window.partitionBy("target", "requirement").orderBy(F.desc("started"))
    return hit.withColumn("_n", F.row_number().over(latest)).where("_n = 1").drop("_n")


def changes(outcomes: DataFrame, baseline: str, candidate: str) -> DataFrame:
    """Every requirement either side ran: its outcome on each side (null: that side did not
    run it) and ``change``: regressed, fixed, same, or not compared (one side did not run it)."""
    b = select_run(outcomes, baseline).select("requirement", F.col("outcome").alias("baseline"))
    c = select_run(outcomes, candidate).select("requirement", F.col("outcome").alias("candidate"),
                                               "message")
    return (b.join(c, "requirement", "full_outer").withColumn(
        "change", F.when(F.col("baseline").isNull() | F.col("candidate").isNull(), "not compared")
        .when(_rank("candidate") > _rank("baseline"), "regressed")
        .when(_rank("candidate") < _rank("baseline"), "fixed").otherwise("same"))
        .orderBy("requirement"))


def flaky(outcomes: DataFrame) -> DataFrame:
    """Requirements whose outcome changes across runs of one target version."""
    return (outcomes.groupBy("target", "impl_version", "requirement")
            .agg(F.countDistinct("outcome").alias("outcomes"), F.countDistinct("run_id").alias("runs"),
                 F.sort_array(F.collect_set("outcome")).alias("seen"))
            .where("outcomes > 1").orderBy("target", "requirement"))


def duration_trends(outcomes: DataFrame) -> DataFrame:
    """Per target and requirement: the latest run's duration against the earlier runs' median
    and spread; ``slower`` only with enough earlier runs and beyond noise, ratio and floor."""
    timed = outcomes.where(F.col("duration_s").isNotNull())
    newest = Window.partitionBy("target", "requirement").orderBy(F.desc("started"), F.desc("run_id"))
    ranked = timed.withColumn("_n", F.row_number().over(newest))
    earlier = (ranked.where("_n > 1").groupBy("target", "requirement")
               .agg(F.count("*").alias("earlier_runs"),
                    F.expr("percentile(duration_s, 0.5)").alias("median"),
                    F.coalesce(F.stddev_samp("duration_s"), F.lit(0.0)).alias("spread")))
    latest = ranked.where("_n = 1").select("target", "requirement", F.col("duration_s").alias("latest"))
    out = latest.join(earlier, ["target", "requirement"], "left").fillna({"earlier_runs": 0})
    limit = F.greatest(F.col("median") + NOISE_SPREADS * F.col("spread"), F.col("median") * RATIO,
                       F.col("median") + FLOOR_S)
    return out.withColumn("slower", (F.col("earlier_runs") >= MIN_EARLIER_RUNS) & (F.col("latest") > limit))


def first_line(message: str | None) -> str:
    """A case's message on one line (a golden's diff goes on for pages: its report has it)."""
    lines = (message or "").strip().splitlines()
    return lines[0][:200] + (" ..." if len(lines) > 1 else "") if lines else ""


def run_lines(runs: DataFrame) -> list[str]:
    """One line per run: its label, target, version, verdict, what it ran and left out."""
    lines = []
    for r in labelled(runs).orderBy("started", "run_id").collect():
        left = len(r.left_out or [])
        lines.append(f"  {r.label} {r.run_id}: {r.target} {r.impl_version} {r.verdict or 'no certificate'}, "
                     f"{r.ran} requirement(s) run, {left} left out" + (" (PARTIAL scope)" if left else ""))
    return lines


def compare(outcomes: DataFrame, baseline: str, candidate: str) -> tuple[int, list[str]]:
    rows = changes(outcomes, baseline, candidate).collect()
    reg = [r for r in rows if r.change == "regressed"]
    fixed = [r for r in rows if r.change == "fixed"]
    only_b = sum(1 for r in rows if r.change == "not compared" and r.candidate is None)
    only_c = sum(1 for r in rows if r.change == "not compared" and r.baseline is None)
    lines = [f"regressions {baseline} -> {candidate}: {len(reg)}"]
    lines += [f"  {r.requirement}: {r.baseline} -> {r.candidate} {first_line(r.message)}".rstrip() for r in reg]
    lines.append(f"fixed: {len(fixed)}")
    lines += [f"  {r.requirement}: {r.baseline} -> {r.candidate}" for r in fixed]
    lines.append(f"compared: {len(rows) - only_b - only_c} requirement(s) both ran; not compared: "
                 f"{only_b} only the baseline ran, {only_c} only the candidate ran")
    return len(reg), lines


def summary_lines(runs: DataFrame, outcomes: DataFrame) -> list[str]:
    n = runs.count()
    reqs = outcomes.select("requirement").distinct().count()
    fl = flaky(outcomes).collect()
    lines = [f"history: {n} run(s), {reqs} requirement(s), {len(fl)} flaky"] + run_lines(runs)
    lines += [f"  flaky {r.target} {r.impl_version} {r.requirement}: {'/'.join(r.seen)} over {r.runs} runs"
              for r in fl[:20]]
    trends = duration_trends(outcomes)
    judged = trends.where(f"earlier_runs >= {MIN_EARLIER_RUNS}").count()
    slow = trends.where("slower").orderBy(F.desc(F.col("latest") / F.col("median"))).limit(20).collect()
    total = trends.count()
    lines.append(f"durations: {judged} of {total} requirement(s) have {MIN_EARLIER_RUNS}+ earlier runs to "
                 f"judge against; {len(slow)} slower beyond noise (> median + {NOISE_SPREADS:g} sd, "
                 f"x{RATIO:g} and +{FLOOR_S:g} s)")
    lines += [f"  slower {r.target} {r.requirement}: {r.latest:.3f}s against median {r.median:.3f}s "
              f"(sd {r.spread:.3f}s over {r.earlier_runs} runs)" for r in slow]
    return lines
