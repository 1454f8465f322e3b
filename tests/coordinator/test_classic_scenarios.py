"""Whole rebalances, start to end, as a Connect group sees them."""

from __future__ import annotations

from fakebroker.coordinator import (GenerationChanged, GroupEvent, LeaderChanged, MemberRemoved,
                                    RebalanceStarted, RemovalReason, StateChanged)

from .harness import E, Harness


def test_three_members_join_sync_heartbeat(h: Harness) -> None:
    ids = []
    rejoins = []
    for i in (1, 2, 3):
        mid, rid = h.new_member(f"c{i}", protocols=(("sessioned", f"m{i}".encode()),))
        ids.append(mid)
        rejoins.append(rid)
    assert ids == ["c1-1", "c2-2", "c3-3"]
    assert h.state() == "PreparingRebalance"
    assert not any(h.answered(r) for r in rejoins)  # parked during the initial delay

    # group.initial.rebalance.delay.ms (3000) runs from the first member's join; members
    # arriving meanwhile extend it by another delay.
    h.advance(3000)
    assert not any(h.answered(r) for r in rejoins)
    h.advance(2999)
    assert not any(h.answered(r) for r in rejoins)
    h.advance(1)
    replies = [h.reply(r) for r in rejoins]
    assert h.state() == "CompletingRebalance"
    assert {r.generation_id for r in replies} == {1}
    assert {r.leader for r in replies} == {"c1-1"}
    assert {r.protocol_name for r in replies} == {"sessioned"}
    assert [r.member_id for r in replies] == ids
    # Only the leader sees the members and their metadata, in join order.
    assert [(m.member_id, m.metadata) for m in replies[0].members] == [
        ("c1-1", b"m1"), ("c2-2", b"m2"), ("c3-3", b"m3")]
    assert replies[1].members == [] and replies[2].members == []

    # Followers sync first: parked until the leader's assignment arrives.
    f2 = h.sync("c2-2", 1)
    f3 = h.sync("c3-3", 1)
    assert not h.answered(f2) and not h.answered(f3)
    lead = h.sync("c1-1", 1, assignments={"c1-1": b"A1", "c2-2": b"A2", "c3-3": b"A3"})
    assert h.state() == "Stable"
    assert [h.reply(r).assignment for r in (lead, f2, f3)] == [b"A1", b"A2", b"A3"]
    assert all(h.error(r) is E.NONE for r in (lead, f2, f3))

    # Heartbeats keep everyone in, well past the session timeout.
    for _ in range(10):
        h.advance(3000)
        for mid in ids:
            assert h.error(h.heartbeat(mid, 1)) is E.NONE
    assert h.state() == "Stable"
    assert list(h.group().members) == ids


def test_leader_leaving_hands_leadership_to_the_oldest_member(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    h.take_events()
    assert h.error(h.leave(ids[0])) is E.NONE
    assert h.state() == "PreparingRebalance"
    events = h.take_events()
    assert LeaderChanged("g", h.now, "c2-2", "c1-1") in events
    assert any(isinstance(e, MemberRemoved) and e.reason is RemovalReason.LEAVE for e in events)

    # The others learn through heartbeats and rejoin; the join completes once both have.
    assert h.error(h.heartbeat(ids[1], gen)) is E.REBALANCE_IN_PROGRESS
    j2 = h.join(ids[1], client_id="c2")
    assert not h.answered(j2)
    j3 = h.join(ids[2], client_id="c3")
    assert h.reply(j2).generation_id == gen + 1
    assert h.reply(j2).leader == "c2-2" == h.reply(j3).leader
    assert [m.member_id for m in h.reply(j2).members] == ["c2-2", "c3-3"]


def test_follower_session_expiry_rebalances_the_rest(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    h.take_events()
    # c1 and c2 heartbeat, c3 falls silent.
    for _ in range(3):
        h.advance(3000)
        h.heartbeat(ids[0], gen)
        h.heartbeat(ids[1], gen)
    h.advance(999)
    assert "c3-3" in h.group().members
    h.advance(1)
    events = h.take_events()
    # The session clock restarted when the join phase ended (t=6000): it ends at 16000.
    assert h.now == 16_000
    assert MemberRemoved("g", 16_000, "c3-3", None, RemovalReason.SESSION_TIMEOUT) in events
    assert any(isinstance(e, RebalanceStarted) for e in events)
    assert h.state() == "PreparingRebalance"
    assert list(h.group().members) == ids[:2]

    j1 = h.join(ids[0], client_id="c1")
    j2 = h.join(ids[1], client_id="c2")
    assert h.reply(j1).generation_id == gen + 1 and h.error(j2) is E.NONE
    assert h.state() == "CompletingRebalance"


def test_rebalance_timeout_removes_a_slow_member(h: Harness) -> None:
    ids, gen = h.stable_group(3, rebalance=20_000)
    j1 = h.join(ids[0], client_id="c1", rebalance=20_000)  # leader rejoin forces a rebalance
    t0 = h.now
    j2 = h.join(ids[1], client_id="c2", rebalance=20_000)
    # c3 keeps heartbeating (told to rejoin) but never does.
    for _ in range(6):
        h.advance(3000)
        assert h.error(h.heartbeat(ids[2], gen)) is E.REBALANCE_IN_PROGRESS
    assert not h.answered(j1)
    h.at(t0 + 20_000)  # the group's rebalance timeout (the largest of its members')
    assert h.reply(j1).generation_id == gen + 1
    assert [m.member_id for m in h.reply(j1).members] == ids[:2]
    assert h.error(j2) is E.NONE
    removed = [e for e in h.take_events(MemberRemoved)]
    assert [(e.member_id, e.reason) for e in removed][-1] == ("c3-3", RemovalReason.REBALANCE_TIMEOUT)
    assert h.error(h.heartbeat(ids[2], gen)) is E.UNKNOWN_MEMBER_ID


def test_events_trace_a_whole_rebalance(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    states = [(e.previous, e.state) for e in h.take_events(StateChanged)]
    assert states == [("Empty", "PreparingRebalance"), ("PreparingRebalance", "CompletingRebalance"),
                      ("CompletingRebalance", "Stable")]
    h.leave(ids[1])
    h.join(ids[0], client_id="c1")
    gens = h.take_events(GenerationChanged)
    assert [(g.generation_id, g.protocol_name) for g in gens] == [(1, "sessioned"), (2, "sessioned")]


def test_same_script_same_outcome() -> None:
    def run() -> tuple[list[object], list[GroupEvent]]:
        h = Harness()
        ids, gen = h.stable_group(3)
        h.leave(ids[1])
        h.advance(5000)
        h.join(ids[0], client_id="c1")
        h.advance(70_000)
        return [h.inbox[k] for k in sorted(h.inbox)], h.events
    assert run() == run()
