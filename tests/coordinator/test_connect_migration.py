"""Migration between a classic ``connect`` group and the draft's connect group type
(``fakebroker/coordinator/migration.py``, decisions M1-M8), through the codec on a virtual
clock. Errors compare the group's state before and after."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.coordinator.events import (GroupCreated, GroupDeleted, GroupEpochChanged,
                                           MemberRemoved)
from fakebroker.coordinator.modern import ConnectGroup

from .harness import REG, make_config
from .modern import D, E, ModernHarness, connect_assignor, names
from .test_connect_group import snapshot

META = REG["ConnectProtocolMetadata"]
ASG = REG["ConnectProtocolAssignment"]
CA = ASG.cls.ConnectorAssignment  # type: ignore[attr-defined]


def meta(version: int, allocation: bytes | None = None) -> bytes:
    if version == 0:
        return META.encode_versioned(META.new(url="http://w:8083", config_offset=5), 0)
    return META.encode_versioned(META.new(url="http://w:8083", config_offset=5,
                                          allocation=allocation), version)


def asg(version: int, assigned: dict[str, list[int]],
        revoked: dict[str, list[int]] | None = None) -> bytes:
    fields: dict[str, Any] = dict(error=0, leader="l", leader_url="http://l:8083", config_offset=5,
                                  assignment=[CA(connector=c, tasks=t) for c, t in assigned.items()])
    if version >= 1:
        fields["revoked"] = (None if revoked is None
                             else [CA(connector=c, tasks=t) for c, t in revoked.items()])
    return ASG.encode_versioned(ASG.new(**fields), version)


@pytest.fixture
def h() -> ModernHarness:
    return ModernHarness(config=make_config())


def classic_connect(h: ModernHarness, version: int = 2) -> tuple[list[str], int]:
    """Two classic workers, c1 running A (connector, task 0) and c2 running B (connector,
    task 0) after their last SyncGroup; Stable."""
    name = {0: "default", 1: "compatible", 2: "sessioned"}[version]
    return h.stable_group(2, protocols=((name, meta(version)),), assignments={
        0: asg(version, {"A": [-1, 0]}), 1: asg(version, {"B": [-1, 0]})})


def owned(h: ModernHarness, member: str) -> set[str]:
    g = h.connect()
    return names(frozenset(g.engine.member(member).current.assigned))


@pytest.mark.parametrize("version", [0, 1, 2])
def test_upgrade_from_stable_carries_members_and_epoch(h, version) -> None:
    (c1, c2), gen = classic_connect(h, version)
    h.take_events()
    # M5: the worker must support the classic protocol's name and version.
    name = {0: "default", 1: "compatible", 2: "sessioned"}[version]
    r = h.connect_hb("w1", 0, assignors=[connect_assignor(name)])
    # The joiner is at the current target's epoch (it has nothing there yet).
    assert (r.error_code, r.member_epoch) == (D.COMPUTE_ASSIGNMENT, gen)
    g = h.connect()
    assert g.engine.group_epoch == gen + 1          # M3: generation, +1 for the join
    assert g.engine.assignment_epoch == gen
    assert owned(h, c1) == {"AC0", "AT1"} and owned(h, c2) == {"BC0", "BT1"}
    assert g.engine.member(c1).current.member_epoch == gen
    assert g.engine.selected_member == "w1"         # M5: never a classic member
    events = h.take_events()
    assert events[0] == GroupDeleted("g", h.now, "classic", "connect")
    assert events[1] == GroupCreated("g", h.now, "connect")
    # The new worker installs a target moving B to itself; c2 is asked to revoke.
    assert h.install("w1", gen + 1, {c1: ("AC0", "AT1"), c2: (), "w1": ("BC0", "BT1")}
                     ).error_code == 0


def test_incremental_assignment_decodes_allocation_plus_new_minus_revoked(h) -> None:
    alloc = asg(2, {"A": [-1, 0, 1], "C": [0]})
    (c1,), gen = h.stable_group(1, protocols=(("sessioned", meta(2, alloc)),), assignments={
        0: asg(2, {"B": [-1]}, revoked={"A": [1]})})
    h.connect_hb("w1", 0)
    assert owned(h, c1) == {"AC0", "AT1", "CT1", "BC0"}


def test_upgrade_outside_stable_is_retriable_and_changes_nothing(h) -> None:
    (c1, c2), gen = classic_connect(h)
    h.join(c1, protocols=(("sessioned", meta(2)),))   # c1 rejoins: PreparingRebalance
    assert h.state() == "PreparingRebalance"
    before = snapshot(h)
    r = h.connect_hb("w1", 0)
    assert E(r.error_code) is E.REBALANCE_IN_PROGRESS
    assert snapshot(h) == before and h.group().type == "classic"


def test_malformed_embedded_protocol_keeps_the_classic_group(h) -> None:
    h.stable_group(1)                                  # metadata b"meta", assignment b"a1"
    before = snapshot(h)
    r = h.connect_hb("w1", 0)
    assert E(r.error_code) is E.GROUP_ID_NOT_FOUND
    assert snapshot(h) == before


def test_incompatible_assignor_keeps_the_classic_group(h) -> None:
    classic_connect(h)                                 # sessioned = version 2
    before = snapshot(h)
    r = h.connect_hb("w1", 0, assignors=[connect_assignor("sessioned", 0, 1)])
    assert E(r.error_code) is E.UNSUPPORTED_ASSIGNOR
    assert snapshot(h) == before


def test_other_protocol_type_still_group_id_not_found(h) -> None:
    h.stable_group(1, protocol_type="consumer")
    before = snapshot(h)
    assert E(h.connect_hb("w1", 0).error_code) is E.GROUP_ID_NOT_FOUND
    assert snapshot(h) == before


def test_classic_requests_of_carried_over_members(h) -> None:
    (c1, c2), gen = classic_connect(h)
    h.connect_hb("w1", 0)
    h.take_events()
    # M7: heartbeat and sync say rebalance, and change nothing.
    before = snapshot(h)
    assert h.error(h.heartbeat(c1, gen)) is E.REBALANCE_IN_PROGRESS
    assert h.error(h.sync(c1, gen, protocol_type="connect", protocol_name="sessioned")) \
        is E.REBALANCE_IN_PROGRESS
    assert snapshot(h) == before
    # A rejoin with its id removes it and releases its work.
    assert h.error(h.join(c1, protocols=(("sessioned", meta(2)),))) is E.UNKNOWN_MEMBER_ID
    assert not h.connect().engine.has_member(c1)
    assert any(isinstance(e, MemberRemoved) and e.member_id == c1 for e in h.take_events())
    # Without an id, while new-protocol workers remain: not a classic group.
    assert h.error(h.join(protocols=(("sessioned", meta(2)),))) is E.INCONSISTENT_GROUP_PROTOCOL
    # Others' ids keep the old answers.
    assert h.error(h.heartbeat("nobody", gen)) is E.UNKNOWN_MEMBER_ID


def test_downgrade_when_the_last_new_protocol_worker_leaves(h) -> None:
    (c1, c2), gen = classic_connect(h)
    h.connect_hb("w1", 0)
    epoch = h.connect().engine.group_epoch
    h.take_events()
    assert h.connect_hb("w1", -1).member_epoch == -1
    g = h.group()
    assert g.type == "classic" and g.protocol_type == "connect"
    events = h.take_events()
    bumped = [e.epoch for e in events if isinstance(e, GroupEpochChanged)]
    assert bumped == [epoch + 1]                        # the leave bumps the group epoch
    epoch += 1
    assert g.generation_id == epoch                     # M8: generation = group epoch
    assert g.state_name == "PreparingRebalance" and list(g.members) == [c1, c2]
    i = next(i for i, e in enumerate(events) if isinstance(e, GroupDeleted))
    assert events[i:i + 2] == [GroupDeleted("g", h.now, "connect", "classic"),
                               GroupCreated("g", h.now, "classic")]
    # The classic workers rejoin and complete a classic rebalance.
    assert h.error(h.heartbeat(c1, epoch)) is E.REBALANCE_IN_PROGRESS
    rids = [h.join(m, protocols=(("sessioned", meta(2)),)) for m in (c1, c2)]
    assert all(h.answered(r) for r in rids)
    assert h.reply(rids[0]).generation_id == epoch + 1


def test_carried_over_members_expire_without_migrating(h) -> None:
    (c1, c2), gen = classic_connect(h)
    h.connect_hb("w1", 0)
    h.advance(h.coord.config.connect_session_timeout_ms - 1)
    h.connect_hb("w1")
    assert h.connect().engine.has_member(c1)
    h.advance(1)
    g = h.connect()
    assert not g.engine.has_member(c1) and not g.engine.has_member(c2)
    assert g.engine.member_ids() == ("w1",)


def test_empty_classic_group_continues_its_generation(h) -> None:
    (c1,), gen = h.stable_group(1)
    h.leave(c1)
    generation = h.coord.classic_group("g").generation_id
    assert h.connect_hb("w1", 0).error_code == D.COMPUTE_ASSIGNMENT
    g = h.connect()
    assert isinstance(g, ConnectGroup) and g.engine.group_epoch == generation + 1
    assert not g.classic_members
