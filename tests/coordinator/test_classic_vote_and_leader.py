"""Protocol selection by vote, and the choice of leader."""

from __future__ import annotations

import pytest

from fakebroker.coordinator import ClassicGroup, ClassicMember, LeaderChanged, ProtocolMetadata
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.coordinator.env import Env
from fakebroker.protocol import default_registry

from .harness import E, Harness


def chosen(h: Harness, *prefs: tuple[str, ...]) -> str:
    rids = [h.new_member(f"c{i}", protocols=tuple((p, p.encode()) for p in names))[1]
            for i, names in enumerate(prefs, 1)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    names = {h.reply(r).protocol_name for r in rids}
    assert len(names) == 1
    leader = h.reply(rids[0])
    # The leader gets each member's metadata for the chosen protocol.
    assert [m.metadata for m in leader.members] == [names.copy().pop().encode()] * len(prefs)
    return names.pop()


@pytest.mark.parametrize("prefs,expected", [
    ((("A", "B"), ("B", "A"), ("B",)), "B"),                 # only B is supported by all
    ((("A", "B"), ("A", "B"), ("B", "A")), "A"),             # most votes
    ((("B", "A"), ("B", "A"), ("A", "B")), "B"),
    ((("A", "B"), ("B", "A")), "A"),                         # tie: the smaller name
    ((("B", "A"), ("A", "B")), "A"),
    ((("Z", "Y"), ("Y", "Z")), "Y"),
    ((("sessioned", "compatible", "default"),) * 2 + (("compatible", "default"),), "compatible"),
    ((("sessioned", "compatible", "default"),) * 3, "sessioned"),
])
def test_vote(h: Harness, prefs: tuple[tuple[str, ...], ...], expected: str) -> None:
    assert chosen(h, *prefs) == expected


def test_vote_changes_when_the_last_old_member_leaves(h: Harness) -> None:
    ids, gen = h.stable_group(1, protocols=(("compatible", b""), ("default", b"")))
    new, j = h.new_member("c2", protocols=(("sessioned", b""), ("compatible", b"")))
    h.join(ids[0], client_id="c1", protocols=(("compatible", b""), ("default", b"")))
    assert h.reply(j).protocol_name == "compatible"
    h.sync(ids[0], gen + 1)
    h.sync(new, gen + 1)
    h.leave(ids[0])  # the group is now only the upgraded member
    j2 = h.join(new, client_id="c2", protocols=(("sessioned", b""), ("compatible", b"")))
    assert h.reply(j2).protocol_name == "sessioned"


def test_select_protocol_of_an_empty_group_is_an_error() -> None:
    g = ClassicGroup("g", Env(default_registry(), CoordinatorConfig()))
    with pytest.raises(ValueError):
        g.select_protocol()


def test_member_vote_without_candidates_is_an_error() -> None:
    m = ClassicMember("m", None, "c", "/h", 1, 1, "t", (ProtocolMetadata("a", b""),))
    with pytest.raises(ValueError):
        m.vote(frozenset({"b"}))
    with pytest.raises(KeyError):
        m.metadata("b")


def test_first_member_to_join_leads(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    assert h.group().leader_id == ids[0]
    assert [e.leader_id for e in h.take_events(LeaderChanged)] == [ids[0]]


def test_leader_stays_leader_across_rebalances(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    # Followers rejoin first; the leader still leads.
    j3 = h.join(ids[2], client_id="c3", protocols=(("sessioned", b"new"),))
    j2 = h.join(ids[1], client_id="c2")
    j1 = h.join(ids[0], client_id="c1")
    assert {h.reply(j).leader for j in (j1, j2, j3)} == {ids[0]}
    assert h.reply(j3).members == [] and len(h.reply(j1).members) == 3


def test_leader_that_did_not_rejoin_is_replaced_by_the_first_that_did(h: Harness) -> None:
    """Static members are kept through a join phase they miss; a leader among them loses
    the leadership to the first member that did rejoin."""
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}") for i in (1, 2, 3)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    ids = [h.reply(r).member_id for r in rids]
    for i, m in enumerate(ids, 1):
        h.sync(m, 1, instance=f"i{i}")
    t = h.now
    j3 = h.join(ids[2], client_id="c3", instance="i3", protocols=(("sessioned", b"x"),))
    for _ in range(19):
        h.advance(3000)
        for i, m in enumerate(ids[:2], 1):
            h.heartbeat(m, 1, instance=f"i{i}")
    h.take_events()
    h.at(t + 60_000)
    assert h.reply(j3).leader == ids[2]
    assert [m.member_id for m in h.reply(j3).members] == ids
    assert h.take_events(LeaderChanged) == [LeaderChanged("g", t + 60_000, ids[2], ids[0])]


def test_join_phase_is_retried_when_nobody_rejoined(h: Harness) -> None:
    first = h.join(client_id="c1", instance="i1")
    h.advance(3000)
    static_id = h.reply(first).member_id
    h.sync(static_id, 1, instance="i1")
    newcomer, j = h.new_member("c2")  # rebalance; the static member does not rejoin
    h.leave(newcomer)                  # nobody is left waiting
    assert h.error(j) is E.UNKNOWN_MEMBER_ID
    t = h.now
    for _ in range(40):
        h.advance(3000)
        h.heartbeat(static_id, 1, instance="i1")
    assert h.now > t + 60_000
    assert h.state() == "PreparingRebalance"  # still: the completion was rescheduled
    # Rescheduled every rebalance timeout (60 s), at t+60 s and t+120 s so far.
    assert h.now == t + 120_000
    assert h.coord.env.timers.deadline(("join", "g")) == t + 180_000
    rejoin = h.join(static_id, client_id="c1", instance="i1")
    assert h.reply(rejoin).generation_id == 2 and h.state() == "CompletingRebalance"
