"""The initial rebalance delay and the coordinator's virtual clock."""

from __future__ import annotations

import pytest

from fakebroker.coordinator.timers import Timers

from .harness import E, Harness, make_config


def test_single_member_waits_exactly_the_initial_delay(h: Harness) -> None:
    mid, j = h.new_member()
    assert h.coord.next_deadline() == 3000
    h.at(2999)
    assert not h.answered(j)
    h.at(3000)
    assert h.error(j) is E.NONE


def test_initial_delay_is_configurable() -> None:
    h = Harness(make_config(initial_rebalance_delay_ms=500))
    mid, j = h.new_member()
    h.at(500)
    assert h.error(j) is E.NONE


def test_zero_initial_delay_completes_within_the_request() -> None:
    h = Harness(make_config(initial_rebalance_delay_ms=0))
    mid, j = h.new_member()
    assert h.error(j) is E.NONE and h.state() == "CompletingRebalance"


def test_joins_extend_the_delay_up_to_the_rebalance_timeout() -> None:
    """delay 3000, rebalance timeout 10000: extensions at 3000, 6000 and 9000 (the last one
    cut to the 1000 ms Kafka's arithmetic leaves), completion at 10000."""
    h = Harness()
    joins, deadlines = [], []
    for t in (0, 1000, 4000, 7000, 9500):
        h.at(t)
        joins.append(h.new_member(f"c{t}", rebalance=10_000)[1])
        deadlines.append(h.coord.env.timers.deadline(("join", "g")))
    assert deadlines == [3000, 3000, 6000, 9000, 10_000]
    h.at(9999)
    assert not h.answered(joins[0])
    h.at(10_000)
    assert all(h.error(j) is E.NONE for j in joins)
    assert len(h.reply(joins[0]).members) == 5


def test_no_join_during_the_delay_means_no_extension(h: Harness) -> None:
    _, j1 = h.new_member("c1")
    h.at(3000)
    assert h.error(j1) is E.NONE


def test_initial_delay_applies_only_to_an_empty_group(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    j = h.join(ids[0], client_id="c1")  # Stable -> PreparingRebalance: no delay
    assert h.error(j) is E.NONE


def test_empty_after_a_generation_gets_the_delay_again(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.leave(ids[0])
    t = h.now
    mid, j = h.new_member("again")
    h.at(t + 2999)
    assert not h.answered(j)
    h.at(t + 3000)
    assert h.reply(j).generation_id == gen + 2


def test_timer_due_at_a_request_fires_first(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    deadline = h.coord.env.timers.deadline(("heartbeat", "g", ids[0]))
    assert deadline is not None
    h.now = deadline  # no tick: the request itself brings the clock to the deadline
    assert h.error(h.heartbeat(ids[0], gen)) is E.UNKNOWN_MEMBER_ID


def test_time_never_goes_backwards(h: Harness) -> None:
    h.at(100)
    with pytest.raises(ValueError):
        h.coord.tick(99)


def test_events_are_stamped_with_their_timer_deadline(h: Harness) -> None:
    mid, j = h.new_member()
    h.at(50_000)  # one tick, long after the delay ended
    completion = [e for e in h.events if getattr(e, "state", None) == "CompletingRebalance"]
    assert completion[0].at_ms == 3000


def test_next_deadline_is_none_when_idle(h: Harness) -> None:
    assert h.coord.next_deadline() is None
    assert h.coord.tick(1_000_000).replies == ()


# ---------------------------------------------------------------------- Timers unit

def test_timers_order_and_replacement() -> None:
    fired: list[str] = []
    t = Timers()
    t.schedule("a", 10, lambda: fired.append("a"))
    t.schedule("b", 10, lambda: fired.append("b"))
    t.schedule("c", 5, lambda: fired.append("c"))
    t.schedule("a", 20, lambda: fired.append("a2"))  # replaces "a"
    t.cancel("missing")
    assert t.next_deadline() == 5 and t.deadline("a") == 20
    while (due := t.pop_due(100)) is not None:
        due[1]()
    assert fired == ["c", "b", "a2"]
    assert t.next_deadline() is None and t.keys() == []


def test_rescheduled_timers_do_not_pile_up_and_keep_their_order() -> None:
    """Every heartbeat reschedules its member's timer further out: the replaced entries
    are dropped once they outnumber the live ones, and the order stays right."""
    fired: list[str] = []
    t = Timers()
    members = [f"m{i}" for i in range(50)]
    for beat in range(200):
        for i, m in enumerate(members):
            t.schedule(m, 1000 + beat * 10 + (49 - i), lambda m=m: fired.append(m))
    assert len(t._heap) <= 2 * len(members) + 64 + 1
    while (due := t.pop_due(10**6)) is not None:
        due[1]()
    assert fired == members[::-1]  # the last reschedule of each, by its deadline


def test_timers_cancel_where() -> None:
    t = Timers()
    for k in [("x", "g1"), ("y", "g1"), ("x", "g2")]:
        t.schedule(k, 1, lambda: None)
    t.cancel_where(lambda k: isinstance(k, tuple) and k[1] == "g1")
    assert t.keys() == [("x", "g2")]
    assert t.pop_due(0) is None
