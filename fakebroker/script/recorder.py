"""Recording what a FakeBroker exchanges as a transcript.

The broker calls a recorder with the frames it read and wrote and the connections it saw
close; the recorder turns each into one transcript event, keeps it (``events``) and hands
it to its sink (a file, usually). Times come from the broker: ``vtime_ms`` is its clock,
``time`` the wall clock, which a golden run fixes (``wall``) so files are byte-stable.

    rec = broker.record(Recorder("run.jsonl"))  # or Recorder() for memory only
    ...
    broker.stop_recording(rec)                # closes the file
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from typing import Any

from ..protocol import Registry, Struct
from ..protocol.framing import add_size_prefix
from ..exchange.transcript import Event, Transcript, TranscriptWriter, new_header, peek_frame, utc_stamp

Sink = Callable[[dict[str, Any]], None]
WallClock = Callable[[int], float]  # the broker's clock (ms) -> seconds since the epoch

COORDINATOR_SETTINGS = ("initial_rebalance_delay_ms", "min_session_timeout_ms",
                        "max_session_timeout_ms", "max_group_size", "offset_metadata_max_bytes",
                        "new_member_join_timeout_ms")


def wall_clock(_vtime_ms: int) -> float:
    return round(time.time(), 6)


def fixed_wall(epoch_s: float) -> WallClock:
    """Wall time that follows the broker's (virtual) clock from ``epoch_s``: stable output."""
    return lambda vtime_ms: round(epoch_s + vtime_ms / 1000, 6)


class Recorder:
    def __init__(self, sink: str | os.PathLike[str] | Sink | None = None, *,
                 origin: str = "record", wall: WallClock = wall_clock, keep: bool = True,
                 header: dict[str, Any] | None = None, api_keys: Iterable[int] | None = None) -> None:
        """``api_keys``: record only the frames of these APIs (and no closes); the others
        are counted but never decoded or turned into events."""
        self.api_keys = frozenset(api_keys) if api_keys is not None else None
        self._writer: TranscriptWriter | None = None
        if sink is None or callable(sink):
            self._sink = sink
        else:
            self._writer = TranscriptWriter(sink)
            self._sink = self._writer.write
        self.origin = origin
        self.wall = wall
        self.keep = keep
        self.extra_header = header or {}
        self.header: dict[str, Any] | None = None
        self.events: list[Event] = []
        self.requests_seen = 0
        self.responses_seen = 0
        self._seq = 0

    @property
    def path(self) -> str | None:
        return str(self._writer.path) if self._writer else None

    def begin(self, *, host: str, port: int, node_id: int | None, clock: str,
              coordinator: Any | None = None) -> None:
        """Write the header (once): where the broker listens (a client's recorder may not
        know its node id), its clock and settings."""
        if self.header is not None:
            return
        settings = None
        if coordinator is not None:
            d = {k: v for k, v in asdict(coordinator).items() if k in COORDINATOR_SETTINGS}
            settings = d
        broker: dict[str, Any] = {"host": host, "port": port}
        if node_id is not None:
            broker["node_id"] = node_id
        head = new_header(self.origin, created=utc_stamp(), clock=clock, broker=broker,
                          coordinator=settings)
        head.update(self.extra_header)
        self.header = head
        if self._sink is not None:
            self._sink(head)

    def _emit(self, ev: Event, now_ms: int) -> Event:
        self._seq += 1
        ev.seq = self._seq
        ev.vtime_ms = now_ms
        ev.time = self.wall(now_ms)
        if self.keep:
            self.events.append(ev)
        if self._sink is not None:
            self._sink(ev.to_json())
        return ev

    def request(self, registry: Registry, conn: int | str, frame: bytes, now_ms: int, *,
                header: Struct | None = None, body: dict[str, Any] | None = None,
                error: str | None = None, hooks: list[str] | None = None) -> Event | None:
        """A request frame (``frame``: no size prefix) as read, decoded (``body`` is its
        JSON form, taken before any hook edits it) or not. The transcript's ``raw`` holds
        the frame as on the wire, size prefix included."""
        self.requests_seen += 1
        if header is not None and body is not None:
            key = int(header.request_api_key)  # type: ignore[attr-defined]
            ev = Event("request", conn, correlation_id=int(header.correlation_id),  # type: ignore[attr-defined]
                       api_key=key, api=registry.api_name(key),
                       version=int(header.request_api_version),  # type: ignore[attr-defined]
                       client_id=header.client_id,  # type: ignore[attr-defined]
                       body=body, raw=add_size_prefix(frame), hooks=list(hooks or []))
        else:
            peeked, version, cid = peek_frame(frame)
            ev = Event("request", conn, correlation_id=cid, api_key=peeked, version=version,
                       api=registry.api_name(peeked) if peeked is not None else None,
                       body=None, raw=add_size_prefix(frame), error=error or "undecodable")
        if self.api_keys is not None and ev.api_key not in self.api_keys:
            return None
        return self._emit(ev, now_ms)

    def response(self, registry: Registry, conn: int | str, api_key: int, version: int,
                 correlation_id: int, body: Struct, frame: bytes, now_ms: int,
                 hooks: list[str] | None = None) -> Event | None:
        """A response frame (size prefix included) and the object it was encoded from (the
        broker's side) or decoded into (a client's)."""
        self.responses_seen += 1
        if self.api_keys is not None and api_key not in self.api_keys:
            return None
        # What went on the wire, without decoding ``frame`` again: an ignorable field the
        # version lacks was dropped by the encoder, so it reads as its default.
        ev = Event("response", conn, correlation_id=correlation_id, api_key=api_key,
                   api=registry.api_name(api_key), version=version,
                   body=registry.of(body).sent_json(body, version),
                   raw=bytes(frame), hooks=list(hooks or []))
        return self._emit(ev, now_ms)

    def sent(self, registry: Registry, conn: int | str, body: Struct, version: int,
             correlation_id: int, client_id: str | None, frame: bytes, now_ms: int) -> Event | None:
        """A request as a client sent it (``frame`` with its size prefix): the client's side
        of what ``request`` records on the broker's."""
        self.requests_seen += 1
        key = registry.of(body).api_key
        assert key is not None
        if self.api_keys is not None and key not in self.api_keys:
            return None
        return self._emit(Event("request", conn, correlation_id=correlation_id, api_key=key,
                                api=registry.api_name(key), version=version, client_id=client_id,
                                body=body.to_json(), raw=bytes(frame)), now_ms)

    def adopt(self, events: Iterable[Event], conn: Callable[[Event], int | str]) -> None:
        """Events another recorder made (a broker's, seen from a client's transcript), their
        connections renamed by ``conn``; they keep their times and get this recorder's seq."""
        for ev in events:
            self._seq += 1
            copy = replace(ev, conn=conn(ev), seq=self._seq)
            if self.keep:
                self.events.append(copy)
            if self._sink is not None:
                self._sink(copy.to_json())

    def by_time(self) -> Transcript:
        """The transcript with its events in wall-clock order (several recorders' events
        merged by ``adopt`` interleave), seq renumbered so it stays a valid file."""
        ordered = sorted(self.events, key=lambda e: e.time if e.time is not None else 0.0)
        return Transcript(self.header, [replace(e, seq=i) for i, e in enumerate(ordered, 1)],
                          self.path or "<recording>")

    def close(self, conn: int | str, by: str, now_ms: int, reason: str | None = None,
              hooks: list[str] | None = None) -> Event | None:
        if self.api_keys is not None:
            return None
        return self._emit(Event("close", conn, by=by, reason=reason, hooks=list(hooks or [])), now_ms)

    def transcript(self) -> Transcript:
        return Transcript(self.header, list(self.events), self.path or "<recording>")

    def close_sink(self) -> None:
        if self._writer is not None:
            self._writer.close()
