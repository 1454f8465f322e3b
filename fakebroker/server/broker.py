"""The asyncio shell: accepts connections, frames bytes, and feeds the sans-IO cores.

Connections are served by an ``asyncio.Protocol`` (``_Link``): bytes read are split into
frames in the read callback, and each request runs at once, outside any task, until it
answers or waits (a parked JoinGroup, the clock); one that waits goes on in the callback of
what it waits on (``_Parked``), without a task. Hooks and the proxy run in a task.
Reading pauses while enough is read ahead, and serving pauses while the client does not
read its answers (the transport's write buffer is full).

Each connection is served strictly in order, one request at a time, as Kafka's network
layer does (it mutes a channel until the response to its request is sent). A client may
pipeline requests; they are read ahead a little and answered in order, also while a
JoinGroup is parked in the coordinator. A client that disconnects while its request waits
(parked, delayed, held) is closed at once, as Kafka closes the channel: the request goes
on in the coordinator, its reply is discarded.

Every request goes through one pipeline (``_exchange``): decode, request-side hooks,
route, response-side hooks, encode. A route answers the request: a broker-side handler
(``apis``), the group coordinator, or in proxy mode the upstream broker (``proxy``), which
sees the client connection only through ``Connection.waits_until`` and ``Connection.end``.
One exception, the most frequent request: a plain Heartbeat, while nothing else must see
requests (no hook, recorder, proxy, ACLs, SASL or group log), is read from its bytes and
answered by the coordinator's same rules without the pipeline (``_heartbeat``); anything
unusual about it takes the pipeline. Every frame read or written, and every connection
closing, is given to the attached recorders (``fakebroker.intercept.recording``).

Layers (checked by the import-linter contract in pyproject.toml): the server imports
``intercept`` (hooks, recording interface), ``coordinator``, ``client`` and ``protocol``
below it, never the scripting, real-Kafka or conformance layers above it, which plug in
through hooks, recorders and ``FakeBroker``'s constructor.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import itertools
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..coordinator import GroupCoordinator, Reply, RequestContext
from ..coordinator.config import CoordinatorConfig
from ..coordinator.reconcile.records import Record as EngineRecord
from ..coordinator.reconcile.records import RecordStore
from ..coordinator.topics import FixedTopics
from ..protocol import DecodeError, EncodeError, Registry, Struct, default_registry
from ..protocol.error_codes import ErrorCode
from ..protocol.framing import Request, decode_request, encode_response
from ..protocol.heartbeat_frame import fits as heartbeat_frames_fit
from ..protocol.heartbeat_frame import API_KEY as HEARTBEAT_API
from ..protocol.heartbeat_frame import heartbeat_answer, read_heartbeat
from ..intercept.hooks import (Action, Call, Close, Continue, Defer, Delay, Drop, ErrorResponse,
                               Hold, Hooks, Respond)
from ..intercept.recording import Recording
from .apis import HANDLERS
from .apis import api_versions
from .apis.context import BrokerContext
from .clock import Clock, RealClock, VirtualClock
from .config import BrokerConfig
from .offload import OFFLOAD_DECODE_BYTES, decode
from .proxy import NO_REPLY, NoReply, Proxy
from .acl import ANONYMOUS
from .authorize import PASS, Authorizer
from .sasl import SaslGate
from .sasl.gate import ADVERTISED as SASL_VERSIONS
from .throttle import Throttled

log = logging.getLogger("fakebroker")
RecordingT = TypeVar("RecordingT", bound=Recording)
_FRAME_SIZE = 4
_HEARTBEAT_KEY = HEARTBEAT_API.to_bytes(2, "big")  # a request frame's first bytes
_READ_AHEAD = 16  # frames read ahead of the one being served (pipelining)
# After a coordinator tick raised: retry on the broker's clock, not at once (a tick that
# keeps failing must not spin the loop), and keep every other connection served.
TICK_RETRY_MS = 1000


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
    exchange: asyncio.Future[Any] | None = None  # the request waiting (a task or a _Parked's)
    ended: bool = False  # forgotten by the broker
    sasl: SaslGate | None = None  # the listener's SASL: this connection's authentication
    close_after_reply: str | None = None  # answer, then close (a refused SASL exchange)
    # The answer being sent, for the recorders: recorded once written, so a transcript never
    # holds a response the connection could no longer carry (the client had reset it).
    unrecorded: _Sent | None = None
    broker: FakeBroker | None = field(default=None, repr=False)

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
class _Sent:
    """A response frame and what the recorders record of it."""

    api_key: int
    version: int
    correlation_id: int
    body: Struct
    frame: bytes
    notes: list[str] | None


class _Link(asyncio.Protocol):
    """One client connection's transport events, handed to the broker. (A protocol, not
    asyncio streams: no reader task, queue or futures per request.)"""

    def __init__(self, broker: FakeBroker) -> None:
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


class _Parked:
    """An exchange that ran outside a task up to a wait, going on without one: its
    coroutine is resumed in the callback of the future it waits on (a Task would add two
    loop turns, its own creation and two wrappers to every parked JoinGroup and SyncGroup;
    a rebalance parks about one request per member). ``done`` stands for the exchange in
    ``Connection.exchange`` and the broker's tasks: ``stop`` cancels it, which closes the
    coroutine (its ``finally`` blocks run) and ends the connection, as for a task."""

    __slots__ = ("broker", "conn", "coro", "done")

    def __init__(self, broker: FakeBroker, conn: Connection,
                 coro: Coroutine[Any, Any, bytes | None]) -> None:
        self.broker, self.conn, self.coro = broker, conn, coro
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.done.add_done_callback(self._cancelled)
        conn.exchange = self.done
        broker._tasks.add(self.done)

    def wait(self, awaited: Any) -> None:
        """Resume when ``awaited`` (what the coroutine yielded, as to a Task) is done."""
        if asyncio.isfuture(awaited):
            awaited._asyncio_future_blocking = False  # (what a Task does with what it gets)
            awaited.add_done_callback(self._step)
        elif awaited is None:  # a bare yield (sleep(0)): go on at the next loop turn
            asyncio.get_running_loop().call_soon(self._step, None)
        else:
            asyncio.get_running_loop().call_soon(
                self._step, None, RuntimeError(f"an exchange yielded {awaited!r}, not a future"))

    def _step(self, _future: Any, error: BaseException | None = None) -> None:
        if self.done.done():
            return  # cancelled meanwhile: the coroutine is closed
        broker, conn = self.broker, self.conn
        try:
            awaited = self.coro.send(None) if error is None else self.coro.throw(error)
        except StopIteration as stop:
            self._over()
            broker._answered(conn, stop.value)
        except asyncio.CancelledError:  # what it waited on was cancelled: as a cancelled task
            self._over()
            broker._abandoned(conn)
            return
        except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
            self._over()
            broker._answered(conn, error=True)
        else:
            self.wait(awaited)
            return
        broker._serve_next(conn)

    def _over(self) -> None:
        self.done.remove_done_callback(self._cancelled)
        self.done.set_result(None)
        self.broker._tasks.discard(self.done)
        self.conn.exchange = None

    def _cancelled(self, done: asyncio.Future[None]) -> None:
        """``stop`` cancelled the exchange."""
        broker, conn = self.broker, self.conn
        broker._tasks.discard(done)
        conn.exchange = None
        self.coro.close()
        broker._abandoned(conn)


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


class _Waiting:
    """``FakeBroker._waiting``'s context manager (a class: every parked request enters one)."""

    __slots__ = ("broker", "ready", "conn", "token")

    def __init__(self, broker: FakeBroker, ready: Any, conn: Connection | None) -> None:
        self.broker, self.ready, self.conn = broker, ready, conn

    def __enter__(self) -> None:
        broker, conn = self.broker, self.conn
        self.token = next(broker._wait_ids)
        broker._waits[self.token] = self.ready
        broker._busy -= 1
        if conn is not None:
            conn.waiting += 1
            if conn.peer_gone:
                broker._close(conn, "closed by the client while its request waited")

    def __exit__(self, *exc: object) -> None:
        broker, conn = self.broker, self.conn
        broker._busy += 1
        del broker._waits[self.token]
        if conn is not None:
            conn.waiting -= 1


@dataclass
class FakeBroker:
    """A fake Kafka broker on one TCP port. ``async with FakeBroker(cfg) as b: b.bootstrap``."""

    config: BrokerConfig = field(default_factory=BrokerConfig)
    coordinator_config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    clock: Clock = field(default_factory=RealClock)
    registry: Registry = field(default_factory=default_registry)
    # The offset APIs' topic checks use the configured topics instead of accepting any
    # topic (UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID as a real broker answers).
    strict_topics: bool = False
    # Proxy mode (``fakebroker.server.proxy``): HOST:PORT of a real Kafka that gets every
    # request except the group APIs, FindCoordinator and ApiVersions.
    upstream: str | None = None
    # Where connect groups write their engine records (``GroupCoordinator``'s
    # ``connect_store``, e.g. a ``realkafka.group_log.KafkaGroupLog``), and the records the
    # broker loads its connect groups from when it starts (on its clock). ``stop`` closes
    # the store if it has a ``close``. A store with ``submit`` (writes acknowledged later,
    # through a future) is written behind: see ``WriteBehind``.
    connect_store: RecordStore | None = None
    connect_records: Sequence[EngineRecord] = ()
    # Plain Heartbeats skip the generic pipeline when nothing else must see them (see
    # ``_heartbeat``); False sends every request through it (the differential tests).
    fast_heartbeats: bool = True

    def __post_init__(self) -> None:
        # Consumer groups assign from the broker's topics, with the ids Metadata reports; the
        # offset APIs check topics against the same list only when strict.
        self._writes = (WriteBehind(self.connect_store)
                        if hasattr(self.connect_store, "submit") else None)
        catalogue = FixedTopics({t.name: t.partitions for t in self.config.topics},
                                {t.name: t.topic_id for t in self.config.topics})
        self.coordinator = GroupCoordinator(self.registry, self.coordinator_config,
                                            topics=catalogue if self.strict_topics else None,
                                            cluster=catalogue,
                                            connect_store=self._writes or self.connect_store)
        self.hooks = Hooks(self.registry)
        self.recorders: list[Recording] = []
        self._fast_heartbeats = self.fast_heartbeats and heartbeat_frames_fit(self.registry)
        # Exchanges running, and those of them waiting on something outside (a parked
        # coordinator reply, the clock, a gate) with the test that says they can go on:
        # ``quiet()`` reads them so virtual-time drivers know when the broker is idle.
        self._busy = 0
        self._waits: dict[int, Any] = {}
        self._wait_ids = itertools.count(1)
        self._server: asyncio.base_events.Server | None = None
        self._conn_ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        # Coordinator requests waiting for their reply (parked, or held by the group log).
        self._pending: dict[int, asyncio.Future[Struct]] = {}
        self._connections: dict[int, Connection] = {}
        self._tasks: set[asyncio.Future[Any]] = set()  # exchanges that wait
        self._wake = asyncio.Event()
        self._timer_task: asyncio.Task[None] | None = None
        self._loop_handler: Any = None
        self._loop: Any = None  # the loop it serves on, from ``start`` (read per frame)
        self.tick_failures = Throttled(log, "coordinator timers failed; retrying in "
                                            f"{TICK_RETRY_MS} ms on the broker's clock")
        self.refused_connections = Throttled(log, "connection refused: "
                                                  f"{self.config.max_connections} open already")
        self.accept_failures = Throttled(log, "cannot accept connections")
        self.ctx: BrokerContext | None = None
        self.proxy: Proxy | None = None
        self.authorizer = (Authorizer(self.config.acls, self.registry, self.config)
                           if self.config.acls is not None else None)
        if self.upstream is not None:
            self.proxy = Proxy(self, self.upstream)

    # ------------------------------------------------------------------ lifecycle

    @property
    def bootstrap(self) -> str:
        assert self.ctx is not None, "the broker is not started"
        return f"{self.ctx.host}:{self.ctx.port}"

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        """The APIs this broker implements, capped by the configured per-API maximum."""
        sasl = SASL_VERSIONS if self.config.sasl is not None else {}
        if self.proxy is not None:
            return {**self.proxy.supported_versions(), **sasl}
        keys = set(HANDLERS) | set(self.coordinator.api_keys())
        out = {}
        for key in sorted(keys):
            mt = self.registry.request(key)
            hi = min(mt.highest, self.config.api_max_versions.get(key, mt.highest))
            if hi >= mt.lowest:
                out[key] = (mt.lowest, hi)
        return {**out, **sasl}

    async def start(self) -> None:
        if self.proxy is not None:
            await self.proxy.start()  # the upstream's versions, before we advertise ours
        # Bind first; the context (and so the advertised port) exists before any accept.
        tls = self.config.tls.server_context() if self.config.tls is not None else None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Link(self), self.config.host, self.config.port, ssl=tls,
            start_serving=False)
        bound, port = self._server.sockets[0].getsockname()[:2]
        host = self.config.advertised_host or bound
        self.ctx = BrokerContext(self.registry, self.config, self.clock, host, port,
                                 self.supported_versions())
        loop = self._loop = asyncio.get_running_loop()
        self._loop_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._loop_exception)
        for rec in self.recorders:
            self._begin(rec)
        if self.connect_records:
            loaded = self.coordinator.restore_connect_groups(self.connect_records,
                                                             self.clock.now_ms())
            for event in self.coordinator.drain_events():
                log.info("%s", event)
            log.info("loaded %d connect group(s): %s", len(loaded), ", ".join(loaded))
        self._timer_task = asyncio.create_task(self._timers())
        await self._server.start_serving()
        log.info("listening on %s:%d%s", bound, port, f" (advertised as {host})" if host != bound else "")

    async def stop(self) -> None:
        """Stop accepting, close every connection, cancel parked requests."""
        if self._server is not None:
            self._server.close()
        if self.proxy is not None:
            self.proxy.close()
        for conn in list(self._connections.values()):
            if not conn.closed:
                conn.closed_by, conn.close_reason = "broker", "broker stopped"
        for task in list(self._tasks) + ([self._timer_task] if self._timer_task else []):
            task.cancel()
        for task in list(self._tasks) + ([self._timer_task] if self._timer_task else []):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for conn in list(self._connections.values()):
            self._end(conn)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for rec in list(self.recorders):
            self.stop_recording(rec)
        if self.ctx is not None:
            asyncio.get_running_loop().set_exception_handler(self._loop_handler)
        close = getattr(self.connect_store, "close", None)
        if close is not None:
            close()
        log.info("stopped")

    async def __aenter__(self) -> FakeBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ scripting

    def record(self, rec: RecordingT) -> RecordingT:
        """Report every exchange from now on to ``rec`` (e.g. a
        ``fakebroker.script.recorder.Recorder``, which writes transcripts). Returns it."""
        if self.ctx is not None:
            self._begin(rec)
        self.recorders.append(rec)
        return rec

    def stop_recording(self, rec: Recording) -> None:
        if rec in self.recorders:
            self.recorders.remove(rec)
        rec.close_sink()

    def _begin(self, rec: Recording) -> None:
        assert self.ctx is not None
        rec.begin(host=self.ctx.host, port=self.ctx.port, node_id=self.config.node_id,
                  clock="virtual" if isinstance(self.clock, VirtualClock) else "real",
                  coordinator=self.coordinator_config)

    def quiet(self) -> bool:
        """Nothing can happen without new input: no exchange is running, none of those
        waiting may go on, no coordinator deadline or clock sleeper is due."""
        if self._busy:
            return False
        if any(ready() for ready in self._waits.values()):
            return False
        now = self.clock.now_ms()
        deadline = self.coordinator.next_deadline()
        if deadline is not None and deadline <= now:
            return False
        deadlines = getattr(self.clock, "deadlines", None)
        return not (deadlines is not None and any(d <= now for d in deadlines()))

    def _waiting(self, ready: Any, conn: Connection | None = None) -> _Waiting:
        """Context manager: the current exchange (of ``conn``) waits until ``ready()`` says
        it may go on. A client that has left by now is closed at once (Kafka's channel
        close)."""
        return _Waiting(self, ready, conn)

    # ------------------------------------------------------------------ connections

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
        """A new connection (``_Link.connection_made``): its state, or None if refused."""
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
        """Bytes read (``_Link.data_received``): split them into frames and serve those."""
        if conn.input_ended or conn.closed:
            return  # the broker has stopped reading (a refused size, idleness)
        conn.inbox += data
        self._split(conn)
        self._serve_next(conn)

    def _split(self, conn: Connection, bounded: bool = True) -> None:
        """Move the complete frames of the bytes read into the connection's queue, at most
        _READ_AHEAD frames and one maximal frame's worth of bytes ahead (``bounded``); then
        pause or resume reading to match (the rest stays in the socket: TCP pushes back)."""
        buf, frames, limit = conn.inbox, conn.frames, self.config.max_frame_bytes
        pos, end = 0, len(buf)
        while not conn.input_ended and (
                not bounded or (len(frames) < _READ_AHEAD and conn.buffered < limit)):
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
        full = len(conn.frames) >= _READ_AHEAD or conn.buffered >= limit
        if full and not conn.reading_paused:
            conn.reading_paused, conn.read_since = True, None
            conn.transport.pause_reading()
        elif not full and conn.reading_paused:
            conn.reading_paused = False
            if self.config.idle_timeout_ms is not None:
                conn.read_since = asyncio.get_running_loop().time()
            conn.transport.resume_reading()

    def _peer_left(self, conn: Connection, error: Exception | None = None) -> None:
        """The client closed its side or the connection broke (``_Link``)."""
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

    def _serve_next(self, conn: Connection) -> None:
        """Serve the connection's frames in order, one at a time: each exchange runs at once
        (most finish without waiting: no task, no loop turn); one that waits goes on when
        what it waits on is done (``_Parked``), and serves the next frames when it ends.
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
            if (frame.startswith(_HEARTBEAT_KEY) and len(frame) < OFFLOAD_DECODE_BYTES
                    and self._fast_heartbeats and conn.sasl is None
                    and not self.recorders and not len(self.hooks) and self.proxy is None
                    and self.authorizer is None and self._writes is None):
                try:
                    out = self._heartbeat(conn, frame)
                except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
                    self._busy += 1
                    self._answered(conn, error=True)
                    continue
                if out is not None:
                    conn.in_flight -= 1
                    conn.transport.write(out)
                    continue
            self._busy += 1
            coro = self._exchange(conn, frame)
            if len(self.hooks) or self.proxy is not None:
                # Hooks' and the proxy's code runs in a task, as any asyncio code expects.
                self._wait_for(conn, asyncio.ensure_future(coro))
                return
            try:
                awaited = coro.send(None)
            except StopIteration as done:
                self._answered(conn, done.value)
            except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
                self._answered(conn, error=True)
            else:
                _Parked(self, conn, coro).wait(awaited)

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
        error, replies = outcome
        if replies or self.coordinator.has_events():
            self._deliver(replies)
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

    async def _exchange(self, conn: Connection, frame: bytes) -> bytes | None:
        """The request pipeline: decode, request hooks, route, response hooks, encode. One
        request frame (no size prefix) in; its response frame out, b"" to send nothing (a
        hook dropped the reply, or the route gives none), None to close the connection."""
        assert self.ctx is not None
        if self.proxy is not None and self.proxy.raw(frame):
            conn.requests += 1
            return await self.proxy.forward_raw(conn, frame)  # no spec: bytes both ways
        try:
            if len(frame) < OFFLOAD_DECODE_BYTES:  # (most: no coroutine to await)
                req, prepared = decode_request(self.registry, frame), None
            else:  # a big frame is decoded, and its coordinator view built, off the loop
                req, prepared = await decode(self.registry, frame, lambda r: self.coordinator.prepare(
                    r.api_key, r.version, r.body))
        except DecodeError as e:
            self._record_request(conn, frame, error=str(e))
            return self._refuse(conn, e)
        conn.requests += 1
        if not self._advertised(req.api_key, req.version):
            log.error("connection %d: %s v%d is not advertised; closing", conn.id,
                      self.registry.api_name(req.api_key), req.version)
            self._record_request(conn, frame, req)
            conn.close_reason = "version not advertised"
            return None
        if conn.sasl is not None:
            verdict = conn.sasl.receive(req.api_key, req.body)
            if not verdict.admit:
                # Authentication is the listener's, before any hook or route sees a request.
                self._record_request(conn, frame, req)
                if verdict.answer is None:
                    log.error("connection %d: %s; closing", conn.id, verdict.close)
                    conn.close_reason = verdict.close
                    return None
                conn.close_after_reply = verdict.close
                return self._encode(conn, req, verdict.answer, [])
        notes: list[str] = []
        if not len(self.hooks):  # the common case: no Call to build, no action to carry out
            if self.recorders:
                self._record_request(conn, frame, req, None, notes)
            body = await self.route(conn, req, prepared)
            if body is None or body is NO_REPLY:
                return None if body is None else b""  # (None: the route closed the connection)
            if not len(self.hooks):
                return self._encode(conn, req, body, notes)
            call = self._call(conn, req)  # a hook came while the request waited
        else:
            call = self._call(conn, req)
            received = req.body.to_json() if self.recorders else None  # before a hook edits it
            action = self._decide(call, notes)
            self._record_request(conn, frame, req, received, notes)
            outcome, body = await self._perform(call, action, conn)
            if outcome == "continue":
                req.body = call.request
                routed = await self.route(conn, req, None)  # (a hook may have edited it)
                if routed is None:
                    return None  # the route closed the connection and said why
                if routed is NO_REPLY:
                    return b""
                body = routed
            elif outcome != "respond":
                return self._no_reply(conn, outcome, notes)
        assert body is not None
        call.side, call.response, call.now_ms = "response", body, self.clock.now_ms()
        action = self._decide(call, notes)
        if action is not None:
            outcome, replaced = await self._perform(call, action, conn)
            if outcome in ("drop", "close"):
                return self._no_reply(conn, outcome, notes)
            body = replaced if outcome == "respond" else call.response
        assert body is not None
        return self._encode(conn, req, body, notes)

    def _call(self, conn: Connection, req: Request) -> Call:
        """The request as hooks see it."""
        return Call(self.registry, conn.id, req.api_key, req.version, req.correlation_id,
                    req.header.client_id, req.body, self.clock.now_ms(), peer=conn.peer)  # type: ignore[attr-defined]

    def _advertised(self, api_key: int, version: int) -> bool:
        assert self.ctx is not None
        lo, hi = self.ctx.supported.get(api_key, (0, -1))
        return lo <= version <= hi

    def _encode(self, conn: Connection, req: Request, body: Struct, notes: list[str]) -> bytes | None:
        """The response frame (size prefix included), recorded; None closes the connection."""
        if getattr(type(body), "_message_type", None) is not self.registry.responses.get(req.api_key):
            log.error("connection %d: a hook answered %s with %s; closing", conn.id,
                      self.registry.api_name(req.api_key), type(body).__name__)
            conn.close_reason = "hook answered with the wrong type"
            return None
        try:
            out = encode_response(self.registry, body, req.version, req.correlation_id,
                                  size_prefix=True)
        except EncodeError as e:
            log.error("connection %d: cannot encode %s v%d response: %s; closing", conn.id,
                      self.registry.api_name(req.api_key), req.version, e)
            conn.close_reason = f"cannot encode the response: {e}"
            return None
        if conn.closed:
            return None  # the client left while it waited: the reply is discarded
        if self.recorders:
            conn.unrecorded = _Sent(req.api_key, req.version, req.correlation_id, body, out, notes)
        return out

    def _record_sent(self, conn: Connection) -> None:
        """Record the answer just written, unless the write found the connection gone (a
        client that reset it: asyncio drops the bytes and closes the transport)."""
        sent, conn.unrecorded = conn.unrecorded, None
        assert sent is not None
        if conn.transport.is_closing():
            log.debug("connection %d: %s response (correlation id %d) not sent: the connection "
                      "is gone", conn.id, self.registry.api_name(sent.api_key), sent.correlation_id)
            return
        now = self.clock.now_ms()
        for rec in list(self.recorders):
            rec.response(self.registry, conn.id, sent.api_key, sent.version, sent.correlation_id,
                         sent.body, sent.frame, now, sent.notes)

    def _decide(self, call: Call, notes: list[str]) -> Action | None:
        if not len(self.hooks):
            return None
        action, hook = self.hooks.decide(call)
        if action is not None and hook is not None:
            notes.append(f"{call.side}:{call.label or hook.name}:{action.describe()}")
        return action

    def _no_reply(self, conn: Connection, outcome: str, notes: list[str]) -> bytes | None:
        if outcome == "drop":
            return b""
        conn.close_reason, conn.close_notes = "closed by a hook", notes
        return None

    async def _perform(self, call: Call, action: Action | None,
                       conn: Connection | None = None) -> tuple[str, Struct | None]:
        """Carry out a hook's action: ("continue" | "respond" | "drop" | "close", body)."""
        while action is not None:
            if isinstance(action, Continue):
                break
            if isinstance(action, Respond):
                body = action.body
                if isinstance(body, dict):
                    body = self.registry.response(call.api_key).cls.from_json(body)
                return "respond", body
            if isinstance(action, ErrorResponse):
                return "respond", call.error_response(action.code, action.message)
            if isinstance(action, Drop):
                return "drop", None
            if isinstance(action, Close):
                return "close", None
            if isinstance(action, Delay):
                if action.real:
                    with self._waiting(lambda: False, conn):
                        await asyncio.sleep(action.ms / 1000)
                else:
                    deadline = self.clock.now_ms() + action.ms
                    with self._waiting(lambda: self.clock.now_ms() >= deadline, conn):
                        await self.clock.sleep_until(deadline)
                action = action.then
            elif isinstance(action, Hold):
                await self._hold(action, conn)
                action = action.then
            elif isinstance(action, Defer):
                with self._waiting(lambda: False, conn):
                    action = await action.decide()
            else:
                raise TypeError(f"unknown action {action!r}")
        return "continue", None

    async def _hold(self, action: Hold, conn: Connection | None) -> None:
        gate = action.gate
        if action.timeout_ms is None:
            with self._waiting(lambda: gate.opened, conn):
                await gate.wait()
            return
        deadline = self.clock.now_ms() + action.timeout_ms
        with self._waiting(lambda: gate.opened or self.clock.now_ms() >= deadline, conn):
            waiters = [asyncio.ensure_future(gate.wait()),
                       asyncio.ensure_future(self.clock.sleep_until(deadline))]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()

    def _record_request(self, conn: Connection, frame: bytes, req: Request | None = None,
                        body: dict[str, Any] | None = None, notes: list[str] | None = None,
                        error: str | None = None) -> None:
        if not self.recorders:
            return
        now = self.clock.now_ms()
        for rec in list(self.recorders):
            if req is None:
                rec.request(self.registry, conn.id, frame, now, error=error)
            else:
                rec.request(self.registry, conn.id, frame, now, header=req.header,
                            body=body if body is not None else req.body.to_json(), hooks=notes)

    def _refuse(self, conn: Connection, e: DecodeError) -> bytes | None:
        header = e.header
        if (e.rule == "unsupported-version" and header is not None
                and header.request_api_key == api_versions.API_KEY):  # type: ignore[attr-defined]
            # Kafka answers an ApiVersions it cannot parse with v0 and its own ranges, so the
            # client can retry with a version both sides know.
            assert self.ctx is not None
            body = api_versions.response(self.ctx, ErrorCode.UNSUPPORTED_VERSION)
            out = encode_response(self.registry, body, 0, header.correlation_id,  # type: ignore[attr-defined]
                                  size_prefix=True)
            if self.recorders:
                conn.unrecorded = _Sent(api_versions.API_KEY, 0, header.correlation_id,  # type: ignore[attr-defined]
                                        body, out, None)
            return out
        log.error("connection %d: malformed request: %s; closing", conn.id, e)
        conn.close_reason = f"malformed request: {e}"
        return None

    async def route(self, conn: Connection, req: Request,
                    prepared: object | None = None) -> Struct | NoReply | None:
        """Answer a decoded request once the ACLs (if any) allow it: the upstream (proxy
        mode), a broker-side handler or the group coordinator. ``NO_REPLY``: send nothing;
        None: the route closed the connection (its ``close_reason`` says why). ``prepared``:
        the request's ``GroupCoordinator.prepare`` view, if any (built off the loop)."""
        verdict = PASS
        if self.authorizer is not None:
            user = conn.sasl.user if conn.sasl is not None else None
            verdict = self.authorizer.check(f"User:{user}" if user else ANONYMOUS,
                                            req.api_key, req.version, req.body)
        if verdict.refusal is not None:
            return verdict.refusal
        if verdict.request is not None:
            req.body, prepared = verdict.request, None
        body = await self._dispatch(conn, req, prepared)
        if verdict.after is not None and body is not None and body is not NO_REPLY:
            verdict.after(body)
        return body

    async def _dispatch(self, conn: Connection, req: Request,
                        prepared: object | None) -> Struct | NoReply | None:
        assert self.ctx is not None
        if self.proxy is not None and self.proxy.forwards(req.api_key):
            return await self.proxy.forward(conn, req)
        handler = HANDLERS.get(req.api_key)
        if handler is not None:
            result = handler.handle(self.ctx, req.body, req.version)
            if asyncio.iscoroutine(result):
                # (A Fetch waiting on the clock: quiet() sees its sleeper.)
                with self._waiting(lambda: False, conn):
                    result = await result
            return result
        rid = next(self._request_ids)
        client_id = req.header.client_id or ""  # type: ignore[attr-defined]
        rctx = RequestContext(rid, req.api_key, req.version, client_id, conn.host)
        body = self._deliver(self.coordinator.handle(rctx, req.body, self.clock.now_ms(), prepared),
                             rid)
        if body is not None:  # answered at once: no future, nothing to wait for (most requests)
            return body
        fut: asyncio.Future[Struct] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut  # (before any reply can come: those come from the loop)
        try:
            with self._waiting(fut.done, conn):
                return await fut
        finally:
            self._pending.pop(rid, None)

    # ------------------------------------------------------------------ coordinator glue

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
