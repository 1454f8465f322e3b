"""Clocks the server runs on: the wall clock, or a virtual one that tests advance."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...

    async def sleep_until(self, deadline_ms: int) -> None: ...


class RealClock:
    """Monotonic milliseconds; sleeping is asyncio's."""

    def __init__(self) -> None:
        self._origin = time.monotonic()

    def now_ms(self) -> int:
        return int((time.monotonic() - self._origin) * 1000)

    async def sleep_until(self, deadline_ms: int) -> None:
        delay = deadline_ms - self.now_ms()
        if delay > 0:
            await asyncio.sleep(delay / 1000)


class VirtualClock:
    """Time moves only when ``advance`` is called; sleepers wake in deadline order.

    Must be used from the event loop's thread (``BrokerThread.advance`` hops there).
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms
        self._changed = asyncio.Event()
        self._sleepers: list[int] = []

    def now_ms(self) -> int:
        return self._now

    async def sleep_until(self, deadline_ms: int) -> None:
        self._sleepers.append(deadline_ms)
        try:
            while self._now < deadline_ms:
                self._changed.clear()
                await self._changed.wait()
        finally:
            self._sleepers.remove(deadline_ms)

    def deadlines(self) -> list[int]:
        """What sleepers wait for: lets a test advance only once the server is waiting."""
        return sorted(self._sleepers)

    async def until_sleeping(self, deadline_ms: int, max_turns: int = 10_000) -> None:
        """Yield to the loop until something sleeps until ``deadline_ms`` (bounded)."""
        for _ in range(max_turns):
            if deadline_ms in self._sleepers:
                return
            await asyncio.sleep(0)
        raise TimeoutError(f"nothing started sleeping until {deadline_ms} ms")

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock never goes backwards")
        self._now += ms
        self._changed.set()
