"""Serving a connection's frames in order, one at a time: each exchange runs at once, outside
any task, until it answers or waits (then ``Parked`` goes on with it), or in a task when
hooks or the proxy run; its answer is sent, or the connection closed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..protocol.heartbeat_frame import API_KEY as HEARTBEAT_API
from ..protocol.heartbeat_frame import heartbeat_answer, read_heartbeat
from .connection import Connection
from .offload import OFFLOAD_DECODE_BYTES
from .waits import Parked

log = logging.getLogger("fakebroker")
_HEARTBEAT_KEY = HEARTBEAT_API.to_bytes(2, "big")  # a request frame's first bytes


class Serving:
    """``FakeBroker``'s serving of frames (a mixin: the broker holds the state)."""

    _busy: int
    _fast_heartbeats: bool
    _tasks: set[asyncio.Future[Any]]

    def _serve_next(self, conn: Connection) -> None:
        """Serve the connection's frames in order, one at a time: each exchange runs at once
        (most finish without waiting: no task, no loop turn); one that waits goes on when
        what it waits on is done (``Parked``), and serves the next frames when it ends.
        Also ends a closed connection."""
        while conn.exchange is None:
            if conn.closed:
                self._end(conn)
                return
            if conn.writing_paused or not conn.frames:
                return
            frame = conn.frames.popleft()
            if frame is None:
                self._end(conn)
                return
            conn.buffered -= len(frame)
            if conn.reading_paused:
                self._split(conn)  # (a refused size queues the end: served in turn)
            self._serve(conn, frame)

    def _serve(self, conn: Connection, frame: bytes) -> None:
        """Serve one request, the one way: its exchange (``_exchange``: decode, hooks, route,
        encode) runs at once, outside any task, until it answers or waits (then ``Parked``
        goes on with it); while hooks or the proxy run, in a task, as asyncio code expects.
        One optimisation inside: a plain Heartbeat that nothing else has to see is answered
        from its bytes by the same rules (``_heartbeat``), with the bytes and state changes
        the exchange would give (tests/server/test_fast_heartbeat.py checks both ways)."""
        if (frame.startswith(_HEARTBEAT_KEY) and len(frame) < OFFLOAD_DECODE_BYTES
                and self._fast_heartbeats and conn.sasl is None
                and not self.recorders and not len(self.hooks) and self.proxy is None
                and self.authorizer is None and self._writes is None):
            try:
                out = self._heartbeat(conn, frame)
            except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
                self._busy += 1
                self._answered(conn, error=True)
                return
            if out is not None:  # (as ``_answered`` sends it: nothing to record, no SASL close)
                conn.in_flight -= 1
                conn.transport.write(out)
                return
        self._busy += 1
        coro = self._exchange(conn, frame)
        if len(self.hooks) or self.proxy is not None:
            self._wait_for(conn, asyncio.ensure_future(coro))
            return
        try:
            awaited = coro.send(None)
        except StopIteration as done:
            self._answered(conn, done.value)
        except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
            self._answered(conn, error=True)
        else:
            Parked(self, conn, coro).wait(awaited)

    def _heartbeat(self, conn: Connection, frame: bytes) -> bytes | None:
        """The fast path of a plain Heartbeat (``protocol.heartbeat_frame``), taken only when
        nothing else has to see the request (no hook, recorder, proxy, ACLs, SASL, group
        log: ``_serve_next`` checks): its fields read from the bytes, the coordinator's one
        Heartbeat implementation (``GroupCoordinator.heartbeat``), an answer copied from one
        encoded once. Returns the response frame, or None with nothing done: the frame then
        takes the generic pipeline (``_exchange``), which answers it the same way."""
        fields = read_heartbeat(frame)
        if fields is None:
            return None
        version, correlation_id, group_id, generation_id, member_id, instance_id = fields
        if not self._advertised(HEARTBEAT_API, version):
            return None
        outcome = self.coordinator.heartbeat(version, group_id, generation_id, member_id,
                                             instance_id, self.clock.now_ms())
        if outcome is None:
            return None
        conn.requests += 1
        error, result = outcome
        if result is not None:
            self._deliver(result)
        else:
            self._wake.set()  # (as ``_deliver``: the session deadline moved)
        return heartbeat_answer(self.registry, version, correlation_id, error)

    def _wait_for(self, conn: Connection, task: asyncio.Future[bytes | None]) -> None:
        conn.exchange = task
        self._tasks.add(task)
        task.add_done_callback(lambda t: self._exchanged(conn, t))

    def _exchanged(self, conn: Connection, task: asyncio.Future[bytes | None]) -> None:
        self._tasks.discard(task)
        conn.exchange = None
        if task.cancelled():
            self._abandoned(conn)
            return
        if task.exception() is not None:
            try:
                task.result()
            except Exception:  # noqa: BLE001 - logged with its traceback below
                self._answered(conn, error=True)
        else:
            self._answered(conn, task.result())
        self._serve_next(conn)

    def _abandoned(self, conn: Connection) -> None:
        """The exchange in progress was cancelled (``stop``): the connection ends."""
        self._busy -= 1
        conn.in_flight -= 1
        conn.closed_by, conn.close_reason = "broker", conn.close_reason or "broker stopped"
        self._end(conn)

    def _answered(self, conn: Connection, out: bytes | None = None, error: bool = False) -> None:
        """Send an exchange's answer (``out``: see ``_exchange``) or close the connection."""
        self._busy -= 1
        conn.in_flight -= 1
        if error:
            log.exception("connection %d: internal error; closing it", conn.id)
            conn.closed_by, conn.close_reason = "broker", "internal error"
        elif conn.closed:
            pass  # the client left while this request waited
        elif out is None:
            conn.closed_by = "broker"
        else:
            if out:  # empty: a hook dropped the reply
                conn.transport.write(out)
                if conn.unrecorded is not None:
                    self._record_sent(conn)
            if conn.close_after_reply is None:
                return
            conn.closed_by, conn.close_reason = "broker", conn.close_after_reply
        self._end(conn)
