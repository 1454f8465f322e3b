"""What a case exchanged with the target: every request and response, on every connection.

The case's transcript: a JSON list of exchanges (connection, API, version, correlation id,
decoded fields, raw frames as hex, virtual and wall times) of the harness's own members and,
for a worker under test, of the worker with the fake broker (``add_frames``), attached to
failed cases together with a pcap made from the same frames.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fakebroker.client import Exchange, KafkaConnection
from fakebroker.protocol import Registry, Struct
from fakebroker.script.pcap import Exchange as PcapExchange
from fakebroker.script.pcap import pcap_bytes

from .clock import CaseClock


@dataclass
class Transcript:
    clock: CaseClock | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    frames: list[PcapExchange] = field(default_factory=list)
    server_port: int = 9092

    def add(self, connection: str, ex: Exchange, registry: Registry, sent_wall: float,
            sent_virtual: int | None, recv_wall: float) -> None:
        self.add_frames(connection, registry.api_name(ex.api_key), ex.api_key, ex.version,
                        ex.correlation_id, ex.request.to_json(), ex.response.to_json(),
                        ex.request_frame, ex.response_frame, sent_wall, recv_wall, sent_virtual)

    def add_frames(self, connection: str, api: str, api_key: int, version: int, correlation_id: int,
                   request: dict[str, Any], response: dict[str, Any] | None, request_frame: bytes,
                   response_frame: bytes | None, sent_wall: float, recv_wall: float | None,
                   sent_virtual: int | None = None) -> None:
        """One exchange (a response may be missing: the case ended while it was parked)."""
        self.entries.append({
            "connection": connection, "api": api, "apiKey": api_key, "version": version,
            "correlationId": correlation_id, "request": request, "response": response,
            "requestHex": request_frame.hex(),
            "responseHex": response_frame.hex() if response_frame is not None else None,
            "sentWall": round(sent_wall, 6),
            "receivedWall": round(recv_wall, 6) if recv_wall is not None else None,
            "virtualMs": sent_virtual,
        })
        self.frames.append(PcapExchange(connection, "request", request_frame, sent_wall))
        if response_frame is not None and recv_wall is not None:
            self.frames.append(PcapExchange(connection, "response", response_frame, recv_wall))

    def pcap(self) -> bytes:
        ordered = sorted(self.frames, key=lambda f: f.time)
        return pcap_bytes(ordered, self.server_port)


class RecordedConnection(KafkaConnection):
    """A wire connection whose every completed exchange lands in a transcript."""

    def __init__(self, host: str, port: int, *, name: str, transcript: Transcript,
                 **kwargs: Any) -> None:
        super().__init__(host, port, **kwargs)
        self.name = name
        self.transcript = transcript

    def submit(self, body: Struct, version: int) -> Any:
        sent_wall = time.time()
        clock = self.transcript.clock
        sent_virtual = clock.now_ms() if clock is not None and clock.virtual else None
        fut = super().submit(body, version)

        def done(f: Any) -> None:
            if not f.cancelled() and f.exception() is None:
                self.transcript.add(self.name, f.result(), self.registry, sent_wall,
                                    sent_virtual, time.time())
        fut.add_done_callback(done)
        return fut
