"""A coordinator mutant is installed on the broker it is given (hooks, or a patch of that
broker's own coordinator), so it keeps the broker's topics and connect store."""

from __future__ import annotations

import pytest

from conformance.mutants import GROUP_LOG_MUTANTS, MUTANTS, apply_mutant
from fakebroker.coordinator import RequestContext
from fakebroker.coordinator.reconcile.records import InMemoryRecordStore
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig, Topic
from fakebroker.testing.requests import join_fields


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


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_mutant_coordinator_answers_the_way_the_broker_calls_it(name: str) -> None:
    """A first JoinGroup without a member id, handed over as the broker's serving path does
    (with the body's prepared view), is handled, not a crash: a wrapper that drops an
    argument fails every request, and the suite would count the crash as a kill. (It is
    answered MEMBER_ID_REQUIRED, or parked for the initial delay by no-member-id-required.)"""
    b = broker()
    apply_mutant(b, name)
    mt = b.coordinator.registry["JoinGroupRequest"]
    body = mt.new(**join_fields(b.coordinator.registry, "g", "", 9, session=10_000, rebalance=60_000,
                                protocols=(("range", b""),), protocol_type="consumer", instance=None,
                                reason=None))
    ctx = RequestContext(1, mt.api_key, 9, "c", "127.0.0.1")
    prepared = b.coordinator.prepare(mt.api_key, 9, body)
    result = b.coordinator.handle(ctx, body, 0, prepared)
    assert result.replies == ()
    if name == "no-member-id-required":
        assert result.reply is None
    else:
        assert result.reply is not None and result.reply.error_code == ErrorCode.MEMBER_ID_REQUIRED  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted({**MUTANTS, **GROUP_LOG_MUTANTS}))
def test_a_mutant_changes_the_coordinator_through_its_extension_points_only(name: str) -> None:
    """No mutant patches a method: after it is installed, no attribute of the coordinator or
    its rebalancer shadows a method of its class, and the classes it chose are subclasses
    of the ones the coordinator offers (a group's class is never swapped afterwards)."""
    from fakebroker.coordinator import ConnectGroup
    from fakebroker.coordinator.classic.group import ClassicGroup
    from fakebroker.coordinator.classic.rebalance import Rebalancer

    b = broker()
    apply_mutant(b, name)
    coord = b.coordinator
    for obj in (coord, coord.rebalancer):
        shadowed = sorted(n for n in vars(obj) if callable(getattr(type(obj), n, None)))
        assert shadowed == [], f"{name} replaced method(s) {shadowed} of {type(obj).__name__}"
    assert issubclass(type(coord.rebalancer), Rebalancer)
    assert issubclass(coord.classic_group_class, ClassicGroup)
    assert issubclass(coord.connect_group_class, ConnectGroup)
    group = coord.create_classic_group("g")
    assert type(group) is coord.classic_group_class
