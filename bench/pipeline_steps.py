"""What each step of the Spark pipeline costs, measured by taking it out or changing it, in
one warm session (JIT compiled by a first ingest and audit), CPU seconds by process:

    FILES=4 PLAN=base,noudf,onesort,base,audit,auditread python bench/pipeline_steps.py

Corpus: the first FILES files (50k exchanges each) of bench/pipeline.py's 1M corpus. Steps
(PLAN, comma-separated; each prints one JSON line): base (ingest as it is), noudf (the scan
without the codec-check UDF: an upper bound of what any other way of checking bodies can
save; its rejects are wrong), onesort (pairing with one sort: a whole-key window frame
instead of the second window), none/lz4/zstd/nodict (the Parquet write uncompressed, lz4,
zstd, without dictionaries), audit, auditread (the audit's Parquet read alone), dec* (the
decode with no write). The variants are patched in here for measuring only."""
import json
import os
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

WT = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, WT)
sys.path.insert(0, WT + "/bench")
from pipeline import Usage, start_spark  # noqa
from pyspark.sql import functions as F, Window
from conformance.pipeline.ingest import ingest, transcripts
from conformance.pipeline.inputs import resolve
from conformance.pipeline.audit import audit
from conformance.pipeline.tables import EXCHANGE
from conformance.pipeline.warehouse import Warehouse

N = int(os.environ.get("FILES", "4"))
src = Path(os.path.expanduser("~/.cache/connect-conformance/bench-pipeline/corpus-1000000"))
WORK = Path(tempfile.mkdtemp(prefix="pipeline-steps-"))
sub = WORK / f"corpus-{N}"
if not sub.exists():
    sub.mkdir()
    for f in sorted(src.glob("*.jsonl"))[:N]:
        os.symlink(f, sub / f.name)
spark = start_spark("local[*]", "2g")
inputs = resolve([str(sub)])
orig_pairs, orig_F = transcripts._pairs, transcripts.F

def pairs_one_sort(frames):
    key = ["fid", "conn", "correlation_id"]
    is_req, is_resp = F.col("kind") == "request", F.col("kind") == "response"
    w = Window.partitionBy(*key).orderBy("line")
    whole = w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    n = F.when(is_req, F.count_if(is_req).over(w)).otherwise(F.count_if(is_resp).over(w))
    resps = F.collect_list(F.when(is_resp, F.struct("line", "time", "vtime_ms", "p"))).over(whole)
    reqs = F.collect_list(F.when(is_req, F.col("line"))).over(whole)
    ev = frames.select("*", F.try_element_at(resps, n.cast("int")).alias("_r"), F.try_element_at(reqs, n.cast("int")).alias("_q"))
    orphan = is_resp & ~F.coalesce(F.col("_q") < F.col("line"), F.lit(False))
    return (ev.where(is_req | orphan | F.col("problem").isNotNull())
            .select(*frames.columns, F.when(is_req & (F.col("_r.line") > F.col("line")), F.col("_r")).alias("r"),
                    orphan.alias("orphan")))

def no_problems_F():
    ns = types.ModuleType("Fpatched"); ns.__dict__.update(orig_F.__dict__)
    real = orig_F.arrow_udf
    def arrow_udf(fn, *a, **k):
        if fn is transcripts._problems:
            return lambda c: F.when(c["bad"].isNotNull(), F.lit("bad"))
        return real(fn, *a, **k)
    ns.arrow_udf = arrow_udf
    return ns

def reset():
    transcripts._pairs, transcripts.F = orig_pairs, orig_F
    spark.conf.unset("spark.sql.parquet.compression.codec")
    spark.sparkContext._jsc.hadoopConfiguration().unset("parquet.enable.dictionary")

results = []
def run(name, fn):
    with Usage() as u:
        t = time.perf_counter(); out = fn(); w = time.perf_counter() - t
    r = {"step": name, "wall": round(w, 1), "cpu": round(u.cpu_s, 1), **u.cpu_split, "out": out, "load": round(os.getloadavg()[0], 1)}
    results.append(r); print(json.dumps(r), flush=True)

def full(prep=None):
    def go():
        reset()
        if prep: prep()
        d = Path(tempfile.mkdtemp(prefix="steps-wh-", dir=WORK))
        try:
            s = ingest(Warehouse(spark, d), inputs); return s.exchanges
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return go

def decode_only(prep=None):
    def go():
        reset()
        if prep: prep()
        transcripts.ingest(spark, inputs.transcripts).write.format("noop").mode("overwrite").save()
    return go

# warm-up, and a warehouse kept for the audit steps
WH = WORK / "wh"; shutil.rmtree(WH, ignore_errors=True)
wh = Warehouse(spark, WH)
run("warm ingest", lambda: ingest(wh, inputs).exchanges)
run("warm audit", lambda: audit(wh.read("exchanges", EXCHANGE)).count())
plan = os.environ.get("PLAN", "base,noudf,onesort,audit,auditread,base,noudf,onesort,audit").split(",")
def one_sort(): transcripts._pairs = pairs_one_sort
def no_udf(): transcripts.F = no_problems_F()
def codec(c): return lambda: spark.conf.set("spark.sql.parquet.compression.codec", c)
def nodict(): spark.sparkContext._jsc.hadoopConfiguration().set("parquet.enable.dictionary", "false")
steps = {
    "base": ("ingest", full()), "noudf": ("ingest, no codec-check UDF", full(no_udf)),
    "onesort": ("ingest, one-sort pairing", full(one_sort)),
    "dec": ("decode only (noop write)", decode_only()), "dec_noudf": ("decode only, no UDF", decode_only(no_udf)),
    "dec_onesort": ("decode only, one sort", decode_only(one_sort)),
    "lz4": ("ingest, lz4_raw", full(codec("lz4_raw"))), "zstd": ("ingest, zstd", full(codec("zstd"))),
    "none": ("ingest, uncompressed", full(codec("uncompressed"))), "nodict": ("ingest, no dictionary", full(nodict)),
    "audit": ("audit", lambda: audit(wh.read("exchanges", EXCHANGE)).count()),
    "auditread": ("audit's read alone", lambda: wh.read("exchanges", EXCHANGE).write.format("noop").mode("overwrite").save()),
}
for p in plan:
    name, fn = steps[p]; run(name, fn)
print("RESULTS", json.dumps(results))
shutil.rmtree(WORK, ignore_errors=True)
