"""Each mutant of the draft's connect coordinator is refused by the case written for its
defect (that case alone, in-process: fast), and the same case passes on the unmodified
fake broker, so the kill is the defect's doing and not the case's."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.harness.outcomes import Outcome
from conformance.mutants import DRAFT_MUTANTS
from conformance.tools.suite_power import run_suite
from conformance.harness.target import load_target

ROOT = Path(__file__).resolve().parents[2]

#: mutant -> the MUST case that must fail on it
KILLED_BY = {
    "null-tasks-acknowledge-revocation": "C848-RECON-09",
    "assignment-metadata-dropped": "C848-RECON-10",
    "assignment-version-zeroed": "C848-RECON-10",
    "reason-change-ignored": "C848-EPOCH-07",
    "metadata-change-ignored": "C848-EPOCH-03",
    "assign-while-revoking": "C848-RECON-06",
    "stale-epoch-accepted": "C848-HB-HND-03",
    "leave-answered-with-epoch": "C848-HB-HND-05",
    "duplicate-units-accepted": "C848-VALID-01",
    "any-worker-computes": "C848-ASSIGNOR-02",
    "fenced-member-kept": "C848-HB-HND-03",
    "connect-sessions-never-expire": "C848-HB-HND-08",
    "ranges-not-checked": "C848-HB-VAL-12",
}


def test_every_draft_mutant_has_a_designated_case() -> None:
    assert set(KILLED_BY) == set(DRAFT_MUTANTS)


@pytest.mark.parametrize("name", sorted(KILLED_BY))
def test_draft_mutant_killed_by_its_case(name: str) -> None:
    case_id = KILLED_BY[name]
    [r] = run_suite(load_target(ROOT / "fixtures" / "mutants" / f"{name}.toml"), ids=[case_id])
    assert r.level == "MUST"
    assert r.outcome is Outcome.FAIL, f"{name} ({DRAFT_MUTANTS[name].defect}) survived {case_id}: {r.outcome.value}"


def test_designated_cases_pass_on_the_fake_broker() -> None:
    results = run_suite(load_target(ROOT / "fixtures" / "targets" / "fakebroker.toml"), ids=set(KILLED_BY.values()))
    assert {r.requirement_id: r.outcome for r in results} == {i: Outcome.PASS for i in KILLED_BY.values()}
