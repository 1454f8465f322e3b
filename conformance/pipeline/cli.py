"""``conformance ingest | audit | history``: the pipeline's commands. Spark is imported only
when one of them runs, so the rest of the CLI stays quick."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from typing import Any

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_NOTHING = 0, 1, 2


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", metavar="URL", help="Spark master (default: embedded local[*])")
    p.add_argument("--conf", action="append", default=[], metavar="K=V", help="a Spark setting (repeatable)")


def register(sub: Any) -> None:
    ing = sub.add_parser("ingest", help="transcripts, pcaps and report folders into a Parquet warehouse")
    ing.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or globs")
    ing.add_argument("--warehouse", required=True, metavar="DIR",
                     help="the Parquet tables' folder (created; re-ingesting a file adds nothing)")
    _common(ing)
    ing.set_defaults(pipeline=lambda a: _guarded("ingest", cmd_ingest, a))
    aud = sub.add_parser("audit", help="ingest PATHs, then check the protocol invariants over their exchanges")
    aud.add_argument("paths", nargs="*", metavar="PATH", help="files, folders or globs (none: the whole warehouse)")
    aud.add_argument("--warehouse", metavar="DIR", help="default: a temporary one")
    aud.add_argument("--show", type=int, default=20, metavar="N", help="violations listed on screen")
    _common(aud)
    aud.set_defaults(pipeline=lambda a: _guarded("audit", cmd_audit, a))
    his = sub.add_parser("history", help="certification history over report folders")
    his.add_argument("paths", nargs="+", metavar="REPORTS", help="report folders (results.json)")
    his.add_argument("--warehouse", metavar="DIR", help="default: a temporary one")
    his.add_argument("--baseline", metavar="RUN", help="run id, implementation version or report folder")
    his.add_argument("--candidate", metavar="RUN",
                     help="the run compared with --baseline: run id, implementation version or report folder")
    _common(his)
    his.set_defaults(pipeline=lambda a: _guarded("history", cmd_history, a))


def _guarded(name: str, fn: Any, args: argparse.Namespace) -> int:
    """One line on the screen for anything that goes wrong; details in the JVM log."""
    try:
        from .session import ConfError, job_cause, jvm_log, log_size, spark_cause
    except ImportError as e:  # a plain install: the pipeline is the `spark` extra
        print(f"conformance {name}: needs the data pipeline's packages: pip install "
              f"'connect-conformance[spark]' ({e})", file=sys.stderr)
        return EXIT_NOTHING
    since = log_size()
    try:
        return fn(args)
    except ConfError as e:
        print(f"conformance {name}: {e}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"conformance {name}: interrupted", file=sys.stderr)
    except Exception as e:  # Spark/Java errors surface here: one line, never a trace
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        # A failed job's text carries its task's root cause (e.g. an executor that cannot start
        # its Python); a Py4J error's first line names only the Java call, Spark logged the rest.
        root = job_cause(str(e))
        if first.startswith("An error occurred while calling"):
            said = root or spark_cause(since) or f"{type(e).__name__}: {first}"
        else:
            said = f"{type(e).__name__}: {first}" + (f" ({root})" if root and root not in first else "")
        print(f"conformance {name}: {said} (Spark's log: {jvm_log()})", file=sys.stderr)
    return EXIT_NOTHING


# Inputs up to this size get a fast-starting driver JVM (session.FAST_START): at ~400 bytes
# an exchange, about 160k exchanges, a minute or less of work.
FAST_START_MAX_BYTES = 64 << 20


def _start(args: argparse.Namespace, name: str, input_bytes: int | None = None):  # noqa: ANN202
    """The session; ``input_bytes``: the size of what is to be read (None: unknown)."""
    from .session import parse_conf, spark_session
    conf = parse_conf(args.conf)
    spark = spark_session(args.master, conf,
                          fast_start=input_bytes is not None and input_bytes <= FAST_START_MAX_BYTES)
    print(f"conformance {name}: Spark {spark.version} on {spark.sparkContext.master}", file=sys.stderr)
    return spark


def _ingest(args: argparse.Namespace, name: str, warehouse: str, reports_only: bool = False):  # noqa: ANN202
    from .ingest import ingest
    from .inputs import precheck, resolve
    from .warehouse import Warehouse
    inputs = resolve(args.paths)
    if reports_only:  # a report folder's attached transcripts and captures are audit's business
        inputs.transcripts.clear()
        inputs.pcaps.clear()
    precheck(inputs)  # before Spark starts: input that is not what it claims costs no JVM
    for problem in inputs.problems:
        print(f"conformance {name}: {problem}", file=sys.stderr)
    if inputs.empty:
        return inputs, None, None
    size = _input_bytes(inputs)
    wh = Warehouse(_start(args, name, size), warehouse)
    _size_shuffles(wh.spark, size, args.conf)
    t0 = time.monotonic()
    s = ingest(wh, inputs)
    print(f"ingest: {s.files} file(s), {s.skipped} already in the warehouse, {s.exchanges} "
          f"exchange(s), {s.outcomes} outcome(s), {s.rejects} reject(s) "
          f"[{time.monotonic() - t0:.1f}s] -> {wh.root}")
    for line in s.reject_samples:
        print(f"  reject {line}")
    return inputs, wh, s


SHUFFLE_BYTES_PER_PARTITION = 16 << 20  # the session's advisory partition size
MAX_SHUFFLE_PARTITIONS = 400


def _input_bytes(inputs) -> int:  # noqa: ANN001
    """Bytes of the transcripts and captures to read (report folders are a few KB each)."""
    import os
    return sum(os.path.getsize(p) for p in (*inputs.transcripts, *inputs.pcaps) if os.path.exists(p))


def _size_shuffles(spark, size: int, conf: list[str]) -> None:  # noqa: ANN001
    """Shuffle partitions sized to the input on disk (two per core at least, one per 16 MB
    up to the session's 400): adaptive execution merges partitions after a shuffle, but
    every map task still writes one block per partition first, which on a recording of a
    thousand exchanges costs more than the work. An explicit --conf wins."""
    if any(c.startswith("spark.sql.shuffle.partitions=") for c in conf):
        return
    cores = spark.sparkContext.defaultParallelism
    parts = max(2 * cores, min(MAX_SHUFFLE_PARTITIONS, -(-size // SHUFFLE_BYTES_PER_PARTITION)))
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))


def cmd_ingest(args: argparse.Namespace) -> int:
    inputs, wh, s = _ingest(args, "ingest", args.warehouse)
    if wh is None:
        print("conformance ingest: nothing usable to ingest", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_NOTHING if s.exchanges == 0 and s.outcomes == 0 and s.skipped == 0 else EXIT_CLEAN


def cmd_audit(args: argparse.Namespace) -> int:
    from pyspark.sql import functions as F

    from .audit import audit
    from .metrics import rounds_table
    from .report import write_report
    from .tables import EXCHANGE
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="conformance-warehouse-")
    if args.paths:
        inputs, wh, s = _ingest(args, "audit", warehouse)
        if wh is None:
            print("conformance audit: nothing usable to audit", file=sys.stderr)
            return EXIT_NOTHING
        ex = wh.read("exchanges", EXCHANGE).where(F.col("source_hash").isin(sorted(inputs.hashes())))
    else:
        from .warehouse import Warehouse
        wh = Warehouse(_start(args, "audit"), warehouse)
        ex = wh.read("exchanges", EXCHANGE)
    ex = ex.cache()
    # One job for the counts (a group: a (source, group id) with the id set).
    sizes = ex.agg(F.count("*").alias("n"), F.count_distinct("source", "group_id").alias("groups"),
                   F.count("embedded_error").alias("undecoded")).first()
    n, groups = sizes["n"], sizes["groups"]
    if n == 0:
        print("conformance audit: no exchanges to audit (every input was rejected or empty)",
              file=sys.stderr)
        return EXIT_NOTHING
    t0 = time.monotonic()
    wh.replace("violations", audit(ex))
    found = wh.read("violations", _violation_schema())
    wh.replace("rounds", rounds_table(ex))
    counts = found.groupBy("requirement", "invariant").count().orderBy("requirement", "invariant").collect()
    total = sum(r["count"] for r in counts)
    print(f"audit: {n} exchange(s), {groups} group(s), {total} violation(s) "
          f"[{time.monotonic() - t0:.1f}s]")
    for r in counts:
        print(f"  {r['requirement']} {r['invariant']}: {r['count']}")
    if sizes["undecoded"]:  # their units are unknown: the rounds they belong to count without them
        print(f"  {sizes['undecoded']} exchange(s) with embedded bytes their protocol's decoder refuses "
              "(the exchanges table's embedded_error)")
    for v in found.orderBy("source", "ref").limit(args.show).collect():
        print(f"  {v.source}:{v.ref_kind} {v.ref}: [{v.requirement} {v.invariant}] group {v.group_id} "
              f"gen/epoch {v.generation} {','.join(v.members or [])}: {v.detail}")
    html, md = write_report(wh)
    print(f"report: {html}\n        {md}")
    return EXIT_VIOLATIONS if total else EXIT_CLEAN


def _violation_schema():  # noqa: ANN202
    from .tables import VIOLATION
    return VIOLATION


def cmd_history(args: argparse.Namespace) -> int:
    from .history import compare, summary_lines
    from .report import write_report
    from .tables import OUTCOME, RUN
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="conformance-warehouse-")
    inputs, wh, s = _ingest(args, "history", warehouse, reports_only=True)
    if wh is None or not inputs.reports:
        print("conformance history: no usable report folder (with results.json) given", file=sys.stderr)
        return EXIT_NOTHING
    outcomes = wh.read("outcomes", OUTCOME)
    if outcomes.limit(1).count() == 0:
        print("conformance history: no usable results.json among the inputs", file=sys.stderr)
        return EXIT_NOTHING
    for line in summary_lines(wh.read("runs", RUN), outcomes):
        print(line)
    regressions = 0
    if args.baseline or args.candidate:
        if not (args.baseline and args.candidate):
            print("conformance history: --baseline and --candidate go together", file=sys.stderr)
            return EXIT_NOTHING
        regressions, lines = compare(outcomes, args.baseline, args.candidate)
        for line in lines:
            print(line)
    html, md = write_report(wh, baseline=args.baseline, candidate=args.candidate)
    print(f"report: {html}\n        {md}")
    return EXIT_VIOLATIONS if regressions else EXIT_CLEAN
