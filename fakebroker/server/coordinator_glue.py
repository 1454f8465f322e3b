"""Between the broker and its group coordinator: replies handed to the requests waiting for
them (held while writes to the connect store are unacknowledged), and the coordinator's
deadlines fired on the broker's clock."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from typing import Any

from ..coordinator import Reply
from ..protocol import Struct

log = logging.getLogger("fakebroker")
# After a coordinator tick raised: retry on the broker's clock, not at once (a tick that
# keeps failing must not spin the loop), and keep every other connection served.
TICK_RETRY_MS = 1000


class CoordinatorGlue:
    """``FakeBroker``'s coordinator glue (a mixin: the broker holds the state)."""

    def _deliver(self, replies: list[Reply], own: int | None = None) -> Struct | None:
        """Answer ``replies`` now or, while writes to the connect store are unacknowledged,
        once the last of them is (answers keep their order: they queue on that write).
        Returns the reply to request ``own`` (the one being handled) if it is answered
        now, for its caller to use directly; None if it waits."""
        unacked = self._writes.unacknowledged() if self._writes is not None else None
        body = None
        if unacked is None:
            body = self._answer(replies, own=own)
        elif replies:
            loop = asyncio.get_running_loop()

            def acknowledged(done: concurrent.futures.Future[Any]) -> None:
                with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                    loop.call_soon_threadsafe(self._answer, replies, done.exception())

            unacked.add_done_callback(acknowledged)
        for event in self.coordinator.drain_events():
            log.info("%s", event)
        self._wake.set()  # deadlines may have moved
        return body

    def _answer(self, replies: list[Reply], error: BaseException | None = None,
                own: int | None = None) -> Struct | None:
        """Resolve the waiting requests; a failed store write fails them (their connections
        close: the state they would report is not durable). The reply to request ``own``,
        which has no future (its handler is still running), is returned instead."""
        if error is not None:
            log.error("connect store write failed: %s; closing %d waiting connection(s)",
                      error, len(replies))
        body = None
        pending = self._pending
        for reply in replies:
            if reply.request_id == own:
                body = reply.body
                continue
            fut = pending.get(reply.request_id)
            if fut is not None and not fut.done():
                if error is None:
                    fut.set_result(reply.body)
                else:
                    fut.set_exception(error)
        return body

    async def _timers(self) -> None:
        """Fire the coordinator's deadlines on the broker's clock. This task never ends
        before ``stop``: a tick that raises is logged (with its traceback the first time)
        and retried TICK_RETRY_MS later, so joins and expiries resume once it succeeds."""
        retry_at: int | None = None
        while True:
            self._wake.clear()
            try:
                deadline = self.coordinator.next_deadline()
                if retry_at is not None and deadline is not None:
                    deadline = max(deadline, retry_at)
                waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._wake.wait())]
                if deadline is not None:
                    waiters.append(asyncio.ensure_future(self.clock.sleep_until(deadline)))
                try:
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waiters:
                        w.cancel()
                now = self.clock.now_ms()
                if deadline is not None and now >= deadline:
                    replies = self.coordinator.tick(now)
                    retry_at = None
                    self._deliver(replies)
            except Exception as e:  # noqa: BLE001 - the timers must outlive a coordinator bug
                retry_at = self.clock.now_ms() + TICK_RETRY_MS
                self.tick_failures(f"{type(e).__name__}: {e}",
                                   exc_info=self.tick_failures.count == 0)
