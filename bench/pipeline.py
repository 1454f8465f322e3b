"""Ingest + audit throughput of the Spark pipeline against a plain single-process Python
audit of the same corpus (the baseline a user would write), side by side.

    python bench/pipeline.py --exchanges 1000000 --repeats 3
    python bench/pipeline.py --exchanges 100000 200000 --repeats 3 --json

The corpus is shaped from recorded exchanges: one Connect group's life (workers joining
with Connect's metadata, KIP-415 rounds with revocations, heartbeats, a leave) is built
with the project's codec once, then copied to many groups by renaming the group id (ids of
one length, so the raw bytes stay valid), and written as transcripts of ~50k exchanges
each. Both sides read the same files and run the same checks
(``conformance.pipeline.audit.audit_group``); the baseline decodes frames with the same
codec, one line at a time. Captures are not generated here (pcap ingest shares the decode
step after TCP reassembly). Figures are medians of the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "pipeline"))

from scenario import Script  # noqa: E402  (the tests' transcript builder)

PER_FILE = 50_000


def group_life(group: str) -> list[str]:
    """One group's transcript lines (no header): 4 workers, 6 rounds, heartbeats between."""
    s = Script(group=group)
    workers = ["w1", "w2", "w3", "w4"]
    work = [f"c{i}" for i in range(4)] + [f"c{i}-{t}" for i in range(4) for t in range(3)]
    s.join("w1", 1, "w1", members={"w1": ()})
    s.sync("w1", 1, "w1", assigned=tuple(work))
    owned = {"w1": set(work)}
    gen = 1
    for n in range(2, 5):  # w2..w4 join: a revoking round, then an assigning round
        new = workers[n - 1]
        share = len(work) // n
        take = {w: sorted(owned[w])[:len(owned[w]) - share] for w in owned}
        give = sorted(u for w in take for u in owned[w] if u not in take[w])
        gen += 1
        for w in list(owned) + [new]:
            s.join(w, gen, "w1", owned=tuple(sorted(owned.get(w, ()))),
                   members={x: tuple(sorted(owned.get(x, ()))) for x in list(owned) + [new]} if w == "w1" else None)
        for w in list(owned):
            s.sync(w, gen, "w1", revoked=tuple(sorted(set(owned[w]) - set(take[w]))))
            owned[w] = set(take[w])
        s.sync(new, gen, "w1")
        owned[new] = set()
        gen += 1
        for w in owned:
            s.join(w, gen, "w1", owned=tuple(sorted(owned[w])))
        for w in owned:
            s.sync(w, gen, "w1", assigned=tuple(give) if w == new else ())
        owned[new] = set(give)
        for _ in range(10):
            s.wait(3000)
            for w in owned:
                s.heartbeat(w, gen)
    return [json.dumps(line, separators=(",", ":")) for line in s.lines[1:]]


def write_corpus(folder: Path, exchanges: int) -> int:
    """Transcripts holding about ``exchanges`` exchanges; returns the exact count."""
    template = group_life("grp-00000000")
    per_group = len(template) // 2
    groups = max(1, exchanges // per_group)
    hex_id = "grp-00000000".encode().hex()
    f, written, lines_in_file, fileno = None, 0, 0, 0
    for g in range(groups):
        gid = f"grp-{g:08d}"
        if f is None or lines_in_file >= 2 * PER_FILE:
            if f:
                f.close()
            fileno += 1
            f = open(folder / f"corpus-{fileno:04d}.jsonl", "w", encoding="utf-8")
            lines_in_file = 0
        # conn labels are per group too, so connections do not mix groups
        block = "\n".join(template).replace("grp-00000000", gid).replace(hex_id, gid.encode().hex())
        block = block.replace('"conn":"w', f'"conn":"{g}-w')
        f.write(block + "\n")
        lines_in_file += len(template)
        written += per_group
    if f:
        f.close()
    return written


def baseline(folder: Path) -> tuple[int, int]:
    """Plain Python: read every line, decode frames with the codec, pair, group, audit."""
    from conformance.pipeline.audit import audit_group
    from conformance.pipeline.decode import Frame, pair
    conns: dict[tuple[str, str], list[Frame]] = defaultdict(list)
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            for n, text in enumerate(fh, 1):
                obj = json.loads(text)
                if obj.get("kind") in ("request", "response"):
                    conns[(str(path), str(obj["conn"]))].append(Frame(
                        kind=obj["kind"], ref=n, raw=bytes.fromhex(obj["raw"]) if obj.get("raw") else None,
                        time=obj.get("time"), vtime_ms=obj.get("vtime_ms")))
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    total = 0
    for (source, conn), frames in conns.items():
        for row in pair(frames):
            if row.get("reject"):
                continue
            total += 1
            row.update(source=source, source_kind="transcript", conn=conn)
            if row.get("group_id"):
                groups[(source, row["group_id"])].append(row)
    found = sum(len(audit_group(rows)) for rows in groups.values())
    return total, found


def spark_run(folder: Path, master: str) -> tuple[int, int]:
    from conformance.pipeline.audit import audit
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.session import spark_session
    from conformance.pipeline.tables import EXCHANGE
    from conformance.pipeline.warehouse import Warehouse
    # local mode: the executors live in the driver JVM, whose default 1 GiB is too small at 1M
    spark = spark_session(master, {"spark.ui.enabled": "false", "spark.driver.memory": "6g"}, progress=False)
    wh_dir = Path(tempfile.mkdtemp(prefix="bench-wh-"))
    try:
        wh = Warehouse(spark, wh_dir)
        s = ingest(wh, resolve([str(folder)]))
        found = audit(wh.read("exchanges", EXCHANGE)).count()
        return s.exchanges, found
    finally:
        shutil.rmtree(wh_dir, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exchanges", type=int, nargs="+", default=[1_000_000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--json", action="store_true")
    p.add_argument("--skip-baseline", action="store_true")
    args = p.parse_args()
    results = []
    for size in args.exchanges:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-corpus-{size}-"))
        try:
            t = time.perf_counter()
            n = write_corpus(folder, size)
            gen_s = time.perf_counter() - t
            row = {"exchanges": n, "corpus_mb": round(sum(f.stat().st_size for f in folder.iterdir()) / 1e6, 1),
                   "generate_s": round(gen_s, 1)}
            for name, fn in (("spark", lambda: spark_run(folder, args.master)),
                             ("baseline", lambda: baseline(folder))):
                if name == "baseline" and args.skip_baseline:
                    continue
                times, counts = [], None
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    counts = fn()
                    times.append(time.perf_counter() - t)
                med = statistics.median(times)
                row[name] = {"median_s": round(med, 2), "runs_s": [round(x, 2) for x in times],
                             "exchanges_per_s": round(counts[0] / med), "exchanges": counts[0],
                             "violations": counts[1], "us_per_exchange": round(med / max(counts[0], 1) * 1e6, 1)}
                print(f"{n} exchanges, {name}: median {med:.1f}s ({counts[0] / med:,.0f}/s), "
                      f"{counts[1]} violation(s)", file=sys.stderr, flush=True)
            if "spark" in row and "baseline" in row:
                row["speedup"] = round(row["baseline"]["median_s"] / row["spark"]["median_s"], 2)
            row["driver_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            results.append(row)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    out = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "results": results}
    print(json.dumps(out, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
