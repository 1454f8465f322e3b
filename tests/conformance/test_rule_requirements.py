"""The coordinator's rules name the catalogue requirements they enforce
(``fakebroker.coordinator.requirements.ENFORCES``), and those are the requirements the suite
checks them by: running every golden scenario on the fake broker, the rule that refuses a
scenario's request with the error its requirement states is the rule whose table entry, for
that API, names that requirement; and every entry is reached by its requirement's scenario."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.suites.coordinator.golden.generate import run
from conformance.suites.coordinator.golden.registry import GOLDENS
from fakebroker.coordinator import errors
from fakebroker.coordinator.requirements import ENFORCES
from fakebroker.protocol import default_registry

# Requirements whose scenario ends in a rule's error that is not what the requirement is
# about: the session timer removed the member, member-id-known only reports it afterwards.
NOT_THE_RULE = {"CLS-SESS-01", "CLS-SESS-03"}


@pytest.fixture(scope="module")
def refused_by() -> dict[str, dict[str, set[str]]]:
    """rule -> API -> the requirements whose golden scenario that rule refused, with the
    error the scenario expects."""
    raised: list[tuple[str, str]] = []
    original = errors.RuleViolation.__init__

    def spy(self: errors.RuleViolation, error: errors.Code, rule: str, message: str = "") -> None:
        raised.append((rule, error.name))
        original(self, error, rule, message)

    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    reg = default_registry()

    async def each() -> None:
        for rid, scenario in sorted(GOLDENS.items()):
            raised.clear()
            await run(scenario, reg)
            own = rid.split(".")[0]
            for rule, error in raised:
                if error == scenario.expect and own not in NOT_THE_RULE:
                    seen[rule][scenario.api].add(own)

    errors.RuleViolation.__init__ = spy  # type: ignore[method-assign]
    try:
        asyncio.run(each())
    finally:
        errors.RuleViolation.__init__ = original  # type: ignore[method-assign]
    return {rule: dict(apis) for rule, apis in seen.items()}


def test_every_id_a_rule_names_is_a_coordinator_requirement_of_the_catalogue() -> None:
    cat = default_catalogue()
    named = {rid for apis in ENFORCES.values() for ids in apis.values() for rid in ids}
    assert named and not {rid for rid in named if rid not in cat}
    assert all("coordinator" in cat[rid].binds for rid in named)


def test_each_rule_names_the_requirements_its_scenarios_check(refused_by: dict[str, dict[str, set[str]]]) -> None:
    table = {rule: {api: set(ids) for api, ids in apis.items()} for rule, apis in ENFORCES.items()}
    assert table == refused_by


def test_a_violation_names_its_requirement_for_the_api_that_answers_it() -> None:
    v = errors.RuleViolation(errors.ErrorCode.INVALID_GROUP_ID, "group-id-not-empty")
    assert (v.requirements("JoinGroup"), v.requirements("SyncGroup")) == (("CLS-JOIN-06",), ("CLS-SYNC-10",))
    assert errors.RuleViolation(errors.ErrorCode.COORDINATOR_NOT_AVAILABLE, "group-not-dead").requirements("JoinGroup") == ()
