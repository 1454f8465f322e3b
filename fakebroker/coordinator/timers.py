"""Deadlines in virtual time, fired in a deterministic order: the one timer system of the
coordinator's state machines (the coordinator's ``Env.timers`` holds actions; each
reconciliation engine holds its members' session and rebalance deadlines).

One time convention: time is an int of milliseconds that every input carries, and it only
moves forward (``due`` refuses to go back). Like Kafka's coordinator timer, scheduling a key
that is already scheduled replaces it. Timers fire in (deadline, scheduling order) order; a
timer due at the same instant as a request fires before the request is handled (Kafka
expires at ``now >= deadline``).

Cost: every heartbeat pushes its member's session deadline further out, so moving a timer
*later* is O(1) and allocates nothing. The heap holds one candidate entry per timer, never
later than the timer itself; a candidate that reaches the top and turns out to be stale is
moved to the timer's real deadline then (once per stretch of postponements, not once per
postponement). Only scheduling a timer *earlier* pushes a new candidate (log n).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

TimerKey = Hashable
T = TypeVar("T")


class _Timer(Generic[T]):
    """A live timer, and the (deadline, seq) of its candidate in the heap."""

    __slots__ = ("deadline_ms", "seq", "value", "queued_ms", "queued_seq")

    def __init__(self, deadline_ms: int, seq: int, value: T) -> None:
        self.deadline_ms = self.queued_ms = deadline_ms
        self.seq = self.queued_seq = seq
        self.value = value


class Timers(Generic[T]):
    """Keyed deadlines, each with a value (what to do, or what it is about)."""

    def __init__(self) -> None:
        # Candidates (deadline, seq, key): tuples compare in C, and seq is unique, so keys
        # are never compared. A candidate is current when its seq is its timer's
        # ``queued_seq``; any other (its timer cancelled, or scheduled earlier since) is an
        # orphan, dropped when it reaches the top or when orphans outnumber timers.
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._by_key: dict[TimerKey, _Timer[T]] = {}
        self._seq = itertools.count()
        self._now: int | None = None  # the latest time ``due`` moved to

    def schedule(self, key: TimerKey, deadline_ms: int, value: T) -> None:
        seq = next(self._seq)
        timer = self._by_key.get(key)
        if timer is None:
            self._by_key[key] = _Timer(deadline_ms, seq, value)
        elif timer.queued_ms <= deadline_ms:
            # As late or later: its candidate still comes first; nothing to push.
            timer.deadline_ms, timer.seq, timer.value = deadline_ms, seq, value
            return
        else:  # earlier: a new candidate, the old one becomes an orphan
            timer.deadline_ms = timer.queued_ms = deadline_ms
            timer.seq = timer.queued_seq = seq
            timer.value = value
        if len(self._heap) > 2 * len(self._by_key) + 64:
            self._rebuild()  # drops the orphans; queues this timer too
        else:
            heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: TimerKey) -> None:
        self._by_key.pop(key, None)  # its candidate becomes an orphan

    def cancel_where(self, pred: Callable[[TimerKey], bool]) -> None:
        for key in [k for k in self._by_key if pred(k)]:
            self.cancel(key)

    def deadline(self, key: TimerKey) -> int | None:
        timer = self._by_key.get(key)
        return timer.deadline_ms if timer else None

    def next_deadline(self) -> int | None:
        self._settle()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> tuple[int, T] | None:
        """The earliest timer due at ``now_ms`` (removed), or None."""
        self._settle()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        timer = self._by_key.pop(key)
        return timer.deadline_ms, timer.value

    def move_to(self, now_ms: int) -> None:
        """Time is now ``now_ms``: never earlier than before."""
        if self._now is not None and now_ms < self._now:
            raise ValueError(f"time went backwards: {now_ms} < {self._now}")
        self._now = now_ms

    def idle_until(self, now_ms: int) -> bool:
        """If no timer is due by ``now_ms``, move time there and return True (most inputs:
        no generator made); else return False with time unmoved (``due`` fires them)."""
        self._settle()
        if self._heap and self._heap[0][0] <= now_ms:
            return False
        self.move_to(now_ms)
        return True

    def due(self, now_ms: int) -> Iterator[tuple[int, T]]:
        """Move time to ``now_ms``, then pop every timer due by then, in order (timers
        scheduled meanwhile included)."""
        self.move_to(now_ms)
        while (due := self.pop_due(now_ms)) is not None:
            yield due

    def keys(self) -> list[TimerKey]:
        return list(self._by_key)

    def _settle(self) -> None:
        """Make the top of the heap a timer's real (deadline, seq): drop orphans, move a
        postponed timer's candidate to its deadline."""
        heap = self._heap
        while heap:
            _, seq, key = heap[0]
            timer = self._by_key.get(key)
            if timer is None or timer.queued_seq != seq:
                heapq.heappop(heap)
            elif timer.seq != seq:
                timer.queued_ms, timer.queued_seq = timer.deadline_ms, timer.seq
                heapq.heapreplace(heap, (timer.deadline_ms, timer.seq, key))
            else:
                return

    def _rebuild(self) -> None:
        self._heap = [(t.deadline_ms, t.seq, k) for k, t in self._by_key.items()]
        for t in self._by_key.values():
            t.queued_ms, t.queued_seq = t.deadline_ms, t.seq
        heapq.heapify(self._heap)
