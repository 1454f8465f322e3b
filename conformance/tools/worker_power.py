"""Suite power on the worker side: run the worker suite against deliberately broken workers
(declared in ``fixtures/mutants/workers.toml``) and see which MUST case refuses each one.

A worker mutant is a bundled worker started with ``--mutant NAME``; its declaration
(``conformance/harness/mutant_declarations.py``) names the defect and the case designated to refuse
it (``refused_by``). The designated case runs first and the run stops at the first MUST
failure, so a mutant the suite refuses costs one case; a survivor runs every worker case the
target claims. A designated SHOULD case refuses its mutant when not met (NON-STRICT: the
certificate fails under ``--strict``), for a behaviour the spec leaves to the implementation
but whose absence the suite must still see.
"""

from __future__ import annotations

from ..catalogue.requirements import default_catalogue
from ..harness.outcomes import CaseResult, Outcome
from ..invariants.report import is_invariant
from ..harness.invariant_results import results as invariant_results
from ..harness.mutant_declarations import DeclaredMutant
from .suite_power import MutantVerdict, run_cases
from ..harness.worker import WorkerSession
from ..harness.target import Target, load_target


def run_worker_suite(target: Target, *, ids: list[str] | None = None,
                     stop_at_must_fail: bool = False) -> list[CaseResult]:
    """Every worker-suite case (or those of ``ids``), in catalogue order, in one process,
    without pytest."""
    reqs = [r for r in default_catalogue().for_suite("worker")
            if (ids is None or r.id in ids) and not is_invariant(r.id)]
    session = WorkerSession.start(target)
    try:
        ran = run_cases(reqs, session, stop_at_must_fail=stop_at_must_fail)
    finally:
        session.stop()
    # The invariants over the exchanges of the cases that ran (a mutant they refuse is killed
    # by the first case that showed it, whatever that case's own outcome).
    return ran + [r for r in invariant_results([c.record() for c in ran], target)
                  if r.outcome is not Outcome.NOT_APPLICABLE]


def judge_worker_mutant(mutant: DeclaredMutant, *, only_designated: bool = False) -> MutantVerdict:
    """Run the worker suite against ``mutant``: its designated case, then (unless that refused
    it) the others until a MUST case fails. ``only_designated`` runs the designated case alone
    (for the project's fast test)."""
    target = load_target(mutant.reference)
    results = run_worker_suite(target, ids=[mutant.first_case])
    if not only_designated and not refusing(results, mutant.refused_by):
        rest = [r.id for r in default_catalogue().for_suite("worker") if r.id != mutant.first_case]
        results += run_worker_suite(target, ids=rest, stop_at_must_fail=True)
    return MutantVerdict(
        mutant.name, mutant.reference, mutant.defect, refusing(results, mutant.refused_by),
        [r.requirement_id for r in results if r.outcome is Outcome.BROKEN], survives=mutant.survives)


def refusing(results: list[CaseResult], designated: str | None) -> list[str]:
    """The cases that refuse a worker mutant: every MUST that failed, and its designated case
    when that one is not met at its own level (a SHOULD: NON-STRICT, refused under --strict)."""
    return [r.requirement_id for r in results
            if (r.outcome is Outcome.FAIL and r.level == "MUST")
            or (r.requirement_id == designated and r.outcome in (Outcome.FAIL, Outcome.NON_STRICT))]
