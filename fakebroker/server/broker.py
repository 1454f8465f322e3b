"""The asyncio shell: accepts connections, frames bytes, and feeds the sans-IO cores.

Connections are served by an ``asyncio.Protocol`` (``Link``): bytes read are split into
frames in the read callback, and each request runs at once, outside any task, until it
answers or waits (a parked JoinGroup, the clock); one that waits goes on in the callback of
what it waits on (``Parked``), without a task. Hooks and the proxy run in a task.
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
import contextlib
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..coordinator import GroupCoordinator
from ..coordinator.config import CoordinatorConfig
from ..coordinator.reconcile.records import Record as EngineRecord
from ..coordinator.reconcile.records import RecordStore
from ..coordinator.topics import FixedTopics
from ..intercept.hooks import Hooks
from ..intercept.recording import Recording
from ..protocol import Registry, Struct, default_registry
from ..protocol.heartbeat_frame import fits as heartbeat_frames_fit
from .apis import HANDLERS
from .apis.context import BrokerContext
from .authorize import Authorizer
from .clock import Clock, RealClock, VirtualClock
from .config import BrokerConfig
from .connection import Connection, Link
from .coordinator_glue import TICK_RETRY_MS, CoordinatorGlue
from .pipeline import Pipeline
from .proxy import Proxy
from .reading import Reading
from .sasl.gate import ADVERTISED as SASL_VERSIONS
from .serving import Serving
from .throttle import Throttled
from .waits import Waiting
from .write_behind import WriteBehind

log = logging.getLogger("fakebroker")
RecordingT = TypeVar("RecordingT", bound=Recording)



@dataclass
class FakeBroker(Reading, Serving, Pipeline, CoordinatorGlue):
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
            lambda: Link(self), self.config.host, self.config.port, ssl=tls,
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
            # (Their events are logged with the next input's result.)
            loaded = self.coordinator.restore_connect_groups(self.connect_records,
                                                             self.clock.now_ms())
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

    def _waiting(self, ready: Any, conn: Connection | None = None) -> Waiting:
        """Context manager: the current exchange (of ``conn``) waits until ``ready()`` says
        it may go on. A client that has left by now is closed at once (Kafka's channel
        close)."""
        return Waiting(self, ready, conn)
