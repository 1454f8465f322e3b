"""The coordinator's record store in front of one whose writes are acknowledged later."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any

from ..coordinator.reconcile.records import Record as EngineRecord


class WriteBehind:
    """The coordinator's store in front of one whose writes are acknowledged later
    (``submit(records) -> concurrent.futures.Future``, e.g. ``KafkaGroupLog``): ``append``
    hands each state change over without waiting, so the event loop never blocks on the
    log; the broker holds every answer until the last write made before it is
    acknowledged (Kafka's coordinator likewise sends a response only once the records
    written before it are committed). The store writes in submission order."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._last: concurrent.futures.Future[Any] | None = None

    def append(self, records: Sequence[EngineRecord]) -> None:
        if records:
            self._last = self.store.submit(records)

    def unacknowledged(self) -> concurrent.futures.Future[Any] | None:
        """The last write, while it is not acknowledged yet."""
        last = self._last
        return None if last is None or last.done() else last
