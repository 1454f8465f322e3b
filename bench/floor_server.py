"""The serving floor: the least a Python server on this event loop can do per request.

It accepts connections like the fake broker, splits frames in the read callback, reads
each request's API key, version and correlation id, and writes back a response encoded
once per (API key, version) at start-up with the correlation id patched in: no codec, no
coordinator, no state. A JoinGroup is answered at once (generation 1, the member its own
leader with no members listed, so the bench's leader sends an empty assignment), so its
"rebalance" is two round trips per member with no gathering. What the fake broker costs
above this is its own work; what this costs is the interpreter's and the loop's.

    python bench/floor_server.py [--loop uvloop|asyncio]   # prints HOST:PORT, serves until SIGTERM
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from fakebroker.protocol import Registry, default_registry
from fakebroker.protocol.framing import encode_response
from fakebroker.server import event_loop

_FLOOR_ID = "floor"


def _answer(registry: Registry, api_key: int, version: int) -> bytes:
    """A successful answer to ``api_key`` at ``version``, size prefix included, with
    correlation id 0 (bytes 4-8, patched per request)."""
    rt = registry.response(api_key)
    fields: dict[str, Any] = {"error_code": 0}
    if rt.name == "JoinGroupResponse":
        fields.update(generation_id=1, protocol_type="connect", protocol_name="default",
                      leader=_FLOOR_ID, member_id=_FLOOR_ID, members=[])
    elif rt.name == "SyncGroupResponse":
        fields.update(protocol_type="connect", protocol_name="default", assignment=b"a" * 32)
    return encode_response(registry, rt.new(**fields), version, 0, size_prefix=True)


class _Floor(asyncio.Protocol):
    answers: dict[bytes, bytes] = {}  # request bytes 0-4 (API key, version) -> answer

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.inbox = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self.inbox
        buf += data
        pos, end = 0, len(buf)
        out = []
        answers = self.answers
        while end - pos >= 12:
            size = int.from_bytes(buf[pos:pos + 4], "big")
            if end - pos - 4 < size:
                break
            key = bytes(buf[pos + 4:pos + 8])
            answer = answers.get(key)
            if answer is None:
                answer = answers[key] = _answer(self.registry, int.from_bytes(key[:2], "big"),
                                                int.from_bytes(key[2:], "big"))
            out.append(answer[:4] + buf[pos + 8:pos + 12] + answer[8:])
            pos += 4 + size
        if pos:
            del buf[:pos]
        if out:
            assert self.transport is not None
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])


async def serve(host: str) -> None:
    registry = default_registry()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Floor(registry), host, 0, backlog=1024)
    bound, port = server.sockets[0].getsockname()[:2]
    print(f"{bound}:{port}", flush=True)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    await stop
    server.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--loop", choices=list(event_loop.LOOPS), default=event_loop.DEFAULT_LOOP)
    a = p.parse_args()
    event_loop.run(serve(a.host), a.loop)
    sys.exit(0)


if __name__ == "__main__":
    main()
