"""The suite as pytest sees it: one test per requirement (per Connect sub-protocol on a worker
target), the case id as test id.

Collected only with ``--conformance-target`` (see ``conformance.plugin``); the case itself runs in the
``conformance_result`` fixture, so that a BROKEN case is a pytest error.
"""

from __future__ import annotations

import pytest

from conformance.catalogue import Requirement
from conformance.harness.outcomes import CaseResult
from conformance.plugin import label_and_attach, report_outcome
from conformance.target import Target

pytestmark = pytest.mark.conformance


def test_requirement(conformance_result: CaseResult, requirement: Requirement,
                     conformance_target: Target, request: pytest.FixtureRequest) -> None:
    __tracebackhide__ = True
    label_and_attach(conformance_result, requirement, conformance_target)
    report_outcome(conformance_result, request.config.getoption("--conformance-strict"))
