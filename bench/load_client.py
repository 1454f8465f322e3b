"""The coordinator benchmark's load generator: one Kafka connection as an asyncio Protocol.

It must cost less per request than the brokers it measures, or it, not they, sets the
rate. So there is no task per request: answers are split and decoded in the read callback,
and a heartbeat loop sends the next heartbeat from there (one pre-encoded frame: only one
is in flight per connection, so its correlation id can repeat). Every answer is decoded
through the registry and its error code checked.

Run as a script it is one of several heartbeat processes (``bench/coordinator.py
--clients P``): it opens a connection per member it is given, says ``ready``, starts on
``go`` from its standard input, heartbeats for the given seconds and prints its count and
its own CPU and wall time as one JSON line. A single load-generator process can cost more
per request than the broker it drives needs (then it, not the broker, sets the rate).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from fakebroker.protocol import Registry, Struct, default_registry
from fakebroker.protocol.framing import decode_response, encode_request
from fakebroker.server import event_loop

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


CONNECT_BATCH = 100  # connections opened at a time (a burst overflows accept backlogs)


async def open_many(registry: Registry, bootstrap: str, n: int) -> list[LoadConnection]:
    conns: list[LoadConnection] = []
    for start in range(0, n, CONNECT_BATCH):
        conns += await asyncio.gather(*(LoadConnection.open(registry, bootstrap, timeout_s=120)
                                        for _ in range(min(CONNECT_BATCH, n - start))))
    return conns


async def heartbeat_all(registry: Registry, conns: list[LoadConnection], ids: list[str], gen: int,
                        group: str, seconds: float) -> int:
    """Every connection heartbeats for its member back to back for ``seconds`` (at least
    once each: on a loaded machine a round of N can outlast the phase); the total count."""
    hb = registry["HeartbeatRequest"]
    stop = time.perf_counter() + seconds
    counts = await asyncio.gather(*(c.heartbeats(hb.new(group_id=group, generation_id=gen, member_id=m), 4, stop)
                                    for c, m in zip(conns, ids)))
    return sum(counts)


async def _heartbeat_process(a: argparse.Namespace) -> None:
    registry = default_registry()
    ids = json.loads(sys.stdin.readline())
    conns = await open_many(registry, a.bootstrap, len(ids))
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)  # "go"
    c0, w0 = time.process_time(), time.perf_counter()
    beats = await heartbeat_all(registry, conns, ids, a.generation, a.group, a.seconds)
    c1, w1 = time.process_time(), time.perf_counter()
    print(json.dumps({"beats": beats, "cpu_s": c1 - c0, "wall_s": w1 - w0}), flush=True)
    for c in conns:
        await c.close()


def main() -> None:
    p = argparse.ArgumentParser(description="one heartbeat process of bench/coordinator.py --clients "
                                            "(member ids as a JSON list on the first stdin line)")
    p.add_argument("bootstrap")
    p.add_argument("group")
    p.add_argument("generation", type=int)
    p.add_argument("seconds", type=float)
    p.add_argument("--loop", choices=list(event_loop.LOOPS), default=event_loop.DEFAULT_LOOP)
    a = p.parse_args()
    event_loop.run(_heartbeat_process(a), a.loop)


if __name__ == "__main__":
    main()
