"""Golden transcripts as cases: one test per rule of fixtures/golden/rules.json, the rule id
as test id, replayed against the target (see ``conformance.golden``). Collected only with
``--conformance-target`` for a coordinator suite, and only when a golden catalogue exists."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.golden import GoldenRule
from conformance.plugin import report_outcome, run_golden_rule
from conformance.target import Target

pytestmark = pytest.mark.conformance


def test_golden(golden_rule: GoldenRule, conformance_target: Target, conformance_session: Any,
                request: pytest.FixtureRequest) -> None:
    __tracebackhide__ = True
    result = run_golden_rule(request, golden_rule, conformance_target, conformance_session)
    report_outcome(result, request.config.getoption("--conformance-strict"))
