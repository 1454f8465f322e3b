"""Suite power: every mutant in fixtures/mutants/ is caught by at least one MUST case (or,
for a defect only Apache Kafka's behaviour rules out, by a SHOULD case not met), and the
unmodified fake broker passes every case it claims (no FAIL, nothing BROKEN, no NON-STRICT)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.harness.outcomes import Outcome
from conformance.mutants import MUTANTS
from conformance.tools.suite_power import judge_mutant, mutant_files, run_suite
from conformance.harness.target import load_target

ROOT = Path(__file__).resolve().parents[2]
MUTANT_FILES = mutant_files(ROOT / "fixtures" / "mutants")


def test_every_mutant_has_a_target_file() -> None:
    named = {load_target(p).mutant for p in MUTANT_FILES}
    assert named == set(MUTANTS)


@pytest.mark.parametrize("path", MUTANT_FILES, ids=lambda p: p.stem)
def test_mutant_is_caught_by_a_must_case(path: Path) -> None:
    verdict = judge_mutant(path, first_only=True)
    assert verdict.killed, f"mutant {verdict.name} ({verdict.defect}) survived the coordinator suite"
    if verdict.name in SHOULD_ONLY:  # the catalogue audit: no specification pins the defect
        assert verdict.killed_by == [f"{SHOULD_ONLY[verdict.name]} (SHOULD: NON-STRICT)"], verdict.killed_by
    else:
        assert not any("NON-STRICT" in k for k in verdict.killed_by), verdict.killed_by


#: Mutants whose defect breaks only a SHOULD (docs/catalogue-audit.md), and the case that sees it.
SHOULD_ONLY = {"first-member-decides-protocol": "CLS-VOTE-02"}


def test_unmodified_fake_broker_passes_everything_it_claims() -> None:
    results = run_suite(load_target(ROOT / "fixtures" / "targets" / "fakebroker.toml"))
    bad = {r.requirement_id: (r.outcome.value, r.message) for r in results
           if r.outcome in (Outcome.FAIL, Outcome.BROKEN, Outcome.NON_STRICT)}
    assert bad == {}
    passed = [r for r in results if r.outcome is Outcome.PASS]
    assert len(passed) >= 60
