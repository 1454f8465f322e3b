"""What a case exchanged with the target: every request and response, on every connection.

The case's transcript: a JSON list of exchanges (connection, API, version, correlation id,
decoded fields, raw frames as hex, virtual and wall times) of the harness's own members and,
for a worker under test, of the worker with the fake broker (``add_frames``), attached to
every case that ran together with a pcap made from the same frames. A request is recorded
when it is sent (``answered: false`` until its response arrives), so a target that never
answers still leaves a transcript and a pcap with the request in it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fakebroker.client import Exchange, KafkaConnection
from fakebroker.protocol import Struct
from fakebroker.protocol.framing import encode_request
from fakebroker.script.pcap import Exchange as PcapExchange
from fakebroker.script.pcap import pcap_bytes

from .clock import CaseClock


@dataclass
class Transcript:
    clock: CaseClock | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    frames: list[PcapExchange] = field(default_factory=list)
    server_port: int = 9092

    def sent(self, connection: str, api: str, api_key: int, version: int, correlation_id: int,
             request: dict[str, Any], request_frame: bytes, sent_wall: float,
             sent_virtual: int | None = None) -> dict[str, Any]:
        """A request as it leaves: in the transcript and the pcap at once, marked unanswered
        until ``answered`` fills its response in (a target that never answers still leaves
        its evidence)."""
        entry = {
            "connection": connection, "api": api, "apiKey": api_key, "version": version,
            "correlationId": correlation_id, "request": request, "response": None, "answered": False,
            "requestHex": request_frame.hex(), "responseHex": None,
            "sentWall": round(sent_wall, 6), "receivedWall": None, "virtualMs": sent_virtual,
        }
        self.entries.append(entry)
        self.frames.append(PcapExchange(connection, "request", request_frame, sent_wall))
        return entry

    def answered(self, entry: dict[str, Any], response: dict[str, Any], response_frame: bytes,
                 recv_wall: float) -> None:
        entry.update(response=response, answered=True, responseHex=response_frame.hex(),
                     receivedWall=round(recv_wall, 6))
        self.frames.append(PcapExchange(entry["connection"], "response", response_frame, recv_wall))

    def add_frames(self, connection: str, api: str, api_key: int, version: int, correlation_id: int,
                   request: dict[str, Any], response: dict[str, Any] | None, request_frame: bytes,
                   response_frame: bytes | None, sent_wall: float, recv_wall: float | None,
                   sent_virtual: int | None = None) -> None:
        """One exchange seen elsewhere (a response may be missing: the case ended while it
        was parked)."""
        entry = self.sent(connection, api, api_key, version, correlation_id, request, request_frame,
                          sent_wall, sent_virtual)
        if response is not None and response_frame is not None and recv_wall is not None:
            self.answered(entry, response, response_frame, recv_wall)

    @property
    def unanswered(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if not e["answered"]]

    def pcap(self) -> bytes:
        ordered = sorted(self.frames, key=lambda f: f.time)
        return pcap_bytes(ordered, self.server_port)


class RecordedConnection(KafkaConnection):
    """A wire connection whose every request lands in a transcript when it is sent, and its
    response when (if ever) it arrives."""

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
        # submit() awaits nothing, so the newest waiting correlation id is this request's;
        # encoding is deterministic, so these are the bytes that went out.
        cid = max(self._waiting)
        api_key = self.registry.of(body).api_key
        assert api_key is not None
        frame = encode_request(self.registry, body, version, cid, self.client_id, size_prefix=True)
        entry = self.transcript.sent(self.name, self.registry.api_name(api_key), api_key, version, cid,
                                     body.to_json(), frame, sent_wall, sent_virtual)

        def done(f: Any) -> None:
            if f.cancelled():
                return
            if f.exception() is not None:
                entry["error"] = str(f.exception())
                return
            ex: Exchange = f.result()
            self.transcript.answered(entry, ex.response.to_json(), ex.response_frame, time.time())
        fut.add_done_callback(done)
        return fut
