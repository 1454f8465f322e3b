"""Invariants of the engine under random histories (hypothesis), on virtual time.

Each history is a list of steps over up to five members: heartbeats (some with the
response lost, some with a stale or future epoch), late releases of revoked units,
leaves, time jumps past session and rebalance timeouts, unit-set changes and forced
bumps. After every step: no unit held by two members, live clients own only what the
engine attributes to them, epochs never go back, no response revokes and assigns at
once, error responses change nothing. At the end: the log and its compacted form
rebuild an equal state, and once every member heartbeats honestly the group converges.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from .world import REBALANCE_MS, SESSION_MS, World

EXAMPLES = int(os.environ.get("RECONCILE_EXAMPLES", "1000"))

MEMBERS = st.integers(min_value=0, max_value=4)
STEP = st.one_of(
    st.tuples(st.just("beat"), MEMBERS),
    st.tuples(st.just("beat"), MEMBERS),
    st.tuples(st.just("beat"), MEMBERS),
    st.tuples(st.just("lost"), MEMBERS),
    st.tuples(st.just("stale"), MEMBERS, st.sampled_from([-3, -1, 1, 2])),
    st.tuples(st.just("release"), MEMBERS),
    st.tuples(st.just("leave"), MEMBERS),
    st.tuples(st.just("tick"), st.sampled_from(
        [1, 500, 2_000, REBALANCE_MS + 1, SESSION_MS // 2, SESSION_MS + 1])),
    st.tuples(st.just("units"), st.integers(0, 5)),
    st.tuples(st.just("bump")),
)
HISTORY = st.lists(STEP, min_size=1, max_size=40)


def run(world: World, history: list[tuple]) -> None:
    for step in history:
        kind = step[0]
        if kind == "beat":
            world.beat(step[1])
        elif kind == "lost":
            world.beat(step[1], lose=True)
        elif kind == "stale":
            if world.client(step[1]).joined:
                world.beat(step[1], epoch_shift=step[2])
        elif kind == "release":
            world.release(step[1])
        elif kind == "leave":
            world.leave(step[1])
        elif kind == "tick":
            world.tick(step[1])
        elif kind == "units":
            world.change_units(step[1])
        elif kind == "bump":
            world.bump()
        world.check()
    world.check_rebuild()
    world.heal()
    world.check_rebuild()
    for name in sorted(world.seen):
        event(name)


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(HISTORY)
def test_uniform_consumer_group(history: list[tuple]) -> None:
    run(World("uniform"), history)


@SETTINGS
@given(HISTORY)
def test_range_consumer_group(history: list[tuple]) -> None:
    run(World("range"), history)


@SETTINGS
@given(HISTORY)
def test_connect_group(history: list[tuple]) -> None:
    run(World("connect"), history)


@SETTINGS
@given(HISTORY, st.sampled_from(["uniform", "connect"]))
def test_without_rejoin_at_epoch_zero(history: list[tuple], flavor: str) -> None:
    """Kafka before KAFKA-19233: a known member's epoch-0 rejoin is fenced; the group
    still converges (the member is removed at its session timeout, then rejoins)."""
    run(World(flavor, rejoin_at_zero=False), history)
