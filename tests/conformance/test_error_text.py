"""Error codes read by name and number wherever a person reads them: case messages
(``FENCED_MEMBER_EPOCH (110)``, the draft's project-numbered codes by their names, never
"error error 1000"), and a golden replay's differences."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.context import CoordinatorContext
from conformance.harness.outcomes import Outcome, Violation
from conformance.tools.suite_power import run_suite
from conformance.harness.target import DEFAULT_ERROR_CODES, load_target
from fakebroker.protocol.error_codes import error_text
from fakebroker.intercept.matchers import compare

ROOT = Path(__file__).resolve().parents[2]
FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"


def test_error_text_names_and_numbers() -> None:
    assert error_text(110) == "FENCED_MEMBER_EPOCH (110)"
    assert error_text(0) == "NONE (0)" and error_text(-1) == "UNKNOWN_SERVER_ERROR (-1)"
    assert error_text(1000, DEFAULT_ERROR_CODES) == "COMPUTE_ASSIGNMENT (1000)"
    assert error_text(1000) == "unknown error code (1000)"
    assert error_text(2001, {"INVALID_ASSIGNMENT": 2001}) == "INVALID_ASSIGNMENT (2001)"


def context(target_path: Path) -> CoordinatorContext:
    return CoordinatorContext(load_target(target_path), default_catalogue()["C848-HB-HND-03"], "127.0.0.1:9",
                              clock=None, recording=None)  # type: ignore[arg-type]  # expect_error needs neither


def test_expect_error_names_both_codes_including_the_drafts() -> None:
    ctx = context(FAKEBROKER)
    with pytest.raises(Violation) as e:
        ctx.expect_error(SimpleNamespace(error_code=0), "COMPUTE_ASSIGNMENT", "the selected worker's answer")
    assert str(e.value) == "the selected worker's answer: expected 'COMPUTE_ASSIGNMENT (1000)', got 'NONE (0)'"
    with pytest.raises(Violation) as e:
        ctx.expect_error(SimpleNamespace(error_code=1001), 110, "a stale heartbeat")
    assert (e.value.expected, e.value.actual) == ("FENCED_MEMBER_EPOCH (110)", "INVALID_ASSIGNMENT (1001)")


def test_a_target_numbering_the_draft_codes_itself_is_read_by_its_numbers(tmp_path: Path) -> None:
    own = tmp_path / "own-numbers.toml"
    own.write_text(FAKEBROKER.read_text() + '\n[error_codes]\nCOMPUTE_ASSIGNMENT = 2000\n')
    ctx = context(own)
    ctx.expect_error(SimpleNamespace(error_code=2000), "COMPUTE_ASSIGNMENT", "answer")  # its number: no violation
    with pytest.raises(Violation, match=r"expected 'COMPUTE_ASSIGNMENT \(2000\)', got 'unknown error code \(1000\)'"):
        ctx.expect_error(SimpleNamespace(error_code=1000), "COMPUTE_ASSIGNMENT", "answer")


@pytest.mark.parametrize("mutant, case, expected, actual", [
    ("stale-epoch-accepted", "C848-HB-HND-03", "FENCED_MEMBER_EPOCH (110)", "NONE (0)"),
    ("fenced-member-kept", "C848-HB-HND-03", "UNKNOWN_MEMBER_ID (25)", "NONE (0)"),
])
def test_a_failing_case_reports_codes_by_name(mutant: str, case: str, expected: str, actual: str) -> None:
    """A real case against a real defect (the fake broker's mutants), in-process."""
    [r] = run_suite(load_target(f"mutant:{mutant}"), ids=[case])
    assert r.outcome is Outcome.FAIL
    assert (r.expected, r.actual) == (expected, actual)
    assert f"expected '{expected}', got '{actual}'" in r.message


def test_a_replay_difference_in_an_error_code_names_both() -> None:
    d = compare({"ErrorCode": 81, "Members": [{"ErrorCode": 0}]}, {"ErrorCode": 79, "Members": [{"ErrorCode": 0}]},
                None, {})
    assert d is not None and d.path == "ErrorCode"
    assert str(d).endswith("expected GROUP_MAX_SIZE_REACHED (81), got MEMBER_ID_REQUIRED (79)")
    d = compare({"Members": [{"ErrorCode": 1000}]}, {"Members": [{"ErrorCode": 0}]}, None, {})
    assert d is not None and str(d).endswith("expected COMPUTE_ASSIGNMENT (1000), got NONE (0)")
    d = compare({"GenerationId": 81}, {"GenerationId": 79}, None, {})  # other numbers stay numbers
    assert d is not None and str(d).endswith("expected 81, got 79")
