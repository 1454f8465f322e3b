"""The asyncio shell: accepts connections, frames bytes, and feeds the sans-IO cores.

Each connection is served strictly in order, one request at a time, as Kafka's network
layer does (it mutes a channel until the response to its request is sent). A client may
pipeline requests; they wait in the socket buffer and are answered in order, also while
a JoinGroup is parked in the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

from ..coordinator import GroupCoordinator, Reply, RequestContext
from ..coordinator.config import CoordinatorConfig
from ..protocol import DecodeError, EncodeError, Registry, Struct, default_registry
from ..protocol.error_codes import ErrorCode
from ..protocol.framing import Request, decode_request, encode_response
from .apis import HANDLERS
from .apis import api_versions
from .apis.context import BrokerContext
from .clock import Clock, RealClock
from .config import BrokerConfig

log = logging.getLogger("fakebroker")
_FRAME_SIZE = 4


@dataclass
class Connection:
    id: int
    peer: str
    writer: asyncio.StreamWriter
    requests: int = 0


@dataclass
class _Pending:
    future: asyncio.Future[Struct]
    version: int
    api_key: int


@dataclass
class FakeBroker:
    """A fake Kafka broker on one TCP port. ``async with FakeBroker(cfg) as b: b.bootstrap``."""

    config: BrokerConfig = field(default_factory=BrokerConfig)
    coordinator_config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    clock: Clock = field(default_factory=RealClock)
    registry: Registry = field(default_factory=default_registry)

    def __post_init__(self) -> None:
        self.coordinator = GroupCoordinator(self.registry, self.coordinator_config)
        self._server: asyncio.base_events.Server | None = None
        self._conn_ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._connections: dict[int, Connection] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._wake = asyncio.Event()
        self._timer_task: asyncio.Task[None] | None = None
        self.ctx: BrokerContext | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def bootstrap(self) -> str:
        assert self.ctx is not None, "the broker is not started"
        return f"{self.ctx.host}:{self.ctx.port}"

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        """The APIs this broker implements, capped by the configured per-API maximum."""
        keys = set(HANDLERS) | set(self.coordinator.api_keys())
        out = {}
        for key in sorted(keys):
            mt = self.registry.request(key)
            hi = min(mt.highest, self.config.api_max_versions.get(key, mt.highest))
            if hi >= mt.lowest:
                out[key] = (mt.lowest, hi)
        return out

    async def start(self) -> None:
        # Bind first; the context (and so the advertised port) exists before any accept.
        self._server = await asyncio.start_server(self._serve, self.config.host, self.config.port,
                                                  start_serving=False)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.ctx = BrokerContext(self.registry, self.config, self.clock, host, port,
                                 self.supported_versions())
        self._timer_task = asyncio.create_task(self._timers())
        await self._server.start_serving()
        log.info("listening on %s:%d", host, port)

    async def stop(self) -> None:
        """Stop accepting, close every connection, cancel parked requests."""
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections.values()):
            conn.writer.close()
        for task in list(self._tasks) + ([self._timer_task] if self._timer_task else []):
            task.cancel()
        for task in list(self._tasks) + ([self._timer_task] if self._timer_task else []):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        log.info("stopped")

    async def __aenter__(self) -> FakeBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ connections

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = writer.get_extra_info("peername")
        conn = Connection(next(self._conn_ids), f"{peer[0]}:{peer[1]}" if peer else "?", writer)
        self._connections[conn.id] = conn
        log.debug("connection %d from %s", conn.id, conn.peer)
        try:
            while True:
                frame = await self._read_frame(reader, conn)
                if frame is None:
                    break
                out = await self._exchange(conn, frame)
                if out is None:
                    break
                writer.write(out)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
            log.exception("connection %d: internal error; closing it", conn.id)
        finally:
            self._connections.pop(conn.id, None)
            self._tasks.discard(task)
            writer.close()
            log.debug("connection %d closed", conn.id)

    async def _read_frame(self, reader: asyncio.StreamReader, conn: Connection) -> bytes | None:
        try:
            head = await reader.readexactly(_FRAME_SIZE)
        except asyncio.IncompleteReadError as e:
            if e.partial:
                log.error("connection %d: truncated size prefix (%d byte(s)); closing",
                          conn.id, len(e.partial))
            return None
        size = int.from_bytes(head, "big", signed=True)
        if size < 0 or size > self.config.max_frame_bytes:
            log.error("connection %d: frame size %d outside [0, %d] (rule frame-too-large); "
                      "closing", conn.id, size, self.config.max_frame_bytes)
            return None
        try:
            return await reader.readexactly(size)
        except asyncio.IncompleteReadError as e:
            log.error("connection %d: frame of %d byte(s) cut after %d; closing",
                      conn.id, size, len(e.partial))
            return None

    async def _exchange(self, conn: Connection, frame: bytes) -> bytes | None:
        """One request in, its response frame out; None closes the connection."""
        assert self.ctx is not None
        try:
            req = decode_request(self.registry, frame)
        except DecodeError as e:
            return self._refuse(conn, e)
        conn.requests += 1
        if req.api_key not in self.ctx.supported or not (
                self.ctx.supported[req.api_key][0] <= req.version <= self.ctx.supported[req.api_key][1]):
            log.error("connection %d: %s v%d is not advertised; closing", conn.id,
                      self.registry.api_name(req.api_key), req.version)
            return None
        body = await self.dispatch(conn, req)
        if body is None:
            return None
        try:
            return encode_response(self.registry, body, req.version, req.correlation_id,
                                   size_prefix=True)
        except EncodeError as e:
            log.error("connection %d: cannot encode %s v%d response: %s; closing", conn.id,
                      self.registry.api_name(req.api_key), req.version, e)
            return None

    def _refuse(self, conn: Connection, e: DecodeError) -> bytes | None:
        header = e.header
        if (e.rule == "unsupported-version" and header is not None
                and header.request_api_key == api_versions.API_KEY):  # type: ignore[attr-defined]
            # Kafka answers an ApiVersions it cannot parse with v0 and its own ranges, so the
            # client can retry with a version both sides know.
            assert self.ctx is not None
            body = api_versions.response(self.ctx, ErrorCode.UNSUPPORTED_VERSION)
            return encode_response(self.registry, body, 0, header.correlation_id,  # type: ignore[attr-defined]
                                   size_prefix=True)
        log.error("connection %d: malformed request: %s; closing", conn.id, e)
        return None

    async def dispatch(self, conn: Connection, req: Request) -> Struct | None:
        """Route a decoded request to a broker-side handler or to the group coordinator."""
        assert self.ctx is not None
        handler = HANDLERS.get(req.api_key)
        if handler is not None:
            result = handler.handle(self.ctx, req.body, req.version)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        rid = next(self._request_ids)
        fut: asyncio.Future[Struct] = asyncio.get_running_loop().create_future()
        self._pending[rid] = _Pending(fut, req.version, req.api_key)
        client_id = req.header.client_id or ""  # type: ignore[attr-defined]
        rctx = RequestContext(rid, req.api_key, req.version, client_id, conn.peer.rsplit(":", 1)[0])
        self._deliver(self.coordinator.handle(rctx, req.body, self.clock.now_ms()))
        try:
            return await fut
        finally:
            self._pending.pop(rid, None)

    # ------------------------------------------------------------------ coordinator glue

    def _deliver(self, replies: list[Reply]) -> None:
        for reply in replies:
            pending = self._pending.get(reply.request_id)
            if pending is not None and not pending.future.done():
                pending.future.set_result(reply.body)
        for event in self.coordinator.drain_events():
            log.info("%s", event)
        self._wake.set()  # deadlines may have moved

    async def _timers(self) -> None:
        """Fire the coordinator's deadlines on the broker's clock."""
        while True:
            self._wake.clear()
            deadline = self.coordinator.next_deadline()
            waiters = [asyncio.ensure_future(self._wake.wait())]
            if deadline is not None:
                waiters.append(asyncio.ensure_future(self.clock.sleep_until(deadline)))
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()
            now = self.clock.now_ms()
            if deadline is not None and now >= deadline:
                self._deliver(self.coordinator.tick(now))
