"""``conformance chaos``: one seeded campaign against a target (or the replay of a scenario
file), judged, shrunk and written as a scenario on a violation. Exit 0 no violation, 1 a
violation, 2 usage error, 3 the campaign could not run (the workers did not start)."""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fakebroker.cli_text import plain
from ..harness.target import TargetError, load_target
from .driver import SIGNALLED, signalled_ops_supported
from .schedule import KINDS, Knobs, ScenarioError, Schedule, generate, read_scenario

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3


def register(sub: Any) -> None:
    c = sub.add_parser("chaos", help="a seeded fault campaign against N workers of a target, judged by the "
                                     "group invariants, safety and liveness (docs/chaos.md)", description=plain(__doc__ or ""))
    c.add_argument("--target", required=True, metavar="FILE", help="the worker target file (TOML)")
    c.add_argument("--workers", type=int, default=3, metavar="N", help="workers at the start (default %(default)s)")
    c.add_argument("--duration", type=float, default=60, metavar="S",
                   help="seconds of schedule; the run lasts until liveness can be judged (default %(default)s)")
    c.add_argument("--seed", type=int, default=0, metavar="K", help="the schedule's seed (default %(default)s)")
    c.add_argument("--ops", type=int, default=8, metavar="L", help="operations in the schedule (default %(default)s)")
    c.add_argument("--weight", action="append", default=[], metavar="KIND=W",
                   help=f"an operation kind's weight (default 1; 0 turns it off); kinds: {', '.join(KINDS)}")
    c.add_argument("--poll-ms", type=int, default=500, help="REST status poll interval (default %(default)s)")
    c.add_argument("--grace-ms", type=int, default=None,
                   help="safety: how long two workers may both run a unit (default: the liveness bound)")
    c.add_argument("--shrink", type=int, default=20, metavar="M",
                   help="on a violation, at most M runs to shrink the schedule (0: no shrinking; default %(default)s)")
    c.add_argument("--out", default="reports/chaos", metavar="DIR",
                   help="where the minimal scenario is written (default %(default)s)")
    c.add_argument("--replay", metavar="SCENARIO", help="run this scenario file's schedule instead of generating one")
    c.add_argument("--budget", type=float, default=0, metavar="S",
                   help="keep going with the next seeds (K, K+1, ...) until a violation or S seconds of wall "
                        "time have passed; prints the time to the first violation (default: one seed)")
    c.set_defaults(func=run_chaos)


def _knobs(args: argparse.Namespace, signalled: bool) -> Knobs:
    weights = {k: 1.0 for k in KINDS}
    for w in args.weight:
        kind, _, value = w.partition("=")
        if kind not in KINDS:
            raise ValueError(f"--weight {w}: {kind!r} is not one of {', '.join(KINDS)}")
        try:
            weights[kind] = float(value)
        except ValueError:
            raise ValueError(f"--weight {w}: the weight must be a number") from None
    if not signalled:
        for kind in SIGNALLED:
            weights[kind] = 0.0
    return Knobs(ops=args.ops, weights=weights)


def run_chaos(args: argparse.Namespace) -> int:
    from .campaign import bounds_of, campaign  # the worker harness: only when a campaign runs
    try:
        target = load_target(args.target)
        if target.kind != "worker":
            raise ValueError(f"{args.target}: kind: a chaos campaign needs a worker target, not {target.kind!r}")
        # A worker mutant's file declares no capabilities but serves the bundled worker's REST status.
        if "rest" not in target.capabilities and "{rest_port}" not in (target.command or ""):
            raise ValueError(f"{args.target}: capabilities: a chaos campaign reads REST status "
                             "('rest' missing and no {rest_port} in start.command)")
        signalled = signalled_ops_supported(target)
        if args.replay:
            scenario = read_scenario(Path(args.replay))
            if scenario.target != target.name:
                print(f"conformance chaos: note: the scenario was found on {scenario.target}, replayed on "
                      f"{target.name}")
            schedules: Iterator[Schedule] = iter([scenario.schedule])
        else:
            if args.workers < 1 or args.duration <= 0 or args.ops < 0 or args.budget < 0:
                raise ValueError("--workers, --duration must be positive and --ops, --budget not negative")
            knobs = _knobs(args, signalled)

            def schedule_of(seed: int) -> Schedule:
                return generate(seed, args.workers, int(args.duration * 1000), target.timing.session_timeout_ms, 2,
                                knobs)
            first = schedule_of(args.seed)  # bad knobs (every weight 0) are a usage error, now
            schedules = itertools.chain([first], map(schedule_of, itertools.count(args.seed + 1)) if args.budget
                                        else [])
    except (TargetError, ScenarioError, ValueError) as e:
        print(f"conformance chaos: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not signalled:
        print(f"conformance chaos: note: {target.name}'s workers share a host process: no stop, kill or pause "
              "operations (their weights are 0)")
    started, harness_s, workers_s, runs = time.monotonic(), 0.0, 0.0, 0
    for schedule in schedules:
        try:
            result = campaign(target, schedule, bounds_of(target, args.grace_ms), poll_ms=args.poll_ms,
                              shrink_examples=args.shrink, out=Path(args.out))
        except Exception as e:  # noqa: BLE001 - one line on the user's screen, never a traceback
            print(f"conformance chaos: the campaign could not run: {type(e).__name__}: {e}", file=sys.stderr)
            return EXIT_BROKEN
        u, runs = result.run.usage, runs + 1
        harness_s, workers_s = harness_s + u.harness_s, workers_s + u.workers_s
        print(f"cpu: harness {u.harness_s:.1f}s, workers {u.workers_s:.1f}s over {u.wall_s:.0f}s wall")
        elapsed = result.judged_at - started
        if result.findings:
            print(f"VIOLATED: {', '.join(sorted({f.rule for f in result.findings}))} (seed {schedule.seed})")
            if args.budget:
                print(f"budget: first violation after {elapsed:.0f}s of wall time, {runs} campaign(s); cpu: "
                      f"harness {harness_s:.1f}s, workers {workers_s:.1f}s")
            return EXIT_VIOLATION
        print(f"no violation: {len(result.run.history.rows)} group exchanges, {len(result.run.history.snapshots)} "
              f"status snapshots judged (seed {schedule.seed})")
        if elapsed >= args.budget:
            break
    if args.budget:
        print(f"budget: no violation in {time.monotonic() - started:.0f}s of wall time, {runs} campaign(s) "
              f"(seeds {args.seed}..{args.seed + runs - 1}); cpu: harness {harness_s:.1f}s, workers {workers_s:.1f}s")
    return EXIT_OK
