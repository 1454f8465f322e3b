"""A coordinator mutant is installed on the broker it is given (hooks, or a patch of that
broker's own coordinator), so it keeps the broker's topics and connect store."""

from __future__ import annotations

import pytest

from conformance.mutants import GROUP_LOG_MUTANTS, MUTANTS, apply_mutant
from fakebroker.coordinator.reconcile.records import InMemoryRecordStore
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig, Topic


def broker() -> FakeBroker:
    return FakeBroker(BrokerConfig(topics=[Topic("events", 3)]), connect_store=InMemoryRecordStore())


@pytest.mark.parametrize("name", sorted({**MUTANTS, **GROUP_LOG_MUTANTS}))
def test_mutant_runs_on_the_broker_it_is_given(name: str) -> None:
    b = broker()
    coordinator, store = b.coordinator, b.connect_store
    apply_mutant(b, name)
    assert b.coordinator is coordinator
    assert b.coordinator.cluster.partition_count("events") == 3
    mutant = {**MUTANTS, **GROUP_LOG_MUTANTS}[name]
    hooks = [h for h in b.hooks if h.name == f"mutant:{name}"]
    assert len(hooks) == len(mutant.on_request) + len(mutant.on_response)
    assert hooks or mutant.patch is not None
    if name in GROUP_LOG_MUTANTS:  # its records pass a filter on their way to the same store
        assert getattr(b.coordinator.connect_store, "store", None) is store
    else:
        assert b.coordinator.connect_store is store


def test_unknown_mutant_is_named_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown mutant 'nope'; known: .*heartbeat-ok-while-rebalancing"):
        apply_mutant(broker(), "nope")
