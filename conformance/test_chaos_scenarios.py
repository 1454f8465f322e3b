"""The chaos scenarios of the target file (``[chaos] scenarios``): one test each, its file's
name as test id (``conformance.chaos.regression``). Collected only when the target names
some (``conformance.plugin``); before the requirements' module, since each lasts a minute or
more and a run on several processes had better start them first."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.plugin import report_outcome, run_scenario_case
from conformance.harness.target import Target

pytestmark = pytest.mark.conformance


def test_scenario(scenario_path: Path, conformance_target: Target, request: pytest.FixtureRequest) -> None:
    __tracebackhide__ = True
    report_outcome(run_scenario_case(request, scenario_path, conformance_target),
                   request.config.getoption("--conformance-strict"))
