"""Between the broker and its group coordinator: replies handed to the requests waiting for
them (held while writes to the connect store are unacknowledged), and the coordinator's
deadlines fired on the broker's clock."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from ..coordinator import CoordinatorResult, Reply
from ..protocol import Struct

log = logging.getLogger("fakebroker")
# After a coordinator tick raised: retry on the broker's clock, not at once (a tick that
# keeps failing must not spin the loop), and keep every other connection served.
TICK_RETRY_MS = 1000


class CoordinatorGlue:
    """``FakeBroker``'s coordinator glue (a mixin: the broker holds the state)."""

    def _deliver(self, result: CoordinatorResult, own: int | None = None) -> Struct | None:
        """Hand a coordinator input's result on: its events to the log, the replies to
        requests waiting for them now or, while writes to the connect store are
        unacknowledged, once the last of them is (answers keep their order: they queue on
        that write). Returns the answer to request ``own`` (the one just handled) when it
        may go now, for its caller to send; None if it waits: it then comes to the
        request's future, as the answer to a parked request does."""
        unacked = self._writes.unacknowledged() if self._writes is not None else None
        body = None
        if unacked is None:
            body = result.reply
            if result.replies:
                self._answer(result.replies)
        else:
            replies = list(result.replies)
            if result.reply is not None and own is not None:
                replies.append(Reply(own, result.reply))
            if replies:
                loop = asyncio.get_running_loop()

                def acknowledged(done: concurrent.futures.Future[Any]) -> None:
                    with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                        loop.call_soon_threadsafe(self._answer, replies, done.exception())

                unacked.add_done_callback(acknowledged)
        for event in result.events:
            log.info("%s", event)
        self._wake.set()  # deadlines may have moved
        return body

    def _answer(self, replies: Sequence[Reply], error: BaseException | None = None) -> None:
        """Resolve the waiting requests; a failed store write fails them (their connections
        close: the state they would report is not durable)."""
        if error is not None:
            log.error("connect store write failed: %s; closing %d waiting connection(s)",
                      error, len(replies))
        pending = self._pending
        for reply in replies:
            fut = pending.get(reply.request_id)
            if fut is not None and not fut.done():
                if error is None:
                    fut.set_result(reply.body)
                else:
                    fut.set_exception(error)

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
                    result = self.coordinator.tick(now)
                    retry_at = None
                    self._deliver(result)
            except Exception as e:  # noqa: BLE001 - the timers must outlive a coordinator bug
                retry_at = self.clock.now_ms() + TICK_RETRY_MS
                self.tick_failures(f"{type(e).__name__}: {e}",
                                   exc_info=self.tick_failures.count == 0)
