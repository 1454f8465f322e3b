"""LeaveGroup: single (v0-2) and batched (v3+) leaves, and what they do to the group."""

from __future__ import annotations

import pytest

from fakebroker.coordinator import MemberRemoved, RebalanceStarted, RemovalReason

from .harness import E, Harness
from .test_classic_sync import completing


@pytest.mark.parametrize("version", range(0, 3))
def test_single_member_versions(h: Harness, version: int) -> None:
    ids, gen = h.stable_group(2)
    assert h.error(h.leave("ghost", version=version)) is E.UNKNOWN_MEMBER_ID
    assert h.error(h.leave(ids[1], version=version)) is E.NONE
    assert list(h.group().members) == ids[:1]


def test_batch_with_unknown_members(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    h.take_events()
    r = h.reply(h.leave(ids[1], "ghost", ids[2], (ids[0], "not-mine"), reason="scale down"))
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        (ids[1], None, E.NONE), ("ghost", None, E.UNKNOWN_MEMBER_ID), (ids[2], None, E.NONE),
        (ids[0], "not-mine", E.UNKNOWN_MEMBER_ID)]
    assert list(h.group().members) == ids[:1]
    removed = h.take_events(MemberRemoved)
    assert [(e.member_id, e.reason, e.detail) for e in removed] == [
        (ids[1], RemovalReason.LEAVE, "scale down"), (ids[2], RemovalReason.LEAVE, "scale down")]
    started = h.take_events(RebalanceStarted)
    assert [e.reason for e in started] == [f"explicit `LeaveGroup` request for ({ids[1]}, {ids[2]}) members."]


def test_batch_of_only_unknown_members_changes_nothing(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    r = h.reply(h.leave("a", "b"))
    assert [m.error_code for m in r.members] == [E.UNKNOWN_MEMBER_ID] * 2
    assert h.state() == "Stable"


def test_empty_batch(h: Harness) -> None:
    h.stable_group(1)
    r = h.reply(h.send("LeaveGroup", 3, group_id="g", members=[]))
    assert r.error_code == 0 and r.members == []


@pytest.mark.parametrize("version", range(0, 6))
def test_empty_group_id(h: Harness, version: int) -> None:
    rid = h.leave("m", group="", version=version)
    assert h.error(rid) is E.INVALID_GROUP_ID
    if version >= 3:
        assert h.reply(rid).members == []


def test_unknown_group(h: Harness) -> None:
    r = h.reply(h.leave("a", ("", "i1")))
    assert r.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        ("a", None, E.UNKNOWN_MEMBER_ID), ("", "i1", E.UNKNOWN_MEMBER_ID)]
    assert h.error(h.leave("a", version=0)) is E.UNKNOWN_MEMBER_ID


def test_pending_member_leaving_still_counts_as_a_leave(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    pending = h.reply(h.join(client_id="c2")).member_id
    r = h.reply(h.leave(pending))
    assert r.members[0].error_code == E.NONE
    assert not h.group().is_pending(pending)
    assert ("heartbeat", "g", pending) not in h.coord.env.timers.keys()
    assert h.take_events(MemberRemoved)[-1] == MemberRemoved(
        "g", h.now, pending, None, RemovalReason.LEAVE, pending=True, detail="not provided")
    # Kafka counts it among the members that left, and so rebalances a Stable group.
    assert h.state() == "PreparingRebalance"


def test_last_member_leaving_empties_the_group(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.leave(ids[0])
    assert h.state() == "Empty"
    assert h.group().generation_id == gen + 1 and h.group().protocol_name is None
    assert h.group().leader_id is None
    assert h.coord.next_deadline() is None


def test_leave_of_the_last_holdout_completes_the_join_phase(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    j1 = h.join(ids[0], client_id="c1")
    j2 = h.join(ids[1], client_id="c2")
    assert not h.answered(j1)
    h.leave(ids[2])
    assert h.reply(j1).generation_id == gen + 1 and h.error(j2) is E.NONE


def test_leaving_member_with_a_parked_join_gets_unknown_member(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    j1 = h.join(ids[0], client_id="c1")
    h.leave(ids[0])
    assert h.error(j1) is E.UNKNOWN_MEMBER_ID and h.reply(j1).member_id == ""


def test_leave_during_completing_rebalance_sends_parked_syncs_back(h: Harness) -> None:
    ids, gen = completing(h, 3)
    parked = h.sync(ids[1], gen)
    h.leave(ids[2])
    assert h.error(parked) is E.REBALANCE_IN_PROGRESS
    assert h.state() == "PreparingRebalance"
