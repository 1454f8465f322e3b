"""The coordinator benchmark's load generator: one Kafka connection as an asyncio Protocol.

It must cost less per request than the brokers it measures, or it, not they, sets the
rate. So there is no task per request: answers are split and decoded in the read callback,
and a heartbeat loop sends the next heartbeat from there (one pre-encoded frame: only one
is in flight per connection, so its correlation id can repeat). Every answer is decoded
through the registry and its error code checked.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fakebroker.protocol import Registry, Struct
from fakebroker.protocol.framing import decode_response, encode_request

_HB_CID = 0x7FFFFFFF  # the heartbeat loop's correlation id (submit's never reach it)


class LoadConnection(asyncio.Protocol):
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.transport: asyncio.Transport | None = None
        self._inbox = bytearray()
        self._ids = 0
        self._waiting: dict[int, tuple[asyncio.Future[Struct], int, int]] = {}
        self._lost: Exception | None = None
        # The heartbeat loop: its frame, api key and version, deadline, count, and result.
        self._beat: bytes = b""
        self._beat_key = self._beat_version = 0
        self._beat_until = 0.0
        self._beats = 0
        self._beat_done: asyncio.Future[int] | None = None

    @classmethod
    async def open(cls, registry: Registry, bootstrap: str, timeout_s: float) -> LoadConnection:
        host, port = bootstrap.rsplit(":", 1)
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(
            loop.create_connection(lambda: cls(registry), host, int(port)), timeout_s)
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = ConnectionError(f"connection lost: {exc or 'closed by the broker'}")
        for fut, _, _ in self._waiting.values():
            if not fut.done():
                fut.set_exception(self._lost)
        self._waiting.clear()
        if self._beat_done is not None and not self._beat_done.done():
            self._beat_done.set_exception(self._lost)

    def submit(self, body: Struct, version: int) -> asyncio.Future[Struct]:
        """Send a request; the future gets the decoded response body."""
        assert self.transport is not None
        if self._lost is not None:
            raise self._lost
        self._ids += 1
        key = self.registry.of(body).api_key
        assert key is not None
        fut: asyncio.Future[Struct] = asyncio.get_running_loop().create_future()
        self._waiting[self._ids] = (fut, key, version)
        self.transport.write(encode_request(self.registry, body, version, self._ids, "bench",
                                            size_prefix=True))
        return fut

    def heartbeats(self, body: Struct, version: int, until: float) -> asyncio.Future[int]:
        """Send ``body`` back to back (at least once) until ``time.perf_counter() >= until``;
        the future gets the count of answers, each checked for error code 0."""
        assert self.transport is not None
        key = self.registry.of(body).api_key
        assert key is not None
        self._beat = encode_request(self.registry, body, version, _HB_CID, "bench",
                                    size_prefix=True)
        self._beat_key, self._beat_version, self._beat_until = key, version, until
        self._beats = 0
        self._beat_done = asyncio.get_running_loop().create_future()
        self.transport.write(self._beat)
        return self._beat_done

    def data_received(self, data: bytes) -> None:
        buf = self._inbox
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= 4:
            size = int.from_bytes(buf[pos:pos + 4], "big")
            if end - pos - 4 < size:
                break
            frame = bytes(buf[pos:pos + 4 + size])
            pos += 4 + size
            self._answer(frame)
        del buf[:pos]

    def _answer(self, frame: bytes) -> None:
        cid = int.from_bytes(frame[4:8], "big", signed=True)
        if cid == _HB_CID:
            body: Any = decode_response(self.registry, frame[4:], self._beat_key,
                                        self._beat_version).body
            done = self._beat_done
            assert done is not None
            if body.error_code:
                done.set_exception(AssertionError(f"heartbeat error code {body.error_code}"))
                return
            self._beats += 1
            if time.perf_counter() < self._beat_until:
                assert self.transport is not None
                self.transport.write(self._beat)
            else:
                done.set_result(self._beats)
            return
        fut, key, version = self._waiting.pop(cid)
        if not fut.done():
            fut.set_result(decode_response(self.registry, frame[4:], key, version).body)

    async def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
