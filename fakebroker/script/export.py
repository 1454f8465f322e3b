"""Transcript -> pcap: each connection a loopback TCP stream tshark reassembles.

Frames are the recorded bytes (or, for a hand-written event without ``raw``, the body
encoded), stamped with the event's wall time; events without a wall time get one from the
broker's clock (``vtime_ms`` after a fixed epoch), so a transcript made by hand exports too.
Stamps never go backwards, whatever the file says.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from ..protocol import Registry
from .pcap import Exchange, write_pcap
from ..exchange.transcript import Event, Transcript

EPOCH_S = 1_700_000_000.0  # where a transcript without wall times starts


def exchanges(transcript: Transcript, registry: Registry,
              events: Iterable[Event] | None = None) -> Iterator[Exchange]:
    """The transcript's events (or ``events``, e.g. read lazily) as pcap exchanges."""
    last = 0.0
    for i, ev in enumerate(transcript.events if events is None else events):
        if ev.time is not None:
            t = ev.time
        elif ev.vtime_ms is not None:
            t = EPOCH_S + ev.vtime_ms / 1000
        else:
            t = EPOCH_S + i / 1000
        last = t = max(t, last)
        if ev.kind == "close":
            yield Exchange(ev.conn, "close", b"", t, "client" if ev.by == "client" else "server")
        elif ev.raw is not None or ev.body is not None:
            yield Exchange(ev.conn, ev.kind, ev.frame(registry), t)


def write_transcript_pcap(transcript: Transcript, registry: Registry,
                          path: str | os.PathLike[str], port: int = 9092,
                          events: Iterable[Event] | None = None) -> tuple[int, int]:
    """Write the pcap with the broker on ``port`` (9092: tshark's Kafka port, so it
    dissects without ``-d tcp.port==PORT,kafka``), streaming: ``events`` may be read
    lazily (``transcript.iter_events``), and a fault stops it at once. Returns (frames,
    connections)."""
    return write_pcap(exchanges(transcript, registry, events), path, port)
