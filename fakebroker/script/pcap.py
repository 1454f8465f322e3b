"""Write Kafka exchanges as a pcap of loopback TCP, for reading in Wireshark or tshark.

Each connection becomes one TCP stream from 127.0.0.1:<client port> to 127.0.0.1:<server
port>: a three-way handshake, the frames as data segments (split at the MSS) with
consistent sequence and acknowledgement numbers, and a FIN/ACK teardown: where a "close"
exchange says the connection ended (the side that closed sends the first FIN), otherwise
after the last exchange of the whole capture. Frames are written as given, size prefix included, so a
transcript of faulty bytes exports as faithfully as a clean one.

The output depends only on the input: ports and initial sequence numbers are derived from
the connection ids, timestamps from the exchanges (nudged forward by 1 µs where needed so
they never go backwards), and the pcap is always little-endian with microsecond stamps.

    write_pcap([Exchange("c1", "request", frame, 1.0), Exchange("c1", "response", reply, 1.001)],
               "kafka.pcap")
    # tshark -r kafka.pcap -d tcp.port==9092,kafka
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

# Only the layers needed: ``scapy.all`` takes seconds and prints warnings on import.
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import PcapWriter

__all__ = ["Exchange", "LOOPBACK_MSS", "pcap_bytes", "write_pcap", "client_port"]

LOOPBACK_MSS = 65495  # what Linux advertises on lo (MTU 65536)
_DLT_EN10MB = 1  # Linux captures lo as Ethernet with zero MAC addresses
_SNAPLEN = 262144  # libpcap's default; above the largest segment, so nothing is truncated
_HOST = "127.0.0.1"
_MAC = "00:00:00:00:00:00"
_EPHEMERAL = (49152, 65535)  # IANA's dynamic range
_WSCALE = 7
_WINDOW = 65535  # field value; scaled by 2**_WSCALE once both SYNs carry the option
_SEQ_MOD = 1 << 32


@dataclass(frozen=True)
class Exchange:
    """One frame on one connection: a request (client to server) or a response; or, with
    direction "close" and no frame, the connection ending (``by`` "client" or "server")."""

    connection: str | int
    direction: str  # "request" | "response" | "close"
    frame: bytes  # the whole frame, 4-byte size prefix included
    time: float  # seconds since the epoch
    by: str = "client"  # close only: who sends the first FIN


def _digest(connection: str | int) -> bytes:
    # The type is part of the key so that 1 and "1" hash apart, like they compare apart.
    return hashlib.sha256(f"{type(connection).__name__}:{connection}".encode()).digest()


def client_port(connection: str | int) -> int:
    """The preferred client port of a connection (before resolving clashes in one capture)."""
    lo, hi = _EPHEMERAL
    return lo + int.from_bytes(_digest(connection)[:4], "big") % (hi - lo + 1)


_CLIENT, _SERVER = 0, 1


class _Stream:
    """Sequence-number state of one TCP connection, indexed by side (_CLIENT, _SERVER)."""

    def __init__(self, connection: str | int, port: int) -> None:
        d = _digest(connection)
        self.port = port
        # Next sequence number each side sends (initial ones from the id; SYNs take one).
        self.seq = [int.from_bytes(d[4:8], "big"), int.from_bytes(d[8:12], "big")]
        # The peer's sequence number each side has acknowledged up to.
        self.acked = [self.seq[_SERVER], self.seq[_CLIENT]]
        self.closed = False


class _Builder:
    def __init__(self, server_port: int, mss: int) -> None:
        if not 0 < server_port < 65536:
            raise ValueError(f"server port {server_port} is not a TCP port")
        if mss <= 0:
            raise ValueError(f"MSS must be positive, got {mss}")
        self.server_port = server_port
        self.mss = mss
        self.window_bytes = _WINDOW << _WSCALE
        self.streams: dict[str | int, _Stream] = {}
        self.used_ports: set[int] = {server_port}
        self.packets: list[tuple[int, Ether]] = []  # (microseconds, packet) not yet written
        self.out: PcapWriter | None = None  # set by ``stream_to``: packets go out as made
        self.last_us = -1
        self.ip_id = 0

    def _emit(self, s: _Stream, side: int, flags: str, at_us: int, payload: bytes = b"",
              options: list[tuple[str, object]] | None = None) -> None:
        """One segment from ``side`` with its current sequence number, acknowledging all
        the peer has sent (except on a bare SYN)."""
        # Strictly increasing stamps keep the on-disk order and the time order the same.
        at_us = max(at_us, self.last_us + 1)
        self.last_us = at_us
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        peer = 1 - side
        sport, dport = (s.port, self.server_port) if side == _CLIENT else (self.server_port, s.port)
        ack = s.seq[peer] % _SEQ_MOD if "A" in flags else 0
        if "A" in flags:
            s.acked[side] = s.seq[peer]
        tcp = TCP(sport=sport, dport=dport, seq=s.seq[side] % _SEQ_MOD, ack=ack,
                  flags=flags, window=_WINDOW, options=options or [])
        pkt = Ether(src=_MAC, dst=_MAC) / IP(src=_HOST, dst=_HOST, id=self.ip_id, flags="DF", ttl=64) / tcp
        if payload:
            pkt = pkt / payload
        if self.out is not None:
            self._write(at_us, pkt)
        else:
            self.packets.append((at_us, pkt))

    def _open(self, connection: str | int, at_us: int) -> _Stream:
        lo, hi = _EPHEMERAL
        span = hi - lo + 1
        if len(self.used_ports) - (lo <= self.server_port <= hi) >= span:
            raise ValueError(f"more than {span} connections do not fit in the ephemeral port range")
        port = client_port(connection)
        while port in self.used_ports:  # a clash: the next free port, so the result stays deterministic
            port = lo + (port - lo + 1) % span
        self.used_ports.add(port)
        s = self.streams[connection] = _Stream(connection, port)
        # Linux's SYN options without timestamps, NOP-padded to 12 bytes.
        opts: list[tuple[str, object]] = [("MSS", self.mss), ("NOP", None), ("NOP", None),
                                          ("SAckOK", b""), ("NOP", None), ("WScale", _WSCALE)]
        start = at_us - 3  # the handshake just precedes the first frame
        self._emit(s, _CLIENT, "S", start, options=opts)
        s.seq[_CLIENT] += 1
        self._emit(s, _SERVER, "SA", start + 1, options=opts)
        s.seq[_SERVER] += 1
        self._emit(s, _CLIENT, "A", start + 2)
        return s

    def add(self, ex: Exchange) -> None:
        if ex.direction == "close":
            self._close_one(ex)
            return
        if ex.direction not in ("request", "response"):
            raise ValueError(f"direction must be 'request', 'response' or 'close', got {ex.direction!r}")
        frame = bytes(ex.frame)
        if not frame:
            raise ValueError(f"empty frame on connection {ex.connection!r}: nothing to send")
        if not math.isfinite(ex.time) or ex.time < 0:
            raise ValueError(f"time {ex.time!r} is not a non-negative number of seconds")
        at_us = round(ex.time * 1_000_000)
        s = self.streams.get(ex.connection) or self._open(ex.connection, at_us)
        if s.closed:
            raise ValueError(f"a frame on connection {ex.connection!r} after it closed")
        side = _CLIENT if ex.direction == "request" else _SERVER
        peer = 1 - side
        for off in range(0, len(frame), self.mss):
            chunk = frame[off:off + self.mss]
            # The peer acknowledges before the sender would overrun its window.
            if s.seq[side] + len(chunk) - s.acked[peer] > self.window_bytes:
                self._emit(s, peer, "A", at_us)
            last = off + self.mss >= len(frame)
            self._emit(s, side, "PA" if last else "A", at_us, chunk)
            s.seq[side] += len(chunk)

    def _teardown(self, s: _Stream, first: int, at_us: int) -> None:
        second = 1 - first
        self._emit(s, first, "FA", at_us)
        s.seq[first] += 1  # a FIN takes a sequence number
        self._emit(s, second, "FA", at_us)
        s.seq[second] += 1
        self._emit(s, first, "A", at_us)
        s.closed = True

    def _close_one(self, ex: Exchange) -> None:
        if ex.by not in ("client", "server"):
            raise ValueError(f"a close is by 'client' or 'server', got {ex.by!r}")
        s = self.streams.get(ex.connection)
        if s is None or s.closed:
            return  # nothing was sent on it (or it is closed already): nothing to tear down
        if not math.isfinite(ex.time) or ex.time < 0:
            raise ValueError(f"time {ex.time!r} is not a non-negative number of seconds")
        self._teardown(s, _CLIENT if ex.by == "client" else _SERVER, round(ex.time * 1_000_000))

    def close_all(self) -> None:
        # The client closes first, as a Kafka client disconnecting does; every stream
        # still open closes after the last exchange so none ends before the capture does.
        for s in self.streams.values():
            if not s.closed:
                self._teardown(s, _CLIENT, self.last_us + 1)

    def stream_to(self, out: BinaryIO) -> None:
        """From now on write every packet as it is made (stamps only increase, so the file
        order is the time order): memory stays flat however long the input."""
        self.out = PcapWriter(out, linktype=_DLT_EN10MB, endianness="<", snaplen=_SNAPLEN, sync=False)
        self.out.write_header(None)
        for at_us, pkt in self.packets:
            self._write(at_us, pkt)
        self.packets.clear()

    def _write(self, at_us: int, pkt: Ether) -> None:
        assert self.out is not None
        sec, usec = divmod(at_us, 1_000_000)
        self.out.write_packet(pkt, sec=sec, usec=usec)

    def write(self, out: BinaryIO) -> None:
        self.stream_to(out)
        assert self.out is not None
        self.out.flush()


def _build(exchanges: Iterable[Exchange], server_port: int, mss: int) -> _Builder:
    b = _Builder(server_port, mss)
    for ex in exchanges:
        b.add(ex)
    b.close_all()
    return b


def pcap_bytes(exchanges: Iterable[Exchange], server_port: int = 9092, *,
               mss: int = LOOPBACK_MSS) -> bytes:
    """The pcap file for the exchanges, in order, as bytes."""
    buf = io.BytesIO()
    _build(exchanges, server_port, mss).write(buf)
    return buf.getvalue()


def write_pcap(exchanges: Iterable[Exchange], path: str | os.PathLike[str], server_port: int = 9092,
               *, mss: int = LOOPBACK_MSS) -> tuple[int, int]:
    """Write the pcap file for the exchanges, in order, to ``path``, streaming: each packet
    is written as it is made, and a bad exchange (a ValueError) stops the export at once,
    leaving no file. Returns (frames, connections)."""
    b = _Builder(server_port, mss)
    tmp = f"{os.fspath(path)}.partial"
    frames = 0
    try:
        with open(tmp, "wb") as f:
            b.stream_to(f)
            for ex in exchanges:
                b.add(ex)
                frames += ex.direction != "close"
            b.close_all()
            assert b.out is not None
            b.out.flush()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    return frames, len(b.streams)
