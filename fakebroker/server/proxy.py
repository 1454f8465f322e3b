"""Proxy mode: the fake broker in front of a real Kafka (``fakebroker serve --upstream``).

The fake broker keeps the group APIs (every key of ``GroupCoordinator.api_keys()``: classic,
consumer and the draft's connect APIs), FindCoordinator and ApiVersions, and forwards every
other request to the upstream broker: one upstream connection per client connection, opened
on the first forwarded request, requests in the client's order (the broker serves each
connection one request at a time, so the upstream never sees two in flight from it).

Clients must keep talking to the fake broker, so every response that names a broker is
rewritten to the fake broker's own address:

- Metadata: every broker -> our host:port, node ids kept (all of them map to us);
- DescribeCluster: the same;
- Produce (v10+) and Fetch (v16+): the tagged ``NodeEndpoints``;
- FindCoordinator is answered locally (both the single and the batched form).

ApiVersions is answered locally from both sides: the locally handled APIs with our ranges;
a forwarded API with the intersection of our codec's range and the upstream's; an API the
codec has no spec for (InitProducerId, DeleteTopics, ...) with the upstream's range, except
those whose responses carry broker addresses we cannot rewrite without a spec, or that
belong to group types we do not coordinate (``NOT_FORWARDED``): those are not advertised.

The proxy is one route of the broker's request pipeline: requests of APIs the codec knows
are decoded, pass the broker's hooks and recorders, and are re-encoded for the upstream; their responses are decoded (strictly), rewritten where they
carry addresses, and re-encoded by the broker as for any local answer. Requests the codec
has no spec for are forwarded as raw bytes with the client's correlation id and their
responses passed back untouched; they are not recorded in transcripts.

An upstream that closes (or cannot be reached) closes the client's connection at once: a
client never waits on a dead upstream. A Produce with acks=0 gets no response, as from
Kafka.

Limits: one upstream address. A multi-broker upstream works only where the bootstrap
broker can answer everything (a single-node cluster, as ``fakebroker.realkafka`` runs):
every node id maps to us and every forwarded request goes to the bootstrap broker.
TxnOffsetCommit (a request to the group coordinator) is forwarded to the upstream, whose
coordinator does not know our groups.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..client import KafkaConnection
from ..protocol import DecodeError, Registry, Struct
from ..protocol.framing import decode_response, encode_request, peek_request_key
from .config import name_and_number

if TYPE_CHECKING:
    from ..protocol.framing import Request
    from .apis.context import BrokerContext

log = logging.getLogger("fakebroker.proxy")

PRODUCE, FETCH, METADATA, FIND_COORDINATOR, API_VERSIONS, DESCRIBE_CLUSTER = 0, 1, 3, 10, 18, 60
#: Answered by the fake broker itself (besides the coordinator's group APIs).
LOCAL = frozenset({FIND_COORDINATOR, API_VERSIONS})
#: Upstream APIs never advertised: responses with broker addresses we have no spec to
#: rewrite (DescribeQuorum, ShareFetch, ShareAcknowledge), and the group types we do not
#: coordinate (share, streams; share-group offsets) whose coordinator FindCoordinator
#: would claim to be us.
NOT_FORWARDED = frozenset({55, 76, 77, 78, 79, 88, 89, 90, 91, 92})
_PREFIX = struct.Struct(">i")
_UPSTREAM_VERSIONS_TIMEOUT_S = 30.0


class UpstreamError(Exception):
    """The upstream broker cannot be reached, closed, or answered something undecodable."""


class NoReply:
    """A forwarded request the upstream does not answer (Produce with acks=0)."""

    def __repr__(self) -> str:
        return "NO_REPLY"


NO_REPLY: Any = NoReply()


def parse_upstream(text: str) -> tuple[str, int]:
    host, n = name_and_number(text, "upstream", "HOST:PORT", "port")
    if not 0 < n < 65536:
        raise ValueError(f"upstream {text!r}: port {n} out of range")
    return host.strip("[]"), n


class UpstreamLink:
    """One connection to the upstream broker on behalf of one client connection: one frame
    out, one frame back. A reader task notices the upstream closing while idle."""

    def __init__(self, host: str, port: int, on_close: Any, timeout_s: float) -> None:
        self.host, self.port = host, port
        self._on_close = on_close
        self._timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._frames: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.closed_reason: str | None = None

    async def open(self) -> None:
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self._timeout_s)
        except (OSError, asyncio.TimeoutError) as e:
            raise UpstreamError(f"cannot connect to the upstream {self.host}:{self.port}: "
                                f"{e or 'timed out'}") from None
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._reader is not None
        reason = "upstream closed the connection"
        try:
            while True:
                head = await self._reader.readexactly(4)
                size = _PREFIX.unpack(head)[0]
                if size < 4:
                    reason = f"upstream sent a frame of size {size}"
                    break
                await self._frames.put(await self._reader.readexactly(size))
        except asyncio.IncompleteReadError:
            pass
        except (ConnectionError, OSError) as e:
            reason = f"upstream connection error: {e}"
        except asyncio.CancelledError:
            reason = "closed"
        self.closed_reason = self.closed_reason or reason
        await self._frames.put(None)
        if reason != "closed":
            self._on_close(self.closed_reason)

    async def exchange(self, frame: bytes, expect_reply: bool = True) -> bytes | None:
        """Send one request frame (no size prefix); its response frame (no size prefix)."""
        if self.closed_reason is not None or self._writer is None:
            raise UpstreamError(self.closed_reason or "not connected")
        self._writer.write(_PREFIX.pack(len(frame)) + frame)
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as e:
            raise UpstreamError(f"upstream connection error: {e}") from None
        if not expect_reply:
            return None
        out = await self._frames.get()
        if out is None:
            raise UpstreamError(self.closed_reason or "upstream closed the connection")
        return out

    def close(self) -> None:
        self.closed_reason = self.closed_reason or "closed"
        if self._task is not None:
            self._task.cancel()
        if self._writer is not None:
            self._writer.close()


class ClientConnection(Protocol):
    """What the proxy uses of the broker's client connection (``server.connection.Connection``):
    the broker owns the proxy, so the proxy names only this much of it."""

    id: int
    closed: bool
    closed_by: str
    close_reason: str | None

    def waits_until(self, ready: Any) -> AbstractContextManager[Any]: ...

    def end(self, reason: str) -> None: ...


class _Coordinator(Protocol):
    def api_keys(self) -> Iterable[int]: ...


class _BrokerConfig(Protocol):
    api_max_versions: dict[int, int]


class OwningBroker(Protocol):
    """What the proxy uses of the broker that owns it (``server.broker.FakeBroker``)."""

    registry: Registry
    coordinator: _Coordinator
    config: _BrokerConfig
    ctx: BrokerContext | None


@dataclass
class Proxy:
    """The forwarding half of a FakeBroker started with ``upstream=HOST:PORT``."""

    broker: OwningBroker
    upstream: str
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        self.host, self.port = parse_upstream(self.upstream)
        self.registry: Registry = self.broker.registry
        self.upstream_versions: dict[int, tuple[int, int]] = {}
        self._links: dict[int, UpstreamLink] = {}
        self.forwarded = 0  # requests sent upstream (for tests and logs)

    # ------------------------------------------------------------------ versions

    async def start(self) -> None:
        """Learn the upstream's API versions (it must answer ApiVersions)."""
        try:
            conn = await KafkaConnection.open(f"{self.host}:{self.port}", client_id="fakebroker-proxy",
                                              registry=self.registry,
                                              timeout_s=_UPSTREAM_VERSIONS_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - ClientError: say what failed
            raise UpstreamError(f"upstream {self.upstream}: {e}") from None
        try:
            mt = self.registry.request(API_VERSIONS)
            body = mt.new(client_software_name="fakebroker-proxy", client_software_version="1")
            ex = await conn.send(body, 3)
        except Exception as e:  # noqa: BLE001
            raise UpstreamError(f"upstream {self.upstream} did not answer ApiVersions: {e}") from None
        finally:
            await conn.close()
        if ex.response.error_code != 0:  # type: ignore[attr-defined]
            raise UpstreamError(f"upstream {self.upstream} answered ApiVersions with error "
                                f"{ex.response.error_code}")  # type: ignore[attr-defined]
        self.upstream_versions = {k.api_key: (k.min_version, k.max_version)
                                  for k in ex.response.api_keys}  # type: ignore[attr-defined]
        log.info("upstream %s: %d APIs", self.upstream, len(self.upstream_versions))

    def local_keys(self) -> set[int]:
        return set(LOCAL) | set(self.broker.coordinator.api_keys())

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        """What the fake broker advertises in proxy mode."""
        caps = self.broker.config.api_max_versions
        local = self.local_keys()
        out: dict[int, tuple[int, int]] = {}
        for key in sorted(local | set(self.upstream_versions)):
            if key in self.registry.requests:
                mt = self.registry.request(key)
                lo, hi = mt.lowest, mt.highest
                if key not in local:
                    if key in NOT_FORWARDED:
                        continue
                    ulo, uhi = self.upstream_versions[key]
                    lo, hi = max(lo, ulo), min(hi, uhi)
            elif key in NOT_FORWARDED:
                continue
            else:
                lo, hi = self.upstream_versions[key]
            hi = min(hi, caps.get(key, hi))
            if lo <= hi:
                out[key] = (lo, hi)
        return out

    # ------------------------------------------------------------------ routing

    def forwards(self, api_key: int) -> bool:
        """A decoded request of this API goes upstream."""
        return api_key not in self.local_keys()

    def raw(self, frame: bytes) -> bool:
        """A frame forwarded without decoding: an advertised API the codec has no spec for."""
        try:
            key, version = peek_request_key(frame)
        except DecodeError:
            return False
        if key in self.registry.requests or self.broker.ctx is None:
            return False
        rng = self.broker.ctx.supported.get(key)
        return rng is not None and rng[0] <= version <= rng[1]

    async def _link(self, conn: ClientConnection) -> UpstreamLink:
        link = self._links.get(conn.id)
        if link is None:
            def upstream_closed(reason: str, conn: ClientConnection = conn) -> None:
                self._links.pop(conn.id, None)
                if not conn.closed:
                    log.info("connection %d: %s; closing it", conn.id, reason)
                    conn.end(reason)
            link = UpstreamLink(self.host, self.port, upstream_closed, self.connect_timeout_s)
            self._links[conn.id] = link
            try:
                await link.open()
            except UpstreamError:
                self._links.pop(conn.id, None)
                raise
        return link

    def drop(self, conn: ClientConnection) -> None:
        """The client connection ended: end its upstream connection."""
        link = self._links.pop(conn.id, None)
        if link is not None:
            link.close()

    async def forward_raw(self, conn: ClientConnection, frame: bytes) -> bytes | None:
        """Forward a frame the codec cannot decode; the response frame (size prefix
        included), or None to close the client connection."""
        try:
            link = await self._link(conn)
            self.forwarded += 1
            out = await link.exchange(frame)
        except UpstreamError as e:
            return self._fail(conn, e)
        assert out is not None
        return _PREFIX.pack(len(out)) + out

    async def forward(self, conn: ClientConnection, req: Request) -> Struct | None:
        """Forward a decoded request; its response body rewritten, NO_REPLY, or None (the
        client connection is closed)."""
        key, version = req.api_key, req.version
        frame = encode_request(self.registry, req.body, version, req.correlation_id,
                               req.header.client_id)  # type: ignore[attr-defined]
        expect = not (key == PRODUCE and getattr(req.body, "acks", -1) == 0)
        try:
            link = await self._link(conn)
            self.forwarded += 1
            with conn.waits_until(lambda: False):
                out = await link.exchange(frame, expect)
        except UpstreamError as e:
            return self._fail(conn, e)
        if out is None:
            return NO_REPLY
        try:
            resp = decode_response(self.registry, out, key, version)
        except DecodeError as e:
            return self._fail(conn, UpstreamError(
                f"undecodable {self.registry.api_name(key)} v{version} response from the "
                f"upstream: {e}"))
        if resp.correlation_id != req.correlation_id:
            return self._fail(conn, UpstreamError(
                f"upstream answered correlation id {resp.correlation_id}, expected "
                f"{req.correlation_id}"))
        self.rewrite(key, resp.body)
        return resp.body

    def _fail(self, conn: ClientConnection, e: UpstreamError) -> None:
        log.error("connection %d: %s; closing it", conn.id, e)
        conn.closed_by = "broker"
        conn.close_reason = conn.close_reason or str(e)
        self.drop(conn)
        return None

    # ------------------------------------------------------------------ rewriting

    def rewrite(self, api_key: int, body: Any) -> None:
        """Point every broker address in a response at the fake broker (in place)."""
        ctx = self.broker.ctx
        assert ctx is not None
        host, port = ctx.host, ctx.port
        if api_key in (METADATA, DESCRIBE_CLUSTER):
            for b in body.brokers or []:
                b.host, b.port = host, port
        elif api_key in (PRODUCE, FETCH):
            for ep in getattr(body, "node_endpoints", None) or []:
                ep.host, ep.port = host, port

    def close(self) -> None:
        for cid in list(self._links):
            self._links.pop(cid).close()
