"""A campaign end to end: run a schedule, judge it, and on a violation print the evidence,
shrink the schedule (each try a real run), confirm the minimal one by running it again and
write it as a scenario file."""

from __future__ import annotations

from collections.abc import Callable
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..harness.target import Target
from .driver import Driver, Run
from .judge import Bounds, Finding, evidence, history_to_json, judge
from .schedule import Schedule, dumps
from .shrink import shrink

SETTLE_MS = 2000  # after the liveness deadline: the last polls that show the group settled


def bounds_of(target: Target, grace_ms: int | None = None) -> Bounds:
    """Liveness: session timeout + scheduled delay (none under eager) + a rebalance (the
    rebalance timeout, scaled like every wait of the target's). Safety's grace defaults to
    the same bound: a worker cut off from its coordinator keeps its work until it learns it
    lost it (Connect stops it once the scheduled delay passes without a coordinator)."""
    t = target.timing
    delay = 0 if target.connect_protocol == "eager" else t.scheduled_rebalance_delay_ms
    b = Bounds(t.session_timeout_ms, delay, int(t.rebalance_timeout_ms * t.wait_scale), 0)
    return replace(b, grace_ms=b.liveness_ms if grace_ms is None else grace_ms)


def run_until_ms(s: Schedule, b: Bounds) -> int:
    """Long enough to judge liveness after the last fault."""
    last = max((o.ends_ms for o in s.ops), default=0)
    return max(s.duration_ms, last, s.last_fault_end_ms + b.liveness_ms + SETTLE_MS)


def run_once(target: Target, s: Schedule, b: Bounds, poll_ms: int, log: Callable[[str], Any],
             workerinput: dict[str, Any] | None = None) -> tuple[Run, list[Finding]]:
    run = Driver(target, s, poll_ms, log).run(run_until_ms(s, b), workerinput)
    return run, judge(run.history, b)


@dataclass
class Outcome:
    run: Run
    findings: list[Finding]
    minimal: Schedule | None = None
    confirmed: bool = False
    scenario: Path | None = None
    judged_at: float = 0.0  # time.monotonic() once the first run was judged (before any shrinking)


def campaign(target: Target, s: Schedule, b: Bounds, *, poll_ms: int = 500, shrink_examples: int = 0,
             out: Path | None = None, confirm: bool = True, log: Callable[[str], Any] = print) -> Outcome:
    """``confirm``: run the minimal schedule again (a finding is confirmed when it violates again)."""
    log(f"chaos: target {target.name}, seed {s.seed}, {s.workers} workers, {len(s.ops)} operations, "
        f"{run_until_ms(s, b) / 1000:.0f}s (liveness bound {b.liveness_ms} ms, safety grace {b.grace_ms} ms)")
    run, findings = run_once(target, s, b, poll_ms, log)
    result = Outcome(run, findings, judged_at=time.monotonic())
    if out is not None:  # the recorded history, to judge again or keep as a test's fixture
        out.mkdir(parents=True, exist_ok=True)
        (out / f"chaos-{target.name}-seed{s.seed}.history.json").write_text(
            json.dumps(history_to_json(run.history), default=str), encoding="utf-8")
    if not findings:
        return result
    for f in findings:
        log(f"VIOLATION {f.rule} at t={f.t_ms}ms (seed {s.seed}): {f.detail}")
        for line in evidence(run.history, f):
            log(f"    {line}")
    rule = findings[0].rule
    minimal = s
    if shrink_examples > 0:
        def violates(candidate: Schedule) -> bool:
            again = any(f.rule == rule for f in run_once(target, candidate, b, poll_ms, lambda _: None)[1])
            log(f"  shrinking: {len(candidate.ops)} operations, {sum(o.for_ms for o in candidate.ops)} ms of "
                f"faults: {'violates' if again else 'no violation'}")
            return again
        minimal = shrink(s, violates, shrink_examples)
        log(f"minimal schedule for {rule}: {len(minimal.ops)} of {len(s.ops)} operations")
        for o in minimal.ops:
            log(f"    op  {o.describe()}")
    result.minimal = minimal
    # The rules the scenario file names: the one shrunk for, and the others its schedule broke
    # too (the first run's when it was not shrunk, else its rerun's).
    seen = {f.rule for f in findings} if minimal is s else set()
    if confirm:
        again = {f.rule for f in run_once(target, minimal, b, poll_ms, lambda _: None)[1]}
        result.confirmed = rule in again
        seen |= again
        log(f"rerun of the minimal schedule: {'violates again (confirmed)' if result.confirmed else 'no violation'}")
    violated = (rule, *sorted(seen - {rule}))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"chaos-{target.name}-seed{s.seed}.toml"
        path.write_text(dumps(minimal, target.name, f"{rule} {findings[0].detail}"
                              f"{'' if result.confirmed else ' (NOT confirmed by a rerun)'}", violated),
                        encoding="utf-8")
        result.scenario = path
        log(f"scenario written: {path}")
    return result
