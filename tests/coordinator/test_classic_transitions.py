"""Every state transition of the classic group, and every trigger of each.

The table pairs a starting state (built by a short script) with one input and the state
the group must be in afterwards; the recorded StateChanged events must show exactly that
path. The allowed transitions themselves are Kafka's ClassicGroupState table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

import pytest

from fakebroker.coordinator import ClassicGroup, ClassicGroupState, StateChanged
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.coordinator.env import Env
from fakebroker.protocol import default_registry

from .harness import Harness
from .test_classic_sync import completing

S = ClassicGroupState

KAFKA_TRANSITIONS = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.STABLE, S.PREPARING_REBALANCE), (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
} | {(s, S.DEAD) for s in S}


@pytest.mark.parametrize("previous,state", list(product(S, S)), ids=lambda s: s.value)
def test_allowed_transitions_are_kafkas(previous: ClassicGroupState, state: ClassicGroupState) -> None:
    assert state.can_follow(previous) is ((previous, state) in KAFKA_TRANSITIONS)


def test_a_forbidden_transition_raises() -> None:
    g = ClassicGroup("g", Env(default_registry(), CoordinatorConfig()))
    with pytest.raises(ValueError):
        g.transition_to(S.STABLE)
    assert g.state is S.EMPTY


# ---------------------------------------------------------------------- starting points

@dataclass
class Start:
    h: Harness
    ids: list[str]
    gen: int


def empty() -> Start:
    return Start(Harness(), [], 0)


def empty_with_history() -> Start:
    h = Harness()
    ids, gen = h.stable_group(2)
    h.leave(*ids)
    return Start(h, ids, gen + 1)


def preparing_initial() -> Start:
    h = Harness()
    mid, _ = h.new_member("c1")
    return Start(h, [mid], 0)


def preparing() -> Start:
    h = Harness()
    ids, gen = h.stable_group(2)
    h.join(ids[0], client_id="c1")
    return Start(h, ids, gen)


def completing_rebalance() -> Start:
    h = Harness()
    ids, gen = completing(h, 2)
    return Start(h, ids, gen)


def stable() -> Start:
    h = Harness()
    ids, gen = h.stable_group(2)
    return Start(h, ids, gen)


def static_stable(protocols: tuple[tuple[str, bytes], ...] = (("sessioned", b""),)) -> Start:
    h = Harness()
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}", protocols=protocols) for i in (1, 2)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    ids = [h.reply(r).member_id for r in rids]
    h.sync(ids[0], 1, instance="i1")
    h.sync(ids[1], 1, instance="i2")
    return Start(h, ids, 1)


def static_completing() -> Start:
    h = Harness()
    rids = [h.join(client_id=f"c{i}", instance=f"i{i}") for i in (1, 2)]
    h.run_until(lambda: all(h.answered(r) for r in rids))
    return Start(h, [h.reply(r).member_id for r in rids], 1)


def keep_alive(s: Start, until: int, *members: str) -> None:
    """Heartbeat ``members`` every 3 s until ``until`` ms, then move the clock there."""
    while s.h.now + 3000 < until:
        s.h.advance(3000)
        for m in members:
            s.h.heartbeat(m, s.gen)
    s.h.at(until)


Action = Callable[[Start], object]


def leave_then_wait_for_the_delay(s: Start) -> None:
    s.h.leave(s.ids[0])
    s.h.advance(3000)


def rejoined_leader_leaves_and_the_follower_never_rejoins(s: Start) -> None:
    s.h.leave(s.ids[0])
    keep_alive(s, s.h.now + 60_000, s.ids[1])  # the join phase ends, dropping c2


def follower_syncs_leader_never_does(s: Start) -> None:
    s.h.sync(s.ids[1], s.gen)
    keep_alive(s, s.h.now + 60_000, *s.ids)

CASES: list[tuple[str, Callable[[], Start], Action, list[str]]] = [  # (name, start, input, path)
    # Empty
    ("first member joins (v3)", empty, lambda s: s.h.join(version=3), ["PreparingRebalance"]),
    ("first member rejoins with its id", empty,
     lambda s: s.h.new_member(), ["PreparingRebalance"]),
    ("first static member joins", empty, lambda s: s.h.join(instance="i"), ["PreparingRebalance"]),
    ("member id required", empty, lambda s: s.h.join(), []),
    ("inconsistent protocol", empty, lambda s: s.h.join(protocols=()), []),
    ("simple offset commit", empty, lambda s: s.h.send(
        "OffsetCommit", 9, group_id="g", member_id="", topics=[]), []),
    ("member rejoins an emptied group", empty_with_history,
     lambda s: s.h.new_member(), ["PreparingRebalance"]),
    ("unload empty", empty_with_history, lambda s: s.h.mark_dead(), ["Dead"]),
    # PreparingRebalance
    ("initial delay expires", preparing_initial, lambda s: s.h.advance(3000), ["CompletingRebalance"]),
    ("only member leaves during the initial delay", preparing_initial,
     leave_then_wait_for_the_delay, ["Empty"]),
    ("last member rejoins", preparing, lambda s: s.h.join(s.ids[1], client_id="c2"),
     ["CompletingRebalance"]),
    ("last holdout leaves", preparing, lambda s: s.h.leave(s.ids[1]), ["CompletingRebalance"]),
    ("holdout's session expires", preparing, lambda s: s.h.advance(10_000), ["CompletingRebalance"]),
    ("rebalance timeout with a rejoined member", preparing,
     lambda s: keep_alive(s, s.h.now + 60_000, s.ids[1]), ["CompletingRebalance"]),
    ("rebalance timeout, everybody left", preparing,
     rejoined_leader_leaves_and_the_follower_never_rejoins, ["Empty"]),
    ("heartbeat", preparing, lambda s: s.h.heartbeat(s.ids[1], s.gen), []),
    ("new member joins", preparing, lambda s: s.h.new_member("c3"), []),
    ("unload preparing", preparing, lambda s: s.h.mark_dead(), ["Dead"]),
    # CompletingRebalance
    ("leader syncs", completing_rebalance,
     lambda s: s.h.sync(s.ids[0], s.gen), ["Stable"]),
    ("follower syncs", completing_rebalance, lambda s: s.h.sync(s.ids[1], s.gen), []),
    ("heartbeat while completing", completing_rebalance,
     lambda s: s.h.heartbeat(s.ids[1], s.gen), []),
    ("same-metadata rejoin", completing_rebalance,
     lambda s: s.h.join(s.ids[1], client_id="c2"), []),
    ("changed-metadata rejoin", completing_rebalance,
     lambda s: s.h.join(s.ids[1], client_id="c2", protocols=(("sessioned", b"new"),)),
     ["PreparingRebalance"]),
    ("new member rejoins with its id", completing_rebalance,
     lambda s: s.h.new_member("c3"), ["PreparingRebalance"]),
    ("member leaves while completing", completing_rebalance,
     lambda s: s.h.leave(s.ids[1]), ["PreparingRebalance"]),
    ("session expires while completing", completing_rebalance,
     lambda s: keep_alive(s, s.h.now + 10_000, s.ids[0]), ["PreparingRebalance"]),
    ("every session expires while completing", completing_rebalance,
     lambda s: s.h.advance(10_000), ["PreparingRebalance", "Empty"]),
    ("sync timeout", completing_rebalance,
     follower_syncs_leader_never_does,
     ["PreparingRebalance"]),
    ("static member restarts while completing", static_completing,
     lambda s: s.h.join(client_id="c2", instance="i2"), ["PreparingRebalance"]),
    ("unload completing", completing_rebalance, lambda s: s.h.mark_dead(), ["Dead"]),
    # Stable
    ("leader rejoins", stable, lambda s: s.h.join(s.ids[0], client_id="c1"), ["PreparingRebalance"]),
    ("follower rejoins with new metadata", stable,
     lambda s: s.h.join(s.ids[1], client_id="c2", protocols=(("sessioned", b"new"),)),
     ["PreparingRebalance"]),
    ("follower rejoins unchanged", stable, lambda s: s.h.join(s.ids[1], client_id="c2"), []),
    ("new member asks for an id", stable, lambda s: s.h.join(client_id="c3"), []),
    ("new member joins (v3)", stable, lambda s: s.h.join(client_id="c3", version=3),
     ["PreparingRebalance"]),
    ("follower leaves", stable, lambda s: s.h.leave(s.ids[1]), ["PreparingRebalance"]),
    ("all leave", stable, lambda s: s.h.leave(*s.ids), ["PreparingRebalance", "Empty"]),
    ("follower session expires", stable,
     lambda s: keep_alive(s, s.h.now + 10_000, s.ids[0]), ["PreparingRebalance"]),
    ("every session expires", stable, lambda s: s.h.advance(10_000),
     ["PreparingRebalance", "Empty"]),
    ("heartbeat, sync and commit", stable,
     lambda s: (s.h.heartbeat(s.ids[1], s.gen), s.h.sync(s.ids[1], s.gen),
                s.h.send("OffsetCommit", 9, group_id="g", generation_id_or_member_epoch=s.gen,
                         member_id=s.ids[1], topics=[])), []),
    ("static restart, same protocol", static_stable,
     lambda s: s.h.join(client_id="c2", instance="i2"), []),
    ("static restart, new protocols, same choice", static_stable,
     lambda s: s.h.join(client_id="c2", instance="i2", protocols=(("sessioned", b""), ("x", b""))),
     []),
    ("static restart changes the protocol choice",
     lambda: static_stable((("sessioned", b""), ("compatible", b""))),
     lambda s: s.h.join(client_id="c2", instance="i2", protocols=(("compatible", b""),)),
     ["PreparingRebalance"]),
    ("unload stable", stable, lambda s: s.h.mark_dead(), ["Dead"]),
]


@pytest.mark.parametrize("name,start,action,path", CASES, ids=[c[0] for c in CASES])
def test_transition(name: str, start: Callable[[], Start], action: Action, path: list[str]) -> None:
    s = start()
    before = state_of(s.h)
    s.h.take_events()
    action(s)
    states = [e.state for e in s.h.take_events(StateChanged)]  # type: ignore[attr-defined]
    assert states == path
    assert state_of(s.h) == (path[-1] if path else before)


def state_of(h: Harness) -> str:
    # A group that does not exist yet is created Empty by the first request that needs it.
    group = h.coord.groups.get("g")
    return group.state_name if group is not None else "Empty"
