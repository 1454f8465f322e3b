"""Suite power on the worker side: every worker mutant (fixtures/mutants/workers/) is refused
by the case its worker module designates (that case alone runs: a few seconds each), and the
unmodified bundled worker passes each designated case. The full run, every case against
every mutant, is ``conformance mutants --suite worker``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.outcomes import CaseResult, Outcome
from conformance.harness.target import load_target
from conformance.tools.worker_power import declared, judge_worker_mutant, refusing, run_worker_suite, worker_mutant_files
from conformance.workers.kafka_python_worker import MUTANTS

ROOT = Path(__file__).resolve().parents[2]
FILES = worker_mutant_files(ROOT / "fixtures" / "mutants" / "workers")
BUNDLED = ROOT / "fixtures" / "targets" / "kafka-python-worker.toml"


def test_every_kafka_python_mutant_has_a_target_file_and_a_case_that_can_refuse_it() -> None:
    named = {declared(load_target(p))[0] for p in FILES}
    assert set(MUTANTS) <= named
    catalogue = default_catalogue()
    for name, m in MUTANTS.items():
        # A MAY not met is no refusal; a SHOULD not met refuses it (NON-STRICT, --strict fails).
        assert catalogue[m.killed_by].level in ("MUST", "SHOULD"), \
            f"{name} is designated to a {catalogue[m.killed_by].level} case"
        assert m.defect and not m.survives


def test_a_designated_should_case_not_met_refuses_its_mutant_and_other_should_cases_do_not() -> None:
    def result(rid: str, level: str, outcome: Outcome) -> CaseResult:
        return CaseResult(rid, level, outcome, "")

    results = [result("A", "SHOULD", Outcome.NON_STRICT), result("B", "SHOULD", Outcome.NON_STRICT),
               result("C", "MUST", Outcome.FAIL), result("D", "MUST", Outcome.PASS)]
    assert refusing(results, "A") == ["A", "C"]
    assert refusing(results, "D") == ["C"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_worker_mutant_is_refused_by_its_designated_case(path: Path) -> None:
    verdict = judge_worker_mutant(path, only_designated=True)
    assert verdict.killed or verdict.survives, (
        f"worker mutant {verdict.name} ({verdict.defect}) survived its designated case; broken: {verdict.broken}")


@pytest.mark.parametrize("designated", sorted({(m.first_case, m.killed_by) for m in MUTANTS.values()}),
                         ids=lambda d: d[0] if d[0] == d[1] else f"{d[1]} via {d[0]}")
def test_unmodified_worker_passes_the_designated_case(designated: tuple[str, str]) -> None:
    """... and every invariant over that case's exchanges (one designated to an invariant
    is judged on the rounds its case led the worker through: never a pass from silence)."""
    case, req_id = designated
    results = {r.requirement_id: r for r in run_worker_suite(load_target(BUNDLED), ids=[case])}
    assert (results[case].outcome, results[case].message) == (Outcome.PASS, "")
    assert all(r.outcome is Outcome.PASS for r in results.values()), \
        [(r.case_id, r.outcome.value, r.message) for r in results.values() if r.outcome is not Outcome.PASS]
    assert results[req_id].outcome is Outcome.PASS
