"""Suite power: every coordinator mutant (``fixtures/mutants/coordinators.toml``) is refused by
the case its declaration designates, that case alone, in-process (a MUST failed or, for a
defect only Apache Kafka's behaviour rules out, a SHOULD not met); the whole suite, run until
a MUST case fails, catches each one too; and the unmodified fake broker passes every case it
claims (no FAIL, nothing BROKEN, no NON-STRICT), the designated ones among them, so each kill
is the defect's doing."""

from __future__ import annotations

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.outcomes import Outcome
from conformance.harness.mutant_declarations import TARGET_DIR, DeclaredMutant, mutants_of
from conformance.mutants import GROUP_LOG_MUTANTS, MUTANTS
from conformance.tools.suite_power import judge_mutant, run_suite
from conformance.harness.target import load_target

DECLARED = mutants_of("coordinator")
IN_PROCESS = [m for m in DECLARED if not m.group_log]  # the group-log ones: tests/conformance/test_group_log.py


def test_every_declared_mutant_has_its_hooks_and_a_case_that_can_refuse_it() -> None:
    assert {m.name for m in DECLARED} == set(MUTANTS) | set(GROUP_LOG_MUTANTS)
    assert {m.name for m in DECLARED if m.group_log} == set(GROUP_LOG_MUTANTS)
    catalogue = default_catalogue()
    for m in DECLARED:
        assert catalogue[m.refused_by].level in ("MUST", "SHOULD"), m.name
        assert "coordinator" in catalogue[m.refused_by].binds, m.name
        assert load_target(m.reference).mutant == m.name


@pytest.mark.parametrize("mutant", IN_PROCESS, ids=lambda m: m.name)
def test_mutant_is_refused_by_its_designated_case(mutant: DeclaredMutant) -> None:
    [r] = run_suite(load_target(mutant.reference), ids=[mutant.refused_by])
    refused = Outcome.FAIL if r.level == "MUST" else Outcome.NON_STRICT
    assert r.outcome is refused, f"{mutant.name} ({mutant.defect}) survived {mutant.refused_by}: {r.outcome.value}"


@pytest.mark.parametrize("mutant", IN_PROCESS, ids=lambda m: m.name)
def test_mutant_is_caught_by_a_must_case(mutant: DeclaredMutant) -> None:
    verdict = judge_mutant(mutant, first_only=True)
    assert verdict.killed, f"mutant {verdict.name} ({verdict.defect}) survived the coordinator suite"
    level = default_catalogue()[mutant.refused_by].level
    if level == "SHOULD":  # the catalogue audit: no specification pins the defect
        assert verdict.killed_by == [f"{mutant.refused_by} (SHOULD: NON-STRICT)"], verdict.killed_by
    else:
        assert not any("NON-STRICT" in k for k in verdict.killed_by), verdict.killed_by


def test_unmodified_fake_broker_passes_everything_it_claims() -> None:
    results = run_suite(load_target(TARGET_DIR / "fakebroker.toml"))
    bad = {r.requirement_id: (r.outcome.value, r.message) for r in results
           if r.outcome in (Outcome.FAIL, Outcome.BROKEN, Outcome.NON_STRICT)}
    assert bad == {}
    passed = {r.requirement_id for r in results if r.outcome is Outcome.PASS}
    assert len(passed) >= 60
    assert {m.refused_by for m in IN_PROCESS} <= passed
