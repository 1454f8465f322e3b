"""Ingest + audit throughput of the Spark pipeline against a plain single-process Python
audit of the same corpus (the baseline a user would write), side by side.

    python bench/pipeline.py --exchanges 1000000 4000000 --repeats 1
    python bench/pipeline.py --exchanges 100000 --repeats 3 --json

The corpus is shaped from recorded exchanges: one Connect group's life (workers joining
with Connect's metadata, KIP-415 rounds with revocations, heartbeats) is built with the
project's codec once, then copied to many groups by renaming the group id (ids of one
length, so the raw bytes stay valid), and written as transcripts of ~50k exchanges each,
once per size into ``--cache`` (later runs reuse it). Both sides read the same files and
apply the same rules: Spark ingests into a fresh warehouse and audits it (``ingest_s``,
``audit_s`` per run); the baseline reads each line with ``json.loads``, pairs answers by
(connection, correlation id), takes the fields with ``exchange_fields`` of
``fakebroker.exchange.fields`` (Connect's embedded bytes through the codec) and runs
``audit.audit_group``. Memory: peak RSS of the JVM (driver and, in local mode, the
executors) and of the JVM with its Python workers, sampled from /proc; the baseline runs
in a child process under an address-space cap (``--memory-cap-mb``, default the machine's
available memory less 4 GB) and reports its peak RSS, or how far it got when the cap
stopped it. CPU seconds of each side (Spark: JVM, workers and driver), which a shared
machine's load does not inflate the way it does wall time. Figures are medians.
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
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fakebroker.exchange.synthetic import Script  # noqa: E402  (transcripts written by a script)

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


def baseline(folder: Path, progress: dict[str, int] | None = None, out: Path | None = None) -> tuple[int, int]:
    """Plain Python, the way a user would write it, made to do the pipeline's work:
    json.loads every line, the strict codec's check of every request and response body
    (the pipeline's own cached check, one codec run per distinct body), answer each request
    by (connection, correlation id), take the fields from the bodies (Connect's embedded
    bytes through the codec, the same ``exchange_fields`` the pcap path uses), write the
    exchanges table (Parquet, the warehouse's schema, one file per input file), group, run
    every check of ``audit_group`` and write the violations table. ``progress``: exchanges
    read so far, updated after each file (what a run stopped by its memory cap had done).
    ``out``: where the tables go (default: a temporary folder, removed after)."""
    progress = {} if progress is None else progress
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    from conformance.pipeline.audit import audit_group
    from conformance.pipeline.decode import registry
    from fakebroker.exchange.fields import exchange_fields
    from conformance.pipeline.ingest.transcripts import _refusal_cached
    from conformance.pipeline.tables import EXCHANGE, VIOLATION
    names = {k: registry().api_name(k) for k in registry().requests}
    ex_schema, v_schema = to_arrow_schema(EXCHANGE), to_arrow_schema(VIOLATION)
    tables = out or Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    (tables / "exchanges").mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    total = rejects = 0
    try:
        for fileno, path in enumerate(sorted(folder.glob("*.jsonl"))):
            source = str(path)
            open_requests: dict[tuple[str, int], tuple[int, dict]] = {}
            rows: list[dict] = []
            with open(path, encoding="utf-8") as fh:
                for n, text in enumerate(fh, 1):
                    obj = json.loads(text)
                    kind = obj.get("kind")
                    if kind in ("request", "response") and _refusal_cached(
                            kind, obj["api_key"], json.dumps(obj["body"])):
                        rejects += 1
                        continue
                    if kind == "request":
                        open_requests[(obj["conn"], obj["correlation_id"])] = (n, obj)
                    elif kind == "response":
                        ref, req = open_requests.pop((obj["conn"], obj["correlation_id"]))
                        api = names[req["api_key"]]
                        row = {"source": source, "source_kind": "transcript", "conn": str(obj["conn"]),
                               "ref": ref, "resp_ref": n, "req_time": req.get("time"),
                               "resp_time": obj.get("time"), "req_vtime_ms": req.get("vtime_ms"),
                               "resp_vtime_ms": obj.get("vtime_ms"), "api": api, "api_key": req["api_key"],
                               "version": req["version"], "correlation_id": req["correlation_id"],
                               "client_id": req.get("client_id"), "day": _day(req.get("time"))}
                        row.update(exchange_fields(api, req["body"], obj["body"]))
                        rows.append(row)
                        if row["group_id"]:
                            groups[(source, row["group_id"])].append(row)
            pq.write_table(pa.Table.from_pylist(rows, schema=ex_schema),
                           tables / "exchanges" / f"part-{fileno:05d}.parquet")
            total += len(rows)
            progress["exchanges"] = total
        found = [v for rows in groups.values() for v in audit_group(rows)]
        pq.write_table(pa.Table.from_pylist(found, schema=v_schema), tables / "violations.parquet")
        return total, len(found)
    finally:
        if out is None:
            shutil.rmtree(tables, ignore_errors=True)


def _day(t: float | None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(t)) if t is not None else "unknown"


def baseline_capped(folder: Path, cap_mb: int) -> dict[str, Any]:
    """The baseline in a child process whose address space is capped at ``cap_mb`` (the
    kernel refuses more: the child gets a MemoryError, not the machine an OOM kill): its
    counts, or how far it got before the cap; its wall, CPU and peak RSS."""
    import subprocess
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, __file__, "--baseline-child", str(folder), "--memory-cap-mb",
                          str(cap_mb)], capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        res = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        res = {"failed": f"exit {out.returncode}: {out.stderr.strip()[-500:]}"}
    res.update(wall_s=time.perf_counter() - t, cap_mb=cap_mb,
               cpu_s=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
    return res


def _baseline_child(folder: Path, cap_mb: int) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))
    progress = {"exchanges": 0}
    try:
        total, found = baseline(folder, progress)
        res: dict[str, Any] = {"exchanges": total, "violations": found}
    except MemoryError:
        res = {"memory_cap_exceeded": True, "exchanges_read": progress["exchanges"]}
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(res))
    return 0


def available_mb() -> int:
    with open("/proc/meminfo") as f:
        return int(dict(line.split(":", 1) for line in f)["MemAvailable"].split()[0]) // 1024


class Usage:
    """Peak resident memory and CPU seconds of this process's children (the JVM, and the
    Python workers it forks), sampled every 0.2 s from /proc: the JVM alone and JVM +
    workers. CPU is what a run costs whatever the machine's load (wall time on a shared
    machine is not): each child's last sample, plus this process's own CPU."""

    def __init__(self) -> None:
        self.jvm_mb = self.total_mb = 0.0
        self._cpu: dict[int, float] = {}
        self._names: dict[int, str] = {}
        self._start: dict[int, float] = {}
        self._own = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Usage":
        self._start = {pid: cpu for pid, _, _, cpu in _descendants(os.getpid())}
        self._own = time.process_time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self._own = time.process_time() - self._own

    @property
    def cpu_s(self) -> float:
        """Children's CPU during the block (a child alive before it counts from then on)."""
        return self._own + sum(c - self._start.get(pid, 0.0) for pid, c in self._cpu.items())

    @property
    def children_cpu_s(self) -> float:
        """The children's CPU only (what a command run below this process cost, without
        this process's sampling)."""
        return self.cpu_s - self._own

    @property
    def cpu_split(self) -> dict[str, float]:
        """The same CPU by process: the JVM, its Python workers, and this (driver) process."""
        jvm = sum(c - self._start.get(pid, 0.0) for pid, c in self._cpu.items() if self._names.get(pid) == "java")
        return {"jvm_s": round(jvm, 1), "python_workers_s": round(self.cpu_s - self._own - jvm, 1),
                "driver_s": round(self._own, 1)}

    def _sample(self) -> None:
        jvm = total = 0.0
        for pid, name, rss, cpu in _descendants(os.getpid()):
            total += rss
            self._cpu[pid] = cpu
            self._names[pid] = name
            if name == "java":
                jvm += rss
        self.jvm_mb, self.total_mb = max(self.jvm_mb, jvm), max(self.total_mb, total)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()


def _descendants(root: int) -> list[tuple[int, str, float, float]]:
    """(pid, name, RSS MB, CPU seconds) of every process below ``root``."""
    parents: dict[int, list[int]] = defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parents[int(f.read().rsplit(")", 1)[1].split()[1])].append(int(d))
            except OSError:
                pass
    out, todo, tick = [], list(parents[root]), os.sysconf("SC_CLK_TCK")
    while todo:
        pid = todo.pop()
        todo += parents[pid]
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            out.append((pid, fields["Name"].strip(), int(fields.get("VmRSS", "0 kB").split()[0]) / 1024,
                        (int(stat[11]) + int(stat[12])) / tick))
        except (OSError, KeyError, ValueError, IndexError):
            pass
    return out


def start_spark(master: str, driver_memory: str) -> Any:
    """One session for every run, started before the clock (its start-up is not the job's
    cost). Local mode: the executors live in the driver JVM, whose heap is fixed, not sized
    to the corpus."""
    from conformance.pipeline.session import spark_session
    return spark_session(master, {"spark.ui.enabled": "false", "spark.driver.memory": driver_memory},
                         progress=False)


def spark_run(spark: Any, folder: Path) -> tuple[int, int, dict[str, float]]:
    """Ingest into a fresh warehouse, then audit it into its violations table (the tables
    the baseline writes too); seconds of each stage."""
    from conformance.pipeline.audit import audit
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.tables import EXCHANGE, VIOLATION
    from conformance.pipeline.warehouse import Warehouse
    wh_dir = Path(tempfile.mkdtemp(prefix="bench-wh-"))
    try:
        wh = Warehouse(spark, wh_dir)
        t0 = time.perf_counter()
        s = ingest(wh, resolve([str(folder)]))
        t1 = time.perf_counter()
        wh.replace("violations", audit(wh.read("exchanges", EXCHANGE)))
        found = wh.read("violations", VIOLATION).count()
        t2 = time.perf_counter()
        return s.exchanges, found, {"ingest_s": round(t1 - t0, 1), "audit_s": round(t2 - t1, 1)}
    finally:
        shutil.rmtree(wh_dir, ignore_errors=True)


def side_by_side(results: list[dict[str, Any]]) -> str:
    """The sizes as a table: wall, CPU and CPU per exchange of each side, the ratios, peak
    memory (Spark: the JVM, which in local mode is the driver and its executors; and its
    Python workers), and each side's CPU per exchange against the smallest size's."""
    head = ("| exchanges | Spark wall | Spark CPU | Spark us/ex | baseline wall | baseline CPU | "
            "baseline us/ex | wall ratio | CPU ratio, 2 cores | Spark JVM peak | Spark workers peak | "
            "baseline peak |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    first: dict[str, float] = {}
    for r in results:
        sp, bl = r.get("spark", {}), r.get("baseline", {})
        cells = [f"{r['exchanges']:,}"]
        for side in (sp, bl):
            if not side:
                cells += ["-"] * 3
                continue
            us = side["cpu_us_per_exchange"]
            name = "spark" if side is sp else "baseline"
            first.setdefault(name, us)
            cells += [f"{side['median_s']:.1f} s", f"{side['cpu_s']:.1f} s",
                      f"{us:.1f} ({us / first[name] - 1:+.0%})"]
        cells += [f"{r['speedup']:.2f}x" if "speedup" in r else "-",
                  f"{r['cpu_speedup_2_cores']:.2f}x" if "cpu_speedup_2_cores" in r else "-"]
        cells += [f"{sp['jvm_peak_rss_mb']} MB" if sp else "-",
                  f"{sp['jvm_and_workers_peak_rss_mb'] - sp['jvm_peak_rss_mb']} MB" if sp else "-",
                  (f"{bl['peak_rss_mb']} MB" if bl.get("peak_rss_mb") else "-") if bl else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def corpus(cache: Path, size: int) -> tuple[Path, int, float]:
    """The corpus of ``size`` exchanges, generated once into ``cache`` (folder, exact count,
    seconds spent generating now: 0 when it was there)."""
    folder = cache / f"corpus-{size}"
    done = folder / "COUNT"
    if done.exists():
        return folder, int(done.read_text()), 0.0
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t = time.perf_counter()
    n = write_corpus(folder, size)
    done.write_text(str(n))
    return folder, n, time.perf_counter() - t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exchanges", type=int, nargs="+", default=[1_000_000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--json", action="store_true")
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--skip-spark", action="store_true")
    p.add_argument("--driver-memory", default="2g", help="the local JVM's heap (default 2g, any corpus size)")
    p.add_argument("--memory-cap-mb", type=int, default=None,
                   help="the baseline's address-space cap (default: available memory less 4 GB)")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/connect-conformance/bench-pipeline"),
                   help="where corpora are generated once and kept")
    p.add_argument("--baseline-child", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.baseline_child:
        return _baseline_child(args.baseline_child, args.memory_cap_mb)
    results = []
    spark = None if args.skip_spark else start_spark(args.master, args.driver_memory)
    sides = [n for n, skip in (("spark", args.skip_spark), ("baseline", args.skip_baseline)) if not skip]
    for size in args.exchanges:
        folder, n, gen_s = corpus(Path(args.cache), size)
        row: dict[str, Any] = {"exchanges": n, "generate_s": round(gen_s, 1), "corpus_mb": round(
            sum(f.stat().st_size for f in folder.glob("*.jsonl")) / 1e6, 1)}
        for name in sides:
            times, cpus, counts, extra = [], [], (0, 0), {}
            for _ in range(args.repeats):
                if name == "spark":
                    with Usage() as use:
                        t = time.perf_counter()
                        *counts, st = spark_run(spark, folder)
                        times.append(time.perf_counter() - t)
                    cpus.append(use.cpu_s)
                    extra.setdefault("cpu_split", []).append(use.cpu_split)
                    extra.setdefault("stages", []).append(st)
                    extra["jvm_peak_rss_mb"] = max(extra.get("jvm_peak_rss_mb", 0), round(use.jvm_mb))
                    extra["jvm_and_workers_peak_rss_mb"] = max(extra.get("jvm_and_workers_peak_rss_mb", 0),
                                                               round(use.total_mb))
                else:
                    cap = args.memory_cap_mb or available_mb() - 4096
                    res = baseline_capped(folder, cap)
                    times.append(res["wall_s"])
                    cpus.append(res["cpu_s"])
                    extra["peak_rss_mb"] = max(extra.get("peak_rss_mb", 0), res.get("peak_rss_mb", 0))
                    extra["memory_cap_mb"] = cap
                    if "exchanges" not in res:  # stopped by its cap (or failed): what it had done
                        extra.update({k: v for k, v in res.items() if k not in ("wall_s", "cpu_s", "cap_mb")})
                        print(f"{n} exchanges, baseline stopped: {res}", file=sys.stderr, flush=True)
                        break
                    counts = (res["exchanges"], res["violations"])
            med, cpu = statistics.median(times), statistics.median(cpus)
            done = counts[0] or extra.get("exchanges_read", 0)
            row[name] = {"median_s": round(med, 2), "runs_s": [round(x, 2) for x in times],
                         "exchanges_per_s": round(done / med), "exchanges": counts[0],
                         "violations": counts[1], "us_per_exchange": round(med / max(done, 1) * 1e6, 1),
                         "cpu_s": round(cpu, 1), "cpu_us_per_exchange": round(cpu / max(done, 1) * 1e6, 1),
                         **extra}
            print(f"{n} exchanges, {name}: median {med:.1f}s ({done / med:,.0f}/s), "
                  f"CPU {cpu:.1f}s, {counts[1]} violation(s), load {os.getloadavg()[0]:.1f}",
                  file=sys.stderr, flush=True)
        if "spark" in row and "baseline" in row and row["baseline"]["exchanges"]:
            row["speedup"] = round(row["baseline"]["median_s"] / row["spark"]["median_s"], 2)
            # what the ratio would be with both cores free: the baseline runs on one, Spark on
            # both (its CPU seconds over 2), so load from other work cancels out
            row["cpu_speedup_2_cores"] = round(row["baseline"]["cpu_s"] / (row["spark"]["cpu_s"] / 2), 2)
        results.append(row)
    out = {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "results": results}
    print(json.dumps(out, indent=None if args.json else 2))
    if not args.json:
        print(side_by_side(results), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
