"""A client connection's state (``Connection``), the response frame it is sending (``Sent``)
and its transport events (``Link``, the asyncio protocol), handed to the broker."""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field
from typing import Any

from ..protocol import Struct
from .sasl import SaslGate


@dataclass
class Connection:
    id: int
    peer: str  # HOST:PORT
    transport: asyncio.Transport
    host: str = "?"  # the peer's address, as the coordinator reports it
    requests: int = 0
    # Who ends it and why, for the transcript's close event.
    closed_by: str = "client"
    close_reason: str | None = None
    close_notes: list[str] = field(default_factory=list)
    peer_gone: bool = False  # the client closed (EOF seen by the reader)
    waiting: int = 0  # waits in progress for its current request (parked, delayed, held)
    closed: bool = False  # closed and recorded as such: nothing more is sent or recorded
    in_flight: int = 0  # frames read and not yet answered: an idle timeout does not apply
    buffered: int = 0  # bytes of frames read ahead and not yet served
    # Reading: bytes of a frame not yet complete, the size of the frame being read (None:
    # its size prefix is not in yet), frames read ahead (None: the input has ended).
    inbox: bytearray = field(default_factory=bytearray)
    need: int | None = None
    frames: collections.deque[bytes | None] = field(default_factory=collections.deque)
    input_ended: bool = False
    reading_paused: bool = False  # read ahead enough: the transport does not read
    writing_paused: bool = False  # the client does not read its answers: serve no more
    exchange: asyncio.Future[Any] | None = None  # the request waiting (a task or a Parked's)
    ended: bool = False  # forgotten by the broker
    sasl: SaslGate | None = None  # the listener's SASL: this connection's authentication
    close_after_reply: str | None = None  # answer, then close (a refused SASL exchange)
    # The answer being sent, for the recorders: recorded once written, so a transcript never
    # holds a response the connection could no longer carry (the client had reset it).
    unrecorded: Sent | None = None
    broker: Any = field(default=None, repr=False)  # the FakeBroker serving it

    # A route's only handles on the connection it answers for.

    def waits_until(self, ready: Any) -> Any:
        """Context manager: this connection's request waits until ``ready()`` (``quiet()``
        reads it); a client that has left meanwhile is closed at once."""
        assert self.broker is not None
        return self.broker._waiting(ready, self)

    def end(self, reason: str) -> None:
        """Close the connection from outside its exchange (the proxy's upstream closed)."""
        assert self.broker is not None
        self.closed_by = "broker"
        self.broker._close(self, reason)
    # The idle watch (connections.max.idle.ms): when the current read began (loop time:
    # the last frame or size prefix completed; None while reading is paused or no timeout
    # is set), whether that read is of a frame's body, and the connection's one timer.
    read_since: float | None = None
    read_partial: bool = False
    idle_timer: asyncio.TimerHandle | None = None


@dataclass(slots=True)
class Sent:
    """A response frame and what the recorders record of it."""

    api_key: int
    version: int
    correlation_id: int
    body: Struct
    frame: bytes
    notes: list[str] | None


class Link(asyncio.Protocol):
    """One client connection's transport events, handed to the broker. (A protocol, not
    asyncio streams: no reader task, queue or futures per request.)"""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.conn: Connection | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn = self.broker._accept(transport)  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        if self.conn is not None:
            self.broker._received(self.conn, data)

    def eof_received(self) -> bool:
        if self.conn is not None:
            self.broker._peer_left(self.conn)
            # Keep the sending side open to answer what was read (TLS cannot half-close).
            return self.conn.transport.get_extra_info("sslcontext") is None
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.broker._peer_left(self.conn, exc)

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.conn.writing_paused = True

    def resume_writing(self) -> None:
        if self.conn is not None:
            self.conn.writing_paused = False
            self.broker._serve_next(self.conn)
