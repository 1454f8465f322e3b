"""Logging a failure that may repeat many times a second without flooding the log."""

from __future__ import annotations

import logging


class Throttled:
    """Logs the 1st, 2nd, 4th, 8th, ... occurrence of one kind of failure, each as one line
    with the running count: deterministic (no clock), and a storm costs O(log n) lines."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log, self.what, self.count = log, what, 0

    def __call__(self, detail: str, *, exc_info: bool = False) -> None:
        self.count += 1
        if self.count & (self.count - 1) == 0:  # a power of two
            self.log.error("%s (%d time(s) so far; logged at powers of two): %s",
                           self.what, self.count, detail, exc_info=exc_info)
