"""A transcript holds the responses that went out, not the ones the broker computed: a client
that resets its connection right after sending requests leaves them recorded and unanswered,
as a capture of the same traffic shows them. (Found by a capture/transcript comparison under
load: kafka-python closing while its Metadata refresh was in flight.)"""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from fakebroker.script.recorder import Recorder
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig
from fakebroker.server.event_loop import LOOPS


def _metadata_v1(correlation_id: int) -> bytes:
    """A Metadata v1 request for every topic (null topic array), size-prefixed."""
    client_id = b"reset"
    rest = (struct.pack(">hhih", 3, 1, correlation_id, len(client_id)) + client_id
            + struct.pack(">i", -1))
    return struct.pack(">i", len(rest)) + rest


def _send_two(port: int, reset: bool) -> bytes:
    """Two requests on a blocking socket; then a reset (SO_LINGER 0 makes the close an RST) or
    a read of both answers."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(_metadata_v1(1) + _metadata_v1(2))
        if reset:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return b""
        got = b""
        while not _two_frames(got):
            chunk = s.recv(65536)
            assert chunk, "the broker closed before answering"
            got += chunk
        return got


def _two_frames(data: bytes) -> bool:
    pos = 0
    for _ in range(2):
        if len(data) < pos + 4:
            return False
        pos += 4 + struct.unpack_from(">i", data, pos)[0]
    return len(data) >= pos


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("reset", [True, False], ids=["reset", "read"])
def test_only_responses_written_are_recorded(loop: str, reset: bool) -> None:
    async def go() -> list[str]:
        async with FakeBroker(BrokerConfig(), clock=VirtualClock()) as b:
            rec = b.record(Recorder())
            port = int(b.bootstrap.rsplit(":", 1)[1])
            if reset:  # from the loop's thread: the broker reads only after the reset
                _send_two(port, reset)
            else:  # a reader blocks until answered: from another thread
                await asyncio.to_thread(_send_two, port, reset)
            for _ in range(200):  # until the broker has seen the connection end
                if any(e.kind == "close" for e in rec.events):
                    break
                await asyncio.sleep(0.01)
            return [e.kind for e in rec.events]

    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        kinds = runner.run(go())
    assert kinds.count("request") == 2, kinds
    assert "close" in kinds, kinds
    # Reset: asyncio and uvloop drop what is written to a reset connection.
    assert kinds.count("response") == (0 if reset else 2), kinds
