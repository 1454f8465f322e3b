"""Suite power on the worker side: run the worker suite against deliberately broken workers
(``fixtures/mutants/workers/*.toml``) and see which MUST case refuses each one.

A worker mutant is a worker target whose command starts a bundled worker module with
``--mutant NAME``; that module declares ``MUTANTS: dict[str, WorkerMutant]``
(``conformance/workers/mutant.py``): the defect and the case designated to refuse it. The
designated case runs first and the run stops at the first MUST failure, so a mutant the
suite refuses costs one case; a survivor runs every worker case the target claims. A
designated SHOULD case refuses its mutant when not met (NON-STRICT: the certificate fails
under ``--strict``), for a behaviour the spec leaves to the implementation but whose absence
the suite must still see.
"""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path

from ..catalogue.requirements import default_catalogue
from ..harness.outcomes import CaseResult, Outcome
from ..invariants.report import is_invariant
from ..harness.invariant_results import results as invariant_results
from .suite_power import MutantVerdict, run_cases
from ..harness.worker import WorkerSession
from ..harness.target import Target, load_target
from ..workers.mutant import WorkerMutant


def declared(target: Target) -> tuple[str, WorkerMutant | None]:
    """The mutant a worker target's command names (``-m MODULE ... --mutant NAME``) and what
    its module declares about it (None when the module declares nothing)."""
    words = shlex.split(target.command or "")
    name = words[words.index("--mutant") + 1] if "--mutant" in words[:-1] else ""
    if not name:
        raise ValueError(f"{target.path}: the command names no --mutant")
    module = words[words.index("-m") + 1] if "-m" in words[:-1] else ""
    mutants = getattr(importlib.import_module(module), "MUTANTS", {}) if module else {}
    return name, mutants.get(name)


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


def judge_worker_mutant(path: Path, *, only_designated: bool = False) -> MutantVerdict:
    """Run the worker suite against the mutant of ``path``: its designated case, then (unless
    that refused it) the others until a MUST case fails. ``only_designated`` runs the designated case alone (for the project's fast test)."""
    target = load_target(path)
    name, info = declared(target)
    first = info.killed_by if info else None
    if only_designated and first is None:
        raise ValueError(f"{path}: mutant {name} names no designated case")
    case = info.first_case if info else None
    results = run_worker_suite(target, ids=[case]) if case else []
    if not only_designated and not refusing(results, first):
        rest = [r.id for r in default_catalogue().for_suite("worker") if r.id != case]
        results += run_worker_suite(target, ids=rest, stop_at_must_fail=True)
    return MutantVerdict(
        name, str(path), info.defect if info else target.description, refusing(results, first),
        [r.requirement_id for r in results if r.outcome is Outcome.BROKEN],
        survives=info.survives if info else "")


def refusing(results: list[CaseResult], designated: str | None) -> list[str]:
    """The cases that refuse a worker mutant: every MUST that failed, and its designated case
    when that one is not met at its own level (a SHOULD: NON-STRICT, refused under --strict)."""
    return [r.requirement_id for r in results
            if (r.outcome is Outcome.FAIL and r.level == "MUST")
            or (r.requirement_id == designated and r.outcome in (Outcome.FAIL, Outcome.NON_STRICT))]


def worker_mutant_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.toml"))
