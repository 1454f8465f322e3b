"""How a case lets time pass: the builtin broker's virtual clock, or bounded real sleeps."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from fakebroker.server.thread import BrokerThread


class CaseClock(Protocol):
    virtual: bool

    def now_ms(self) -> int: ...

    async def advance(self, ms: int) -> None: ...


class VirtualCaseClock:
    """Moves the in-process broker's virtual clock; costs no real time."""

    virtual = True

    def __init__(self, broker: BrokerThread) -> None:
        self._broker = broker

    def now_ms(self) -> int:
        return int(self._broker.broker.clock.now_ms())  # an int read; no need to hop threads

    async def advance(self, ms: int) -> None:
        if ms > 0:
            self._broker.advance(ms)
        await asyncio.sleep(0.01)  # let the broker's loop fire the timers and answer


class RealCaseClock:
    """Real time, scaled for slow targets; every wait is bounded by the case's timeout."""

    virtual = False

    def __init__(self, scale: float = 1.0) -> None:
        self._scale = scale
        self._origin = time.monotonic()

    def now_ms(self) -> int:
        return int((time.monotonic() - self._origin) * 1000)

    async def advance(self, ms: int) -> None:
        if ms > 0:
            await asyncio.sleep(ms * self._scale / 1000)
