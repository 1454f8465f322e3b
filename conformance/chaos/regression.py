"""A found scenario as a regression case of a target: ``[chaos] scenarios`` in the target
file names scenario files a campaign wrote; ``conformance run`` runs each schedule against
the target's workers (the campaign's driver, a group and internal topics of its own) and
judges the history by the rules the scenario broke when it was found. FAIL when one of them
is broken again, PASS otherwise; reported under the scenario's name, in the row of the
catalogue requirement it is tied to (``requirement_of``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..catalogue.requirements import default_catalogue
from ..harness.outcomes import CaseResult, Outcome
from ..harness.target import Target, TargetError
from .judge import evidence, judge
from .schedule import Scenario, ScenarioError, read_scenario

# The catalogue requirement a judge rule that is no catalogue id stands under: safety is
# CONN-INV-01's rule (no connector or task owned by two members, KIP-415 "Fencing based on
# Rebalancing") seen in each worker's REST status; liveness is the convergence KIP-415
# promises (CONN-INV-05: the leader's rounds converge instead of rebalancing on and on).
RULE_REQUIREMENT = {"safety": "CONN-INV-01", "liveness": "CONN-INV-05"}


def requirement_of(scenario: Scenario) -> str:
    """The catalogue id a scenario's row is reported under: the first catalogue id it broke,
    else the one its first judge rule stands under (ScenarioError when it names none)."""
    cat = default_catalogue()
    ids = [r for r in scenario.violated if r in cat] + [RULE_REQUIREMENT[r] for r in scenario.violated
                                                        if r in RULE_REQUIREMENT]
    unknown = [r for r in scenario.violated if r not in cat and r not in RULE_REQUIREMENT]
    if unknown or not ids:
        raise ScenarioError(f"{scenario.path}: scenario.violated: {unknown[0] if unknown else 'empty'}: "
                            f"each a catalogue id, safety or liveness, at least one (rule scenario-violated)")
    return ids[0]


def load_regression(path: Path) -> Scenario:
    """A scenario file as a regression case: readable, and tied to a catalogue requirement."""
    scenario = read_scenario(path)
    requirement_of(scenario)
    return scenario


def check_scenarios(target: Target) -> None:
    """Refuse a target whose [chaos] scenarios cannot be read as regression cases, naming
    the entry, before anything runs."""
    for n, path in enumerate(target.chaos_scenarios):
        try:
            load_regression(path)
        except ScenarioError as e:
            raise TargetError(target.path, [f"chaos.scenarios[{n}]: {e}"]) from None


def run_scenario(path: Path, target: Target, workerinput: dict[str, Any] | None = None,
                 poll_ms: int = 500) -> CaseResult:
    from .campaign import bounds_of, run_once  # the worker harness: only when a case runs
    scenario = read_scenario(path)
    rid = requirement_of(scenario)
    level = default_catalogue()[rid].level
    started = time.monotonic()

    def result(outcome: Outcome, message: str, **kw: Any) -> CaseResult:
        return CaseResult(rid, level, outcome, message, duration_s=time.monotonic() - started, name=scenario.name,
                          **kw)
    b = bounds_of(target)
    try:
        run, findings = run_once(target, scenario.schedule, b, poll_ms, lambda _: None, workerinput)
    except Exception as e:  # noqa: BLE001 - the workers did not start: the case could not run
        return result(Outcome.BROKEN, f"the scenario could not run: {type(e).__name__}: {e}")
    again = [f for f in findings if f.rule in scenario.violated]
    others = [f"also {f.rule} at t={f.t_ms}ms: {f.detail}" for f in findings if f not in again]
    attachments = {"chaos operations": "\n".join(run.ops_done) + "\n",
                   "chaos findings": "\n".join(line for f in findings for line in
                                               [f"{f.rule} at t={f.t_ms}ms: {f.detail}",
                                                *(f"    {e}" for e in evidence(run.history, f))]) + "\n"}
    found_on = f"found on {scenario.target}, seed {scenario.schedule.seed}"
    if again:
        f = again[0]
        return result(Outcome.FAIL, f"the scenario ({found_on}) breaks {f.rule} again at t={f.t_ms}ms",
                      expected=f"no {' / '.join(scenario.violated)} violation", actual=f.detail, notes=others,
                      attachments=attachments)
    h = run.history
    return result(Outcome.PASS, f"no {' / '.join(scenario.violated)} violation ({found_on}): {len(h.rows)} group "
                  f"exchanges and {len(h.snapshots)} status snapshots over {h.end_ms / 1000:.0f}s judged",
                  notes=others, attachments=attachments)
