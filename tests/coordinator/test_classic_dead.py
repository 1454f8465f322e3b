"""A Dead group (Kafka: unloaded from this coordinator) answers COORDINATOR_NOT_AVAILABLE."""

from __future__ import annotations

import pytest

from fakebroker.coordinator import StateChanged

from .harness import E, Harness
from .test_classic_sync import completing


def test_unloading_preparing_rebalance_answers_parked_joins(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    j1 = h.join(ids[0], client_id="c1")
    h.mark_dead()
    assert h.error(j1) is E.NOT_COORDINATOR and h.reply(j1).member_id == ids[0]
    assert h.state() == "Dead"
    assert h.coord.next_deadline() is None  # its timers are gone


def test_unloading_completing_rebalance_answers_parked_syncs(h: Harness) -> None:
    ids, gen = completing(h, 2)
    s2 = h.sync(ids[1], gen)
    h.mark_dead()
    assert h.error(s2) is E.NOT_COORDINATOR


@pytest.mark.parametrize("setup", ["empty", "preparing", "completing", "stable", "dead"])
def test_every_state_can_die(h: Harness, setup: str) -> None:
    if setup == "empty":
        h.join()
    elif setup == "preparing":
        h.new_member()
    elif setup == "completing":
        completing(h, 1)
    else:
        h.stable_group(1)
        if setup == "dead":
            h.mark_dead()
    before = h.state()
    h.take_events()
    h.mark_dead()
    assert h.take_events(StateChanged) == [StateChanged("g", h.now, before, "Dead")]


def test_mark_dead_needs_a_classic_group(h: Harness) -> None:
    with pytest.raises(KeyError):
        h.mark_dead("nope")


@pytest.fixture
def dead(h: Harness) -> tuple[Harness, list[str], int]:
    ids, gen = h.stable_group(2)
    h.mark_dead()
    return h, ids, gen


def test_join(dead: tuple[Harness, list[str], int]) -> None:
    h, ids, gen = dead
    new = h.join()
    assert h.error(new) is E.COORDINATOR_NOT_AVAILABLE and h.reply(new).member_id == ""
    old = h.join(ids[0], client_id="c1")
    assert h.error(old) is E.COORDINATOR_NOT_AVAILABLE and h.reply(old).member_id == ids[0]


def test_sync_heartbeat_leave(dead: tuple[Harness, list[str], int]) -> None:
    h, ids, gen = dead
    assert h.error(h.sync(ids[0], gen)) is E.COORDINATOR_NOT_AVAILABLE
    assert h.error(h.heartbeat(ids[0], gen)) is E.COORDINATOR_NOT_AVAILABLE
    r = h.reply(h.leave(ids[0]))
    assert (r.error_code, r.members) == (E.COORDINATOR_NOT_AVAILABLE, [])
    assert h.error(h.leave(ids[0], version=0)) is E.COORDINATOR_NOT_AVAILABLE


def test_describe_and_list(dead: tuple[Harness, list[str], int]) -> None:
    h, ids, gen = dead
    d = h.describe("g").groups[0]
    assert (d.error_code, d.group_state, [m.member_id for m in d.members]) == (0, "Dead", ids)
    assert [(g.group_id, g.group_state) for g in h.list_groups().groups] == [("g", "Dead")]


def test_time_passing_changes_nothing(dead: tuple[Harness, list[str], int]) -> None:
    h, ids, gen = dead
    h.advance(10_000_000)
    assert h.state() == "Dead" and list(h.group().members) == ids
