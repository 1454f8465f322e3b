"""Suite power on the worker side: every worker mutant (``fixtures/mutants/workers.toml``) is
refused by the case its declaration designates (that case alone runs: a few seconds each),
and the unmodified bundled worker passes each designated case. The full run, every case
against every mutant, is ``conformance mutants --suite worker``."""

from __future__ import annotations

import importlib

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.outcomes import CaseResult, Outcome
from conformance.harness.mutant_declarations import TARGET_DIR, DeclaredMutant, mutants_of
from conformance.harness.target import load_target
from conformance.tools.worker_power import judge_worker_mutant, refusing, run_worker_suite

MUTANTS = mutants_of("worker")


def test_every_declared_worker_mutant_is_a_defect_its_worker_implements_and_a_case_can_refuse() -> None:
    """The declaration and the workers' ``--mutant`` switches name the same defects, each
    designated to a case that can refuse it."""
    catalogue = default_catalogue()
    implemented: dict[str, set[str]] = {}
    for m in MUTANTS:
        module = load_target(m.reference).command.split(" -m ")[1].split()[0]
        implemented.setdefault(module, set(importlib.import_module(module).MUTANTS))
        # A MAY not met is no refusal; a SHOULD not met refuses it (NON-STRICT, --strict fails).
        assert catalogue[m.refused_by].level in ("MUST", "SHOULD"), \
            f"{m.name} is designated to a {catalogue[m.refused_by].level} case"
        assert m.defect and not m.survives
        assert m.first_case in catalogue
    for module, names in implemented.items():
        assert names == {m.name for m in MUTANTS if f" -m {module} " in load_target(m.reference).command}, module


def test_a_worker_mutant_is_its_base_worker_with_the_defect_switched_on() -> None:
    for m in MUTANTS:
        base, target = load_target(TARGET_DIR / f"{m.base}.toml"), load_target(m.reference)
        assert target.command == f"{base.command} --mutant {m.name}"
        assert (target.kind, target.capabilities) == (base.kind, base.capabilities)
        assert target.connect_protocol == m.target.get("connect_protocol", base.connect_protocol)


def test_a_designated_should_case_not_met_refuses_its_mutant_and_other_should_cases_do_not() -> None:
    def result(rid: str, level: str, outcome: Outcome) -> CaseResult:
        return CaseResult(rid, level, outcome, "")

    results = [result("A", "SHOULD", Outcome.NON_STRICT), result("B", "SHOULD", Outcome.NON_STRICT),
               result("C", "MUST", Outcome.FAIL), result("D", "MUST", Outcome.PASS)]
    assert refusing(results, "A") == ["A", "C"]
    assert refusing(results, "D") == ["C"]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_worker_mutant_is_refused_by_its_designated_case(mutant: DeclaredMutant) -> None:
    verdict = judge_worker_mutant(mutant, only_designated=True)
    assert verdict.killed or verdict.survives, (
        f"worker mutant {verdict.name} ({verdict.defect}) survived its designated case; broken: {verdict.broken}")
    assert mutant.refused_by in verdict.killed_by, verdict.killed_by


def _designated() -> list[object]:
    """Each (base, case, requirement) some mutant is designated to: the unmodified base must
    pass it, or that mutant's refusal would not be its defect's doing."""
    return [pytest.param((base, case, req_id), id=f"{base}-{case}" if case == req_id else f"{base}-{req_id} via {case}")
            for base, case, req_id in sorted({(m.base, m.first_case, m.refused_by) for m in MUTANTS})]


@pytest.mark.parametrize("designated", _designated())
def test_unmodified_worker_passes_the_designated_case(designated: tuple[str, str, str]) -> None:
    """... and every invariant over that case's exchanges (one designated to an invariant
    is judged on the rounds its case led the worker through: never a pass from silence)."""
    base, case, req_id = designated
    results = {r.requirement_id: r for r in run_worker_suite(load_target(TARGET_DIR / f"{base}.toml"), ids=[case])}
    assert (results[case].outcome, results[case].message) == (Outcome.PASS, "")
    assert all(r.outcome is Outcome.PASS for r in results.values()), \
        [(r.case_id, r.outcome.value, r.message) for r in results.values() if r.outcome is not Outcome.PASS]
    assert results[req_id].outcome is Outcome.PASS
