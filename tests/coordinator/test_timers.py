"""The timer system's contract, transition by transition, and against a plain model.

``Timers`` keeps one heap candidate per timer and moves a postponed timer's candidate only
when it reaches the top, so each test pins the order and the deadlines a caller sees
whatever the heap holds."""

from __future__ import annotations

import random

import pytest

from fakebroker.coordinator.timers import Timers


def drain(t: Timers[str], now_ms: int) -> list[tuple[int, str]]:
    return list(t.due(now_ms))


def test_postponing_pushes_nothing_and_fires_at_the_new_deadline() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a1")
    t.schedule("b", 15, "b")
    heap_before = len(t._heap)
    for deadline in range(11, 40):
        t.schedule("a", deadline, f"a@{deadline}")
    assert len(t._heap) == heap_before  # O(1): only the timer moved
    assert t.deadline("a") == 39
    assert t.next_deadline() == 15  # the stale candidate at 10 is not a deadline
    assert drain(t, 38) == [(15, "b")]
    assert drain(t, 39) == [(39, "a@39")]
    assert t.keys() == [] and t.next_deadline() is None


def test_scheduling_earlier_replaces_the_candidate() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 50, "late")
    t.schedule("b", 30, "b")
    t.schedule("a", 20, "early")
    assert t.next_deadline() == 20 and t.deadline("a") == 20
    assert drain(t, 100) == [(20, "early"), (30, "b")]  # the orphan at 50 never fires


def test_same_deadline_fires_in_scheduling_order_even_after_a_postponement() -> None:
    """Re-scheduling a key to the deadline it already has moves it behind timers
    scheduled in between (scheduling order is that of the last schedule)."""
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a")
    t.schedule("b", 10, "b")
    t.schedule("a", 10, "a again")
    t.schedule("c", 10, "c")
    assert drain(t, 10) == [(10, "b"), (10, "a again"), (10, "c")]


def test_postponed_timer_keeps_order_against_one_scheduled_meanwhile() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a")
    t.schedule("b", 20, "b")
    t.schedule("a", 20, "a at 20")   # after b at the same deadline
    t.schedule("c", 15, "c")
    assert drain(t, 20) == [(15, "c"), (20, "b"), (20, "a at 20")]


def test_cancel_then_schedule_again_forgets_the_old_timer() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "old")
    t.cancel("a")
    t.cancel("a")  # cancelling twice, or an unknown key, is a no-op
    t.cancel("nobody")
    assert t.deadline("a") is None and t.next_deadline() is None
    t.schedule("a", 30, "new")
    assert t.pop_due(20) is None
    assert t.pop_due(30) == (30, "new")
    assert t.pop_due(30) is None  # the orphan at 10 is gone with it


def test_cancel_of_a_postponed_timer() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a")
    t.schedule("a", 40, "a later")
    t.schedule("b", 20, "b")
    t.cancel("a")
    assert t.next_deadline() == 20
    assert drain(t, 100) == [(20, "b")]


def test_cancel_where_keeps_the_rest_in_order() -> None:
    t: Timers[str] = Timers()
    for i, key in enumerate([("x", "g1"), ("y", "g1"), ("x", "g2"), ("y", "g2")]):
        t.schedule(key, 100 - i, f"{key[0]}{key[1]}")
    t.schedule(("x", "g2"), 200, "xg2 later")  # postponed, then its group survives
    t.cancel_where(lambda k: k[1] == "g1")  # type: ignore[index]
    assert sorted(t.keys()) == [("x", "g2"), ("y", "g2")]  # type: ignore[type-var]
    assert drain(t, 500) == [(97, "yg2"), (200, "xg2 later")]


def test_a_timer_due_now_fires_now() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a")
    assert t.pop_due(9) is None
    assert t.pop_due(10) == (10, "a")


def test_due_refuses_to_go_back_and_includes_timers_scheduled_meanwhile() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a")
    fired = []
    for deadline, value in t.due(10):
        fired.append(value)
        if value == "a":
            t.schedule("b", 10, "b")   # due at the same instant: fires in this pass
            t.schedule("c", 11, "c")   # not yet
    assert fired == ["a", "b"]
    with pytest.raises(ValueError, match="time went backwards: 9 < 10"):
        drain(t, 9)
    assert drain(t, 11) == [(11, "c")]


def test_orphans_are_dropped_once_they_outnumber_timers() -> None:
    """Scheduling earlier and cancelling leave orphans; the heap is rebuilt before they
    pile up, and the order is unchanged by it."""
    t: Timers[str] = Timers()
    keys = [f"k{i}" for i in range(20)]
    for round_ in range(100):
        for i, k in enumerate(keys):
            t.schedule(k, 10_000 - round_ * 50 - i, f"{k}@{round_}")  # earlier each time
        t.cancel(keys[round_ % 20])
        t.schedule(keys[round_ % 20], 20_000 + round_, f"back {round_}")
        assert len(t._heap) <= 2 * len(t.keys()) + 64 + 1
    fired = drain(t, 10**6)
    assert [d for d, _ in fired] == sorted(d for d, _ in fired)
    assert len(fired) == 20 and t.keys() == []


class Model:
    """The contract, naively: every live timer, the earliest (deadline, seq) first."""

    def __init__(self) -> None:
        self.timers: dict[str, tuple[int, int, str]] = {}
        self.seq = 0

    def schedule(self, key: str, deadline: int, value: str) -> None:
        self.seq += 1
        self.timers[key] = (deadline, self.seq, value)

    def pop_due(self, now: int) -> tuple[int, str] | None:
        if not self.timers:
            return None
        key = min(self.timers, key=lambda k: self.timers[k][:2])
        deadline, _, value = self.timers[key]
        if deadline > now:
            return None
        del self.timers[key]
        return deadline, value

    def next_deadline(self) -> int | None:
        return min((d for d, _, _ in self.timers.values()), default=None)


@pytest.mark.parametrize("seed", range(8))
def test_against_the_model(seed: int) -> None:
    """Random schedules (later, earlier, same), cancels and pops, mostly postponements as
    heartbeats make them: every observable answer matches the model."""
    rng = random.Random(seed)
    t: Timers[str] = Timers()
    m = Model()
    now = 0
    keys = [f"m{i}" for i in range(rng.choice([3, 30, 300]))]
    for step in range(4000):
        op = rng.random()
        key = rng.choice(keys)
        if op < 0.6:
            deadline = now + rng.choice([0, 1, 5, 50, 500])
            t.schedule(key, deadline, f"{key}#{step}")
            m.schedule(key, deadline, f"{key}#{step}")
        elif op < 0.7:
            t.cancel(key)
            m.timers.pop(key, None)
        elif op < 0.72:
            prefix = rng.choice("m1")
            t.cancel_where(lambda k: str(k).startswith(prefix))
            for k in [k for k in m.timers if k.startswith(prefix)]:
                del m.timers[k]
        else:
            now += rng.choice([0, 1, 3, 20])
            fired = list(t.due(now))
            expected = []
            while (due := m.pop_due(now)) is not None:
                expected.append(due)
            assert fired == expected, step
        assert t.next_deadline() == m.next_deadline(), step
        assert t.deadline(key) == (m.timers[key][0] if key in m.timers else None)
        assert sorted(t.keys()) == sorted(m.timers)  # type: ignore[type-var]
        assert len(t._heap) <= 2 * len(m.timers) + 64 + 1


def test_idle_until_moves_time_only_when_nothing_is_due() -> None:
    t: Timers[str] = Timers()
    t.schedule("a", 10, "a1")
    t.schedule("a", 30, "a2")  # postponed: its stale candidate at 10 is not due
    assert t.idle_until(20)
    assert not t.idle_until(30)  # due at 30: time stays at 20, ``due`` fires it
    with pytest.raises(ValueError, match="backwards"):
        t.idle_until(19)
    assert drain(t, 30) == [(30, "a2")]
    assert t.idle_until(1000)
    with pytest.raises(ValueError, match="backwards"):
        drain(t, 999)
