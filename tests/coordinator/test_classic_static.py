"""Static membership (KIP-345): group.instance.id, restarts without a rebalance, fencing."""

from __future__ import annotations

import pytest

from fakebroker.coordinator import (LeaderChanged, MemberJoined, MemberRemoved, RebalanceStarted,
                                    RemovalReason)

from .harness import E, Harness


def static_stable_group(h: Harness, n: int, version: int = 9) -> tuple[list[str], int]:
    """Static members i1..in (client ids c1..cn), synced; returns (member ids, generation)."""
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}", version=version) for i in range(1, n + 1)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    ids = [h.reply(r).member_id for r in rids]
    gen = h.reply(rids[0]).generation_id
    h.sync(ids[0], gen, instance="i1", assignments={m: f"A{i}".encode() for i, m in enumerate(ids, 1)})
    for i, m in enumerate(ids[1:], 2):
        h.sync(m, gen, instance=f"i{i}")
    assert h.state() == "Stable"
    return ids, gen


def test_static_member_joins_without_member_id_required(h: Harness) -> None:
    rid = h.join(client_id="c1", instance="i1", version=9)
    assert not h.answered(rid)  # parked straight away
    h.advance(3000)
    assert h.reply(rid).member_id == "i1-1"  # group.instance.id + "-" + suffix


def test_restarted_follower_keeps_its_assignment_without_rebalance(h: Harness) -> None:
    ids, gen = static_stable_group(h, 3)
    h.take_events()
    rid = h.join(client_id="c2-restarted", instance="i2")
    r = h.reply(rid)
    new_id = r.member_id
    assert new_id == "i2-4" and h.error(rid) is E.NONE
    assert (r.generation_id, r.leader, r.members, r.skip_assignment) == (gen, ids[0], [], False)
    assert h.state() == "Stable"
    assert not h.take_events(RebalanceStarted)
    sync = h.sync(new_id, gen, instance="i2")
    assert h.reply(sync).assignment == b"A2"
    assert list(h.group().members) == [ids[0], new_id, ids[2]]  # takes its predecessor's place


def test_restart_events_show_the_fenced_id_and_its_replacement(h: Harness) -> None:
    ids, gen = static_stable_group(h, 2)
    h.take_events()
    new_id = h.reply(h.join(client_id="c2", instance="i2")).member_id
    events = h.take_events()
    assert MemberRemoved("g", h.now, ids[1], "i2", RemovalReason.FENCED) in events
    assert MemberJoined("g", h.now, new_id, "i2", replaces=ids[1]) in events


@pytest.mark.parametrize("version", [5, 6, 7, 8])
def test_restarted_leader_before_v9_is_told_the_old_leader_id(h: Harness, version: int) -> None:
    ids, gen = static_stable_group(h, 2, version=version)
    rid = h.join(client_id="c1", instance="i1", version=version)
    r = h.reply(rid)
    assert r.member_id != ids[0]
    assert r.leader == ids[0]  # not itself: it does not reassign
    assert r.members == []
    assert h.group().leader_id == r.member_id  # but it is the leader now


def test_restarted_leader_from_v9_skips_assignment(h: Harness) -> None:
    ids, gen = static_stable_group(h, 2)
    h.take_events()
    r = h.reply(h.join(client_id="c1", instance="i1"))
    assert r.leader == r.member_id and r.skip_assignment is True
    assert [m.member_id for m in r.members] == [r.member_id, ids[1]]
    assert [m.group_instance_id for m in r.members] == ["i1", "i2"]
    assert LeaderChanged("g", h.now, r.member_id, ids[0]) in h.take_events()


def test_restart_with_a_protocol_change_rebalances(h: Harness) -> None:
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}",
                   protocols=(("sessioned", b""), ("compatible", b""))) for i in (1, 2)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    ids = [h.reply(r).member_id for r in rids]
    h.sync(ids[0], 1, instance="i1")
    h.sync(ids[1], 1, instance="i2")
    assert h.group().protocol_name == "sessioned"
    rid = h.join(client_id="c2", instance="i2", protocols=(("compatible", b""),))
    assert not h.answered(rid) and h.state() == "PreparingRebalance"


def test_old_instance_is_fenced_everywhere(h: Harness) -> None:
    ids, gen = static_stable_group(h, 2)
    h.join(client_id="c2", instance="i2")  # i2 restarted elsewhere
    old = ids[1]
    assert h.error(h.heartbeat(old, gen, instance="i2")) is E.FENCED_INSTANCE_ID
    assert h.error(h.sync(old, gen, instance="i2")) is E.FENCED_INSTANCE_ID
    join = h.join(old, client_id="c2", instance="i2")
    assert h.error(join) is E.FENCED_INSTANCE_ID and h.reply(join).member_id == old
    leave = h.reply(h.leave((old, "i2")))
    assert leave.members[0].error_code == E.FENCED_INSTANCE_ID
    # Without the instance id the old id is simply unknown.
    assert h.error(h.heartbeat(old, gen)) is E.UNKNOWN_MEMBER_ID


def test_unknown_instance_with_a_member_id_is_unknown(h: Harness) -> None:
    ids, gen = static_stable_group(h, 1)
    assert h.error(h.heartbeat(ids[0], gen, instance="nope")) is E.UNKNOWN_MEMBER_ID
    assert h.error(h.join(ids[0], instance="nope")) is E.UNKNOWN_MEMBER_ID


def test_restart_while_completing_rebalance_fences_the_parked_sync(h: Harness) -> None:
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}") for i in (1, 2)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    ids = [h.reply(r).member_id for r in rids]
    parked = h.sync(ids[1], 1, instance="i2")
    rejoin = h.join(client_id="c2", instance="i2")
    assert h.error(parked) is E.FENCED_INSTANCE_ID
    assert h.reply(parked).protocol_name is None
    assert h.state() == "PreparingRebalance"  # the leader may be assigning for the old id
    assert not h.answered(rejoin)
    h.join(ids[0], client_id="c1", instance="i1")
    assert h.reply(rejoin).generation_id == 2


def test_restart_while_preparing_rebalance(h: Harness) -> None:
    ids, gen = static_stable_group(h, 2)
    lead = h.join(ids[0], client_id="c1", instance="i1", protocols=(("sessioned", b"new"),))
    assert h.state() == "PreparingRebalance"
    # i2 has not rejoined yet; its process restarts and joins without an id.
    new = h.join(client_id="c2", instance="i2")
    assert h.state() == "CompletingRebalance"  # everyone has now joined
    new_id = h.reply(new).member_id
    assert new_id != ids[1] and h.reply(new).generation_id == gen + 1
    assert [m.member_id for m in h.reply(lead).members] == [ids[0], new_id]


def test_parked_join_of_replaced_instance_is_fenced(h: Harness) -> None:
    ids, gen = static_stable_group(h, 3)
    h.join(ids[0], client_id="c1", instance="i1")  # leader rejoin: rebalance
    parked_old = h.join(ids[1], client_id="c2", instance="i2")
    assert not h.answered(parked_old)  # waits for i3
    new = h.join(client_id="c2", instance="i2")
    assert h.error(parked_old) is E.FENCED_INSTANCE_ID
    assert h.reply(parked_old).member_id == ids[1] and h.reply(parked_old).leader == ""
    assert not h.answered(new)
    h.join(ids[2], client_id="c3", instance="i3")
    assert h.reply(new).generation_id == gen + 1


def test_static_member_survives_the_rebalance_timeout(h: Harness) -> None:
    ids, gen = static_stable_group(h, 2)
    t = h.now
    j1 = h.join(ids[0], client_id="c1", instance="i1")
    for _ in range(19):
        h.advance(3000)
        h.heartbeat(ids[1], gen, instance="i2")
    h.at(t + 60_000)
    # Dynamic members that miss the join phase are dropped; static ones stay.
    assert h.reply(j1).generation_id == gen + 1
    assert [m.member_id for m in h.reply(j1).members] == ids
    assert list(h.group().members) == ids


def test_admin_removes_a_static_member_by_instance_id(h: Harness) -> None:
    ids, gen = static_stable_group(h, 2)
    r = h.reply(h.leave(("", "i2"), ("", "unknown")))
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in r.members] == [
        ("", "i2", E.NONE), ("", "unknown", E.UNKNOWN_MEMBER_ID)]
    assert list(h.group().members) == [ids[0]]
    assert h.state() == "PreparingRebalance"


def test_restart_of_a_member_that_never_synced_still_rebalances_on_sync_expiry(h: Harness) -> None:
    """Kafka keeps the fenced id among the members it waits a SyncGroup from."""
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}") for i in (1, 2)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    ids = [h.reply(r).member_id for r in rids]
    t = h.now
    h.sync(ids[0], 1, instance="i1", assignments={ids[1]: b"A2"})  # Stable; i2 never synced
    new = h.reply(h.join(client_id="c2", instance="i2"))
    assert h.state() == "Stable" and new.generation_id == 1
    assert h.reply(h.sync(new.member_id, 1, instance="i2")).assignment == b"A2"
    for _ in range(19):
        h.advance(3000)
        h.heartbeat(ids[0], 1, instance="i1")
        h.heartbeat(new.member_id, 1, instance="i2")
    h.at(t + 60_000)
    assert h.state() == "PreparingRebalance"
    assert h.take_events(RebalanceStarted)[-1].reason == \
        f"Removing {[ids[1]]} on pending sync request expiration"
