"""Deadlines in virtual time, fired in a deterministic order.

Like Kafka's coordinator timer, scheduling a key that is already scheduled replaces it.
Timers fire in (deadline, scheduling order) order; a timer due at the same instant as a
request fires before the request is handled (Kafka expires at ``now >= deadline``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass

TimerKey = Hashable


@dataclass
class _Entry:
    deadline_ms: int
    seq: int
    key: TimerKey
    action: Callable[[], None]
    live: bool = True


class Timers:
    def __init__(self) -> None:
        # (deadline, seq, entry): tuples compare in C; seq is unique, so the entry itself is
        # never compared. A cancelled or rescheduled entry stays until it reaches the top
        # or the heap is rebuilt (when dead entries outnumber live ones: every heartbeat
        # reschedules its member's session timer, which would otherwise pile up).
        self._heap: list[tuple[int, int, _Entry]] = []
        self._by_key: dict[TimerKey, _Entry] = {}
        self._seq = itertools.count()

    def schedule(self, key: TimerKey, deadline_ms: int, action: Callable[[], None]) -> None:
        self.cancel(key)
        entry = _Entry(deadline_ms, next(self._seq), key, action)
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

    def pop_due(self, now_ms: int) -> tuple[int, Callable[[], None]] | None:
        """The earliest timer due at ``now_ms`` (removed), or None."""
        self._drop_dead()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, entry = heapq.heappop(self._heap)
        del self._by_key[entry.key]
        return entry.deadline_ms, entry.action

    def keys(self) -> list[TimerKey]:
        return list(self._by_key)

    def _drop_dead(self) -> None:
        while self._heap and not self._heap[0][2].live:
            heapq.heappop(self._heap)
