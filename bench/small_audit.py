"""`conformance audit` of a small recording as an operator runs it: the whole command in a
fresh process (JVM start included), wall and CPU seconds (the command and every process it
started), with the machine's load beside them; and three lines of garbage refused.

    python bench/small_audit.py --exchanges 1000 --repeats 3
    python bench/small_audit.py --compare-conf spark.sql.shuffle.partitions=400

``--compare-conf K=V`` also runs the audit with that setting, side by side (e.g. the fixed
400 shuffle partitions the session had before they were sized to the input).

The recording is the pipeline bench's corpus (bench/pipeline.py: one Connect group's life,
copied per group) of about ``--exchanges`` exchanges. Without the Spark driver's class-data
archive, a first run writes it and is reported apart. Goal (issue 29): at most 15 s wall on
a quiet 2-core machine, the garbage within the same bound. Figures are medians."""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from pipeline import Usage, _descendants, write_corpus  # noqa: E402


class JvmThreads:
    """CPU seconds of the JVM's threads by name (digits dropped: "Executor task launch
    worker for task 3" and the others add up), sampled from /proc every 0.3 s: where the
    JVM's time goes (planning in the Py4J threads, tasks, the JIT compilers, GC)."""

    def __init__(self) -> None:
        self.last: dict[tuple[int, str], tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> "JvmThreads":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            for pid, name, _, _ in _descendants(os.getpid()):
                if name != "java":
                    continue
                for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else ():
                    try:
                        with open(f"/proc/{pid}/task/{tid}/stat") as f:
                            stat = f.read()
                    except OSError:
                        continue
                    comm = stat[stat.index("(") + 1:stat.rindex(")")]
                    fields = stat.rsplit(")", 1)[1].split()
                    self.last[(pid, tid)] = (comm, (int(fields[11]) + int(fields[12])) / self._tick)

    def top(self, n: int = 6) -> str:
        by: dict[str, float] = {}
        for comm, cpu in self.last.values():
            key = re.sub(r"[\d-]+$", "", comm).strip()
            by[key] = by.get(key, 0.0) + cpu
        return ", ".join(f"{k} {v:.1f}" for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:n])


def timed(cmd: list[str]) -> tuple[int, float, float, str, str]:
    """(exit code, wall s, CPU s of the command and every process below it, its output,
    the CPU by process and JVM thread). CPU is sampled from /proc (the JVM PySpark starts is
    never reaped by the command, so the rusage of children would miss it); the sampling's
    own CPU is not counted."""
    t0 = time.perf_counter()
    with Usage() as u, JvmThreads() as threads:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    jvm = u.cpu_split["jvm_s"]
    where = f"JVM {jvm:.1f} s ({threads.top()}), Python {u.children_cpu_s - jvm:.1f} s"
    return r.returncode, time.perf_counter() - t0, u.children_cpu_s, r.stderr + r.stdout, where


def _driver_archive() -> Path | None:
    """The small input's Spark driver class-data archive (conformance.pipeline.driver_archive)."""
    from conformance.pipeline import driver_archive
    from conformance.pipeline.session import driver_java_options
    archive = driver_archive.driver_archive(driver_java_options(True), {})
    return archive.path if archive else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exchanges", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compare-conf", metavar="K=V", help="also audit with this Spark setting")
    a = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="small-audit-"))
    rec = tmp / "recording"
    rec.mkdir()
    n = write_corpus(rec, a.exchanges)
    junk = tmp / "garbage.jsonl"
    junk.write_text("garbage one\n{\"x\": \nnot json at all\n")
    cli = [sys.executable, "-m", "conformance.cli", "audit"]
    rows: dict[str, list[tuple[float, float, float]]] = {"audit": [], "garbage": []}
    variants = {"audit": []}
    if a.compare_conf:
        variants[f"audit --conf {a.compare_conf}"] = ["--conf", a.compare_conf]
        rows = {"audit": [], f"audit --conf {a.compare_conf}": [], "garbage": []}
    archive = _driver_archive()
    if archive is not None and not archive.is_file():  # a first run's cost, apart from the medians
        load = os.getloadavg()[0]
        code, wall, cpu, out, where = timed([*cli, str(rec), "--warehouse", str(tmp / "wh-build")])
        assert code in (0, 1), out[-2000:]
        print(f"first run, writing the driver's class-data archive: {wall:.1f} s wall, {cpu:.1f} s CPU "
              f"at load {load:.1f}: {where}", flush=True)
    for i in range(a.repeats):
        for name, extra in variants.items():
            load = os.getloadavg()[0]
            code, wall, cpu, out, where = timed([*cli, str(rec), "--warehouse", str(tmp / f"wh{i}-{len(name)}"),
                                                 *extra])
            assert code in (0, 1), out[-2000:]  # clean, or violations found (the corpus has some)
            rows[name].append((wall, cpu, load))
            print(f"{name} run {i + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU: {where}", flush=True)
        load = os.getloadavg()[0]
        code, wall, cpu, out, _ = timed([*cli, str(junk), "--warehouse", str(tmp / f"whj{i}")])
        assert code == 2, out[-2000:]
        rows["garbage"].append((wall, cpu, load))
    print(f"{n} exchanges, {a.repeats} run(s), {os.cpu_count()} cores")
    for name, rs in rows.items():
        walls, cpus, loads = zip(*rs)
        print(f"  {name:8s}\n    wall median {statistics.median(walls):6.1f} s (min {min(walls):.1f}), "
              f"CPU median {statistics.median(cpus):6.1f} s, 1-min load {min(loads):.1f}-{max(loads):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
