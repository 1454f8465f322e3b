"""A minimal Kafka wire client on the project's codec: the suite's scripted workers, replay
and benchmarks all talk to coordinators through it.

It sends exactly what it is given (no retries; version negotiation is
``fakebroker.negotiation``'s, on request) and every wait is bounded, so a misbehaving or
silent coordinator is reported, never hangs.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any

from .protocol import DecodeError, Registry, Struct, default_registry
from .protocol.framing import decode_response, encode_request

DEFAULT_TIMEOUT_S = 10.0


class ClientError(Exception):
    """The peer closed, timed out or sent something undecodable."""


@dataclass
class Exchange:
    """One request and its response, with the raw frames (size prefixes included)."""

    api_key: int
    version: int
    correlation_id: int
    request: Struct
    response: Struct
    request_frame: bytes
    response_frame: bytes


class KafkaConnection:
    """One TCP connection; requests may be pipelined, responses match by correlation id."""

    def __init__(self, host: str, port: int, *, client_id: str | None = "conformance",
                 registry: Registry | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.registry = registry or default_registry()
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)
        # correlation id -> (its future, request, request frame, version): the reader
        # decodes each answer and resolves the future itself (no task per request).
        self._waiting: dict[int, tuple[asyncio.Future[Exchange], Struct, bytes, int]] = {}
        self._pump: asyncio.Task[None] | None = None
        self._closed_reason: str | None = None
        self.peer_closed = False  # the peer closed the connection (not a timeout, not us)

    @classmethod
    async def open(cls, bootstrap: str, **kwargs: Any) -> KafkaConnection:
        host, _, port = bootstrap.rpartition(":")
        conn = cls(host, int(port), **kwargs)
        await conn.connect()
        return conn

    async def connect(self) -> None:
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout_s)
        except (OSError, asyncio.TimeoutError) as e:
            raise ClientError(f"cannot connect to {self.host}:{self.port}: {e or 'timed out'}") from None
        self._pump = asyncio.create_task(self._read_responses())

    async def _read_responses(self) -> None:
        assert self._reader is not None
        try:
            while True:
                head = await self._reader.readexactly(4)
                size = int.from_bytes(head, "big", signed=True)
                if size < 4:
                    raise ClientError(f"response frame size {size} is too small")
                frame = await self._reader.readexactly(size)
                cid = int.from_bytes(frame[:4], "big", signed=True)
                waiter = self._waiting.pop(cid, None)
                if waiter is None:
                    raise ClientError(f"response with unknown correlation id {cid}")
                fut, body, sent, version = waiter
                self._answer(fut, body, sent, version, cid, head + frame)
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            self.peer_closed = True
            self._fail(f"connection closed by {self.host}:{self.port}"
                       f"{'' if isinstance(e, asyncio.IncompleteReadError) else f': {e}'}")
        except ClientError as e:
            self._fail(str(e))
        except asyncio.CancelledError:
            self._fail("connection closed")
        except Exception as e:  # noqa: BLE001 - a dead reader must fail every waiter, not hang them
            self._fail(f"response reader failed: {type(e).__name__}: {e}")

    def _answer(self, fut: asyncio.Future[Exchange], body: Struct, sent: bytes, version: int,
                cid: int, data: bytes) -> None:
        mt = self.registry.of(body)
        assert mt.api_key is not None
        try:
            resp = decode_response(self.registry, data[4:], mt.api_key, version, base=4)
        except DecodeError as e:
            if not fut.done():
                fut.set_exception(ClientError(f"undecodable {mt.name[:-7]} v{version} response: {e}"))
            return
        ex = Exchange(mt.api_key, version, cid, body, resp.body, sent, data)
        self.received(ex)
        if not fut.done():  # done: its caller gave up waiting; the answer is late
            fut.set_result(ex)

    def _fail(self, reason: str) -> None:
        if self._closed_reason is None:
            self.failed(reason)
        self._closed_reason = reason
        for fut, _, _, _ in self._waiting.values():
            if not fut.done():
                fut.set_exception(ClientError(reason))
        self._waiting.clear()

    async def send(self, body: Struct, version: int, *, timeout_s: float | None = None) -> Exchange:
        """Send one request and wait (bounded) for its response."""
        fut = self.submit(body, version)
        return await self.wait(fut, timeout_s=timeout_s)

    def submit(self, body: Struct, version: int) -> asyncio.Future[Exchange]:
        """Send without waiting; pipelined requests are answered in order by a Kafka broker."""
        if self._writer is None or self._closed_reason is not None:
            raise ClientError(self._closed_reason or "not connected")
        cid = next(self._ids)
        frame = encode_request(self.registry, body, version, cid, self.client_id, size_prefix=True)
        fut: asyncio.Future[Exchange] = asyncio.get_running_loop().create_future()
        self._waiting[cid] = (fut, body, frame, version)
        self._writer.write(frame)
        self.sent(body, version, cid, frame)
        return fut

    # What a recording connection (fakebroker.testing) observes; nothing here.
    def sent(self, body: Struct, version: int, correlation_id: int, frame: bytes) -> None:
        """A request frame (size prefix included) has just been written."""

    def received(self, exchange: Exchange) -> None:
        """A response has arrived and decoded (also when its caller gave up waiting)."""

    def failed(self, reason: str) -> None:
        """The connection died (``reason``): the peer closed it or sent garbage."""

    async def wait(self, fut: asyncio.Future[Exchange], *, timeout_s: float | None = None) -> Exchange:
        try:
            return await asyncio.wait_for(fut, timeout_s or self.timeout_s)
        except asyncio.TimeoutError:
            raise ClientError(f"no response from {self.host}:{self.port} within "
                              f"{timeout_s or self.timeout_s}s") from None

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except (ConnectionError, OSError):
                pass

    async def __aenter__(self) -> KafkaConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
