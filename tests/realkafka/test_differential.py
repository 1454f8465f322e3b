"""Differential checks: every classic (and consumer) group scenario runs against Apache
Kafka 4.2.0 and against the fake broker alike; any difference not listed in
fixtures/accepted-differences.yaml fails, and so does a listed one that no longer occurs."""

from __future__ import annotations

import pytest

from fakebroker.realkafka import RealKafka
from fakebroker.realkafka.differential import (load_accepted, render_report, run_differential,
                                               stale, unaccepted)
from fakebroker.realkafka.scenarios import SCENARIOS
from fakebroker.server.thread import BrokerThread

pytestmark = pytest.mark.realkafka
ACCEPTED = load_accepted()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fake_answers_like_kafka(name: str, real_kafka: RealKafka, fake_twin: BrokerThread) -> None:
    result = run_differential(SCENARIOS[name], name, real_kafka.bootstrap, fake_twin.bootstrap)
    # The scenario itself must have run on Kafka: every step answered, no broken flow.
    assert result.real.steps, f"{name} sent nothing"
    unanswered = [s.title() for s in result.real.steps if s.response is None]
    assert result.real.aborted is None and not unanswered, (
        f"the scenario is broken on Kafka itself: {result.real.aborted or unanswered}\n"
        + render_report(result))
    bad = unaccepted(result.differences, ACCEPTED)
    old = stale(ACCEPTED, result)
    assert not bad and not old, render_report(result, bad, old)


def test_every_exact_entry_names_a_scenario() -> None:
    names = set(SCENARIOS)
    for a in ACCEPTED:
        if not any(c in a.scenario for c in "*?"):
            assert a.scenario in names, f"{a.id}: no scenario {a.scenario!r}"
