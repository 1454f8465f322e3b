"""The suite as pytest sees it: one test per requirement (per Connect sub-protocol on a worker
target), the case id as test id.

Collected only with ``--conformance-target`` (see ``conformance.plugin``); the case runs in the test
body (``run_requirement``), so that the test's duration is the case's; a BROKEN case is an error.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.plugin import report_outcome, run_requirement
from conformance.harness.scope import RequirementRun
from conformance.harness.target import Target

pytestmark = pytest.mark.conformance


def test_requirement(requirement_run: RequirementRun, conformance_target: Target, conformance_session: Any,
                     request: pytest.FixtureRequest) -> None:
    __tracebackhide__ = True
    result = run_requirement(request, requirement_run, conformance_target, conformance_session)
    report_outcome(result, request.config.getoption("--conformance-strict"))
