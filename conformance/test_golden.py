"""Golden transcripts as cases: one test per rule of fixtures/golden/rules.json, the rule id
as test id, replayed against the target (see ``conformance.golden``). Collected only with
``--conformance-target`` for a coordinator suite, and only when a golden catalogue exists."""

from __future__ import annotations

import pytest

from conformance.golden import GoldenRule
from conformance.harness.outcomes import CaseResult
from conformance.plugin import label_and_attach_golden, report_outcome
from conformance.target import Target

pytestmark = pytest.mark.conformance


def test_golden(golden_result: CaseResult, golden_rule: GoldenRule, conformance_target: Target,
                request: pytest.FixtureRequest) -> None:
    __tracebackhide__ = True
    label_and_attach_golden(golden_result, golden_rule, conformance_target)
    report_outcome(golden_result, request.config.getoption("--conformance-strict"))
