"""Each mutant of the draft reference worker (``fixtures/mutants/workers/draft-*.toml``) is
refused by the case designated for its defect, that case alone, and the same cases pass
on the unmodified reference worker (so the kill is the defect's doing). Real processes on
real time: about 2-6 s a case."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance import suites
from conformance.harness.cases import load_cases
from conformance.harness.outcomes import CaseResult, Outcome
from conformance.harness.runner import run_case
from conformance.harness.worker import WorkerSession
from conformance.harness.target import load_target
from conformance.workers.draft_worker import MUTANTS

load_cases(suites)  # run_case finds each live case in the registry the suites fill

ROOT = Path(__file__).resolve().parents[2]
MUTANT_DIR = ROOT / "fixtures" / "mutants" / "workers"


def run_cases(path: Path, ids: set[str]) -> dict[str, CaseResult]:
    target = load_target(path)
    session = WorkerSession.start(target)
    try:
        return {req.id: run_case(req, session) for req in default_catalogue().for_suite("worker") if req.id in ids}
    finally:
        session.stop()


def test_every_draft_worker_mutant_has_a_target_naming_it() -> None:
    files = {p.stem for p in MUTANT_DIR.glob("draft-*.toml")}
    assert files == set(MUTANTS)
    for name in MUTANTS:
        assert load_target(MUTANT_DIR / f"{name}.toml").command.endswith(f"--mutant {name}")


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_draft_worker_mutant_killed_by_its_case(name: str) -> None:
    case_id = MUTANTS[name].killed_by
    r = run_cases(MUTANT_DIR / f"{name}.toml", {case_id})[case_id]
    assert r.level == "MUST"
    assert r.outcome is Outcome.FAIL, \
        f"{name} ({MUTANTS[name].defect}) survived {case_id}: {r.outcome.value} {r.message}"


def test_designated_cases_pass_on_the_reference_worker() -> None:
    ids = {m.killed_by for m in MUTANTS.values()}
    results = run_cases(ROOT / "fixtures" / "targets" / "draft-worker.toml", ids)
    assert set(results) == ids
    assert {i: (r.outcome.value, r.message) for i, r in results.items() if r.outcome is not Outcome.PASS} == {}
