"""Suite power: run the coordinator suite in-process against each mutant and see which MUST
cases catch it. ``conformance mutants`` prints the kill rate; the project's tests require
every mutant to be caught and the unmodified fake broker to be certified. A mutant whose
defect no specification pins (it breaks only Apache Kafka's behaviour, a SHOULD) is caught
when a SHOULD case is not met (NON-STRICT: refused under --strict), as on the worker side."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..catalogue.requirements import Requirement, default_catalogue
from ..harness.outcomes import CaseResult, Outcome
from .. import suites
from ..harness.cases import load_cases
from ..harness.runner import Session, run_case
from ..harness.sessions import CoordinatorSession
from ..harness.mutant_declarations import DeclaredMutant
from ..harness.target import Target, load_target


def run_suite(target: Target, *, ids: Iterable[str] | None = None,
              stop_at_must_fail: bool = False) -> list[CaseResult]:
    """Every coordinator-suite case in one process, without pytest (for mutants and tests)."""
    reqs = [r for r in default_catalogue().for_suite("coordinator") if ids is None or r.id in set(ids)]
    session = CoordinatorSession.start(target)
    try:
        return run_cases(reqs, session, stop_at_must_fail=stop_at_must_fail)
    finally:
        session.stop()


def run_cases(reqs: list[Requirement], session: Session, *, stop_at_must_fail: bool = False) -> list[CaseResult]:
    """The cases of ``reqs`` in order on a started session (stopping at the first MUST failure)."""
    load_cases(suites)
    out: list[CaseResult] = []
    for req in reqs:
        r = run_case(req, session)
        out.append(r)
        if stop_at_must_fail and r.outcome is Outcome.FAIL and req.level == "MUST":
            break
    return out


@dataclass
class MutantVerdict:
    name: str
    path: str
    defect: str
    killed_by: list[str] = field(default_factory=list)   # failed MUST cases, else SHOULDs not met (worker: see refusing)
    broken: list[str] = field(default_factory=list)
    survives: str = ""  # the written reason a mutant is allowed to survive (the spec does not pin it)

    @property
    def killed(self) -> bool:
        return bool(self.killed_by)


def judge_mutant(mutant: DeclaredMutant, *, first_only: bool = False) -> MutantVerdict:
    """Run the coordinator suite against ``mutant`` (``first_only``: until a MUST case fails)."""
    results = run_suite(load_target(mutant.reference), stop_at_must_fail=first_only)
    must = [r.requirement_id for r in results if r.outcome is Outcome.FAIL and r.level == "MUST"]
    should = [f"{r.requirement_id} (SHOULD: NON-STRICT)" for r in results if r.outcome is Outcome.NON_STRICT]
    return MutantVerdict(mutant.name, mutant.reference, mutant.defect, must or should,
                         [r.requirement_id for r in results if r.outcome is Outcome.BROKEN])
