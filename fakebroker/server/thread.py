"""Run a FakeBroker on its own event loop in a background thread, for blocking callers
(real clients such as kafka-python and librdkafka are blocking)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any, Coroutine, TypeVar

from .broker import FakeBroker
from .clock import VirtualClock

T = TypeVar("T")


class BrokerThread:
    """``with BrokerThread(FakeBroker(...)) as b: b.bootstrap`` — started on enter, stopped on exit."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fakebroker",
                                        daemon=True)

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(timeout)

    def start(self) -> BrokerThread:
        self._thread.start()
        self._call(self.broker.start())
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self._call(self.broker.stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def run(self, fn: Any, *args: Any) -> Any:
        """Call ``fn(*args)`` on the broker's loop thread (coordinator state is not thread-safe)."""
        async def call() -> Any:
            return fn(*args)
        return self._call(call())

    def advance(self, ms: int) -> None:
        """Move a virtual clock forward (on the loop thread, so sleepers wake in order)."""
        clock = self.broker.clock
        if not isinstance(clock, VirtualClock):
            raise TypeError("advance() needs a broker on a VirtualClock")
        self.run(clock.advance, ms)

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
