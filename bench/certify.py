"""How long a worker target takes to start, and to certify.

``startup``: the worker session of a target as a certification run starts it (for the
bundled Apache Connect targets: a real Kafka, the recording fake broker in proxy mode in
front of it, the connectors seeded), then ``--repeats`` workers one after another, each
in a group of its own, alone, timed from the spawn of its command to its first
FindCoordinator, its first JoinGroup and its first successful SyncGroup (joined), and
how long it then takes to stop (SIGTERM until it exited).

``run``: ``conformance run`` of each ``--target`` (its whole scope, as ``make certify``
runs it), the wall time of each beside its verdict and the CPU seconds it used (every process
it started and waited for: the load-independent figure; a 2-core machine runs it in at least
half that), and the machine's load before and after.

    python bench/certify.py startup --target fixtures/targets/apache-connect-eager.toml --repeats 3
    python bench/certify.py run --target fixtures/targets/apache-connect-eager.toml \\
        --target fixtures/targets/apache-connect-sessioned.toml [-n auto]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.harness.worker import WorkerSession, spawn_worker  # noqa: E402
from conformance.harness.target import load_target  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("FindCoordinator", "JoinGroup", "SyncGroup")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def children_cpu() -> float:
    """User + system CPU seconds of every finished child process (and theirs, waited for)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_one_start(session: WorkerSession, deadline_s: float) -> dict[str, float]:
    """Seconds from spawn to each stage (the worker's first request of it; SyncGroup: the first
    answered without error), then the seconds its stop took."""
    assert session.broker is not None
    recorder = session.broker.broker
    group = f"bench-startup-{uuid.uuid4().hex[:8]}"
    mark = len(recorder.snapshot())  # type: ignore[attr-defined]
    t0 = time.monotonic()
    w = spawn_worker(session.target, session.broker.bootstrap, group, topic_prefix=session.topic_prefix,
                     worker_host=session.worker_host)
    out: dict[str, float] = {}
    try:
        while len(out) < len(STAGES):
            if time.monotonic() - t0 > deadline_s or not w.alive():
                raise RuntimeError(f"worker did not join within {deadline_s:.0f}s "
                                   f"(reached {sorted(out)}); log:\n{w.log_tail()}")
            for s in recorder.snapshot(mark):  # type: ignore[attr-defined]
                if (s.client_id == w.worker_id and s.api in STAGES and s.api not in out
                        and (s.api != "SyncGroup" or s.ok)):
                    out[s.api] = s.t_request - t0
            time.sleep(0.05)  # polling the recorder; the bound is the deadline
    finally:
        t_stop = time.monotonic()
        w.terminate()
        out["stop"] = time.monotonic() - t_stop
        os.unlink(w.log_path)
    return out


def cmd_startup(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    print(f"load before: {load()}")
    t0 = time.monotonic()
    session = WorkerSession.start(target)
    print(f"session start (real Kafka, fake broker, seeding): {time.monotonic() - t0:.1f}s")
    rows = []
    try:
        for i in range(args.repeats):
            r = time_one_start(session, target.timing.startup_timeout_s)
            rows.append(r)
            print(f"worker {i + 1}: " + ", ".join(f"{k} {v:.2f}s" for k, v in r.items()), flush=True)
    finally:
        session.stop()
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print("median:   " + ", ".join(f"{k} {v:.2f}s" for k, v in med.items()))
    print(f"load after: {load()}")
    if args.json:
        print(json.dumps({"target": target.name, "runs": rows, "median": med}))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    print(f"load before: {load()}")
    rows = []
    reports = Path(tempfile.mkdtemp(prefix="bench-certify-"))
    for t in args.target:
        name = load_target(t).name
        t0, cpu0 = time.monotonic(), children_cpu()
        r = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", t, "-n", args.workers,
                            "--no-html", "--reports", str(reports / name)],
                           cwd=ROOT, capture_output=True, text=True)
        wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
        verdict = next((ln.strip().split(":")[0] for ln in r.stdout.splitlines()
                        if ln.strip().split(":")[0] in ("CERTIFIED", "NOT CERTIFIED", "PARTIAL", "BROKEN")),
                       f"exit {r.returncode}")
        rows.append((name, wall, verdict))
        print(f"{name:32} {wall:7.1f}s  CPU {cpu:6.1f}s  {verdict}  (load {load()})", flush=True)
    print(f"total {sum(w for _, w, _ in rows):.1f}s; load after: {load()}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    st = sub.add_parser("startup", help="time worker start-ups against a target's session")
    st.add_argument("--target", required=True, help="a worker target file (TOML)")
    st.add_argument("--repeats", type=int, default=3)
    st.add_argument("--json", action="store_true", help="also print the timings as JSON")
    rn = sub.add_parser("run", help="time conformance run per target")
    rn.add_argument("--target", action="append", required=True, help="target file; repeat for several")
    rn.add_argument("-n", dest="workers", default="auto", help="pytest-xdist workers (default auto)")
    args = p.parse_args()
    return cmd_startup(args) if args.command == "startup" else cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
