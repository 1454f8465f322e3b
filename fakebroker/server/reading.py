"""Connections, from accept to close: frames split off the bytes read (with read-ahead and
back-pressure), the client leaving, the idle timeout (connections.max.idle.ms)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .config import BrokerConfig
from .connection import Connection
from .proxy import Proxy
from .sasl import SaslGate
from .throttle import Throttled

log = logging.getLogger("fakebroker")
_FRAME_SIZE = 4
READ_AHEAD = 16  # frames read ahead of the one being served (pipelining)


class Reading:
    """``FakeBroker``'s connection handling (a mixin: the broker holds the state)."""

    config: BrokerConfig
    proxy: Proxy | None
    recorders: list[Any]
    accept_failures: Throttled
    refused_connections: Throttled
    _connections: dict[int, Connection]
    _loop_handler: Any
    _loop: Any

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio reports a failing accept (out of file descriptors: EMFILE) with a
        traceback, again and again while it lasts: make that one throttled line."""
        exc = context.get("exception")
        if isinstance(exc, OSError) and "accept" in str(context.get("message", "")):
            self.accept_failures(f"{exc.strerror or exc} (errno {exc.errno})")
            return
        if self._loop_handler is not None:
            self._loop_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    def _accept(self, transport: asyncio.Transport) -> Connection | None:
        """A new connection (``Link.connection_made``): its state, or None if refused."""
        peer = transport.get_extra_info("peername")
        if len(self._connections) >= self.config.max_connections:
            self.refused_connections(f"closing the one from {peer}")
            transport.close()
            return None
        conn = Connection(next(self._conn_ids), f"{peer[0]}:{peer[1]}" if peer else "?",
                          transport, host=str(peer[0]) if peer else "?", broker=self)
        if self.config.sasl is not None:
            conn.sasl = SaslGate(self.config.sasl, self.registry)
        self._connections[conn.id] = conn
        log.debug("connection %d from %s", conn.id, conn.peer)
        limit = self.config.idle_timeout_ms
        if limit is not None:
            loop = asyncio.get_running_loop()
            conn.read_since = loop.time()
            conn.idle_timer = loop.call_at(conn.read_since + limit / 1000, self._idle_check,
                                           conn, limit / 1000)
        return conn

    def _received(self, conn: Connection, data: bytes) -> None:
        """Bytes read (``Link.data_received``): split them into frames and serve those."""
        if conn.input_ended or conn.closed:
            return  # the broker has stopped reading (a refused size, idleness)
        conn.inbox += data
        self._split(conn)
        self._serve_next(conn)

    def _split(self, conn: Connection, bounded: bool = True) -> None:
        """Move the complete frames of the bytes read into the connection's queue, at most
        READ_AHEAD frames and one maximal frame's worth of bytes ahead (``bounded``); then
        pause or resume reading to match (the rest stays in the socket: TCP pushes back)."""
        buf, frames, limit = conn.inbox, conn.frames, self.config.max_frame_bytes
        pos, end = 0, len(buf)
        while not conn.input_ended and (
                not bounded or (len(frames) < READ_AHEAD and conn.buffered < limit)):
            need = conn.need
            if need is None:
                if end - pos < _FRAME_SIZE:
                    break
                need = int.from_bytes(buf[pos:pos + _FRAME_SIZE], "big", signed=True)
                pos += _FRAME_SIZE
                if need < 0 or need > limit:
                    log.error("connection %d: frame size %d outside [0, %d] (rule "
                              "frame-too-large); closing", conn.id, need, limit)
                    conn.closed_by, conn.close_reason = "broker", f"frame size {need} refused"
                    self._end_input(conn)
                    return
                conn.need, conn.read_partial = need, True
            if end - pos < need:
                break
            frames.append(bytes(buf[pos:pos + need]))
            pos += need
            conn.need, conn.read_partial = None, False
            conn.in_flight += 1
            conn.buffered += need
        if pos:
            del buf[:pos]
            if conn.read_since is not None:  # a frame or its size prefix is complete:
                conn.read_since = self._loop.time()  # the next read begins
        if conn.input_ended or conn.closed:
            return
        full = len(conn.frames) >= READ_AHEAD or conn.buffered >= limit
        if full and not conn.reading_paused:
            conn.reading_paused, conn.read_since = True, None
            conn.transport.pause_reading()
        elif not full and conn.reading_paused:
            conn.reading_paused = False
            if self.config.idle_timeout_ms is not None:
                conn.read_since = asyncio.get_running_loop().time()
            conn.transport.resume_reading()

    def _peer_left(self, conn: Connection, error: Exception | None = None) -> None:
        """The client closed its side or the connection broke (``Link``)."""
        if conn.ended:
            return
        if error is not None:
            conn.close_reason = conn.close_reason or f"connection error: {error}"
        if conn.input_ended:
            return
        self._split(conn, bounded=False)  # what was read before the end is served
        if conn.input_ended:
            return
        if conn.need is not None:
            log.error("connection %d: frame of %d byte(s) cut after %d; closing",
                      conn.id, conn.need, len(conn.inbox))
        elif conn.inbox:
            log.error("connection %d: truncated size prefix (%d byte(s)); closing",
                      conn.id, len(conn.inbox))
        if conn.closed_by == "client":
            conn.peer_gone = True
            if conn.waiting:
                self._close(conn, "closed by the client while its request waited")
        self._end_input(conn)
        self._serve_next(conn)

    def _end_input(self, conn: Connection) -> None:
        """Read nothing more: the frames read so far are served, then the connection ends."""
        if conn.input_ended:
            return
        conn.input_ended, conn.read_since = True, None
        conn.inbox.clear()
        conn.frames.append(None)

    def _end(self, conn: Connection) -> None:
        """The connection is over: close and record it, forget it."""
        if conn.ended:
            return
        conn.ended = True
        if conn.idle_timer is not None:
            conn.idle_timer.cancel()
            conn.idle_timer = None
        if self.proxy is not None:
            self.proxy.drop(conn)
        self._connections.pop(conn.id, None)
        self._close(conn)
        log.debug("connection %d closed", conn.id)

    def _close(self, conn: Connection, reason: str | None = None) -> None:
        """Close the connection and record it, once."""
        if conn.closed:
            return
        conn.closed = True
        conn.close_reason = conn.close_reason or reason
        conn.transport.close()
        for rec in list(self.recorders):
            rec.close(conn.id, conn.closed_by, self.clock.now_ms(), conn.close_reason,
                      conn.close_notes)

    def _idle_check(self, conn: Connection, limit_s: float) -> None:
        """The idle timer (connections.max.idle.ms): a read that has waited ``limit_s``
        (for a frame, or for the rest of a half-sent one) ends the connection unless a
        request of it is in progress (a parked request is not idleness; then look again
        ``limit_s`` later); otherwise fire again when the current (or next) read can have
        waited that long. Re-armed only when it fires, so a read costs no timer."""
        conn.idle_timer = None
        if conn.input_ended or conn.closed:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        since = conn.read_since
        if since is None:
            at = now + limit_s  # not reading: the next read starts later than now
        elif now - since >= limit_s - 0.001:  # (timers may fire a clock tick early)
            if conn.read_partial or not conn.in_flight:
                what = "a partly sent frame" if conn.read_partial else "nothing"
                conn.closed_by = "broker"
                conn.close_reason = (f"idle: {what} for {self.config.idle_timeout_ms} ms "
                                     "(connections.max.idle.ms)")
                log.info("connection %d: %s; closing", conn.id, conn.close_reason)
                self._end_input(conn)
                self._serve_next(conn)
                return
            at = now + limit_s
        else:
            at = since + limit_s
        conn.idle_timer = loop.call_at(at, self._idle_check, conn, limit_s)
