"""Deadlines in virtual time, fired in a deterministic order: the one timer system of the
coordinator's state machines (the coordinator's ``Env.timers`` holds actions; each
reconciliation engine holds its members' session and rebalance deadlines).

One time convention: time is an int of milliseconds that every input carries, and it only
moves forward (``due`` refuses to go back). Like Kafka's coordinator timer, scheduling a key
that is already scheduled replaces it. Timers fire in (deadline, scheduling order) order; a
timer due at the same instant as a request fires before the request is handled (Kafka
expires at ``now >= deadline``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

TimerKey = Hashable
T = TypeVar("T")


@dataclass
class _Entry(Generic[T]):
    deadline_ms: int
    seq: int
    key: TimerKey
    value: T
    live: bool = True


class Timers(Generic[T]):
    """Keyed deadlines, each with a value (what to do, or what it is about)."""

    def __init__(self) -> None:
        # (deadline, seq, entry): tuples compare in C; seq is unique, so the entry itself is
        # never compared. A cancelled or rescheduled entry stays until it reaches the top
        # or the heap is rebuilt (when dead entries outnumber live ones: every heartbeat
        # reschedules its member's session timer, which would otherwise pile up).
        self._heap: list[tuple[int, int, _Entry[T]]] = []
        self._by_key: dict[TimerKey, _Entry[T]] = {}
        self._seq = itertools.count()
        self._now: int | None = None  # the latest time ``due`` moved to

    def schedule(self, key: TimerKey, deadline_ms: int, value: T) -> None:
        self.cancel(key)
        entry = _Entry(deadline_ms, next(self._seq), key, value)
        self._by_key[key] = entry
        if len(self._heap) > 2 * len(self._by_key) + 64:
            self._heap = [item for item in self._heap if item[2].live]
            heapq.heapify(self._heap)
        heapq.heappush(self._heap, (deadline_ms, entry.seq, entry))

    def cancel(self, key: TimerKey) -> None:
        entry = self._by_key.pop(key, None)
        if entry is not None:
            entry.live = False  # lazily dropped from the heap

    def cancel_where(self, pred: Callable[[TimerKey], bool]) -> None:
        for key in [k for k in self._by_key if pred(k)]:
            self.cancel(key)

    def deadline(self, key: TimerKey) -> int | None:
        entry = self._by_key.get(key)
        return entry.deadline_ms if entry else None

    def next_deadline(self) -> int | None:
        self._drop_dead()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> tuple[int, T] | None:
        """The earliest timer due at ``now_ms`` (removed), or None."""
        self._drop_dead()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, entry = heapq.heappop(self._heap)
        del self._by_key[entry.key]
        return entry.deadline_ms, entry.value

    def move_to(self, now_ms: int) -> None:
        """Time is now ``now_ms``: never earlier than before."""
        if self._now is not None and now_ms < self._now:
            raise ValueError(f"time went backwards: {now_ms} < {self._now}")
        self._now = now_ms

    def due(self, now_ms: int) -> Iterator[tuple[int, T]]:
        """Move time to ``now_ms``, then pop every timer due by then, in order (timers
        scheduled meanwhile included)."""
        self.move_to(now_ms)
        while (due := self.pop_due(now_ms)) is not None:
            yield due

    def keys(self) -> list[TimerKey]:
        return list(self._by_key)

    def _drop_dead(self) -> None:
        while self._heap and not self._heap[0][2].live:
            heapq.heappop(self._heap)
