"""Captures to Kafka frames: pcap / pcapng records to TCP segments, and TCP reassembly of
one connection into the frames each side sent. Pure Python (executors run it); every
fault is a ``Problem`` naming the frame number or stream offset, never an exception."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default is 100 MiB


@dataclass
class Segment:
    frame: int  # 1-based, as Wireshark numbers packets
    time: float
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    flags: int  # TCP flags byte
    payload: bytes


@dataclass
class Problem:
    frame: int
    reason: str


SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04


# ------------------------------------------------------------------ capture files

def segments(data: bytes) -> Iterator[Segment | Problem]:
    """The TCP segments of a pcap or pcapng file, in file order; a truncated or unknown
    record ends the file with one Problem."""
    if len(data) < 4:
        yield Problem(0, f"not a capture: {len(data)} byte(s), a pcap header needs 24")
        return
    magic = data[:4]
    if magic == b"\x0a\x0d\x0d\x0a":
        yield from _pcapng(data)
    elif magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        yield from _pcap(data)
    else:
        yield Problem(0, f"not a capture: magic {magic.hex()} is neither pcap nor pcapng")


def _pcap(data: bytes) -> Iterator[Segment | Problem]:
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nano = data[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    if len(data) < 24:
        yield Problem(0, f"truncated pcap header: {len(data)} of 24 bytes")
        return
    link = struct.unpack_from(e + "I", data, 20)[0] & 0x0FFFFFFF
    pos, n = 24, 0
    while pos < len(data):
        n += 1
        if pos + 16 > len(data):
            yield Problem(n, f"truncated capture: record header at byte {pos} cut short")
            return
        sec, frac, incl, _orig = struct.unpack_from(e + "IIII", data, pos)
        if pos + 16 + incl > len(data):
            yield Problem(n, f"truncated capture: record at byte {pos} needs {incl} bytes, "
                             f"{len(data) - pos - 16} remain")
            return
        t = sec + frac / (1e9 if nano else 1e6)
        seg = _packet(link, data[pos + 16:pos + 16 + incl], n, t)
        if seg is not None:
            yield seg
        pos += 16 + incl


def _pcapng(data: bytes) -> Iterator[Segment | Problem]:
    pos, n = 0, 0
    e = "<"
    links: list[tuple[int, float]] = []  # per interface: link type, seconds per tick
    while pos < len(data):
        if pos + 12 > len(data):
            yield Problem(n + 1, f"truncated pcapng: block header at byte {pos} cut short")
            return
        if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":  # section header: byte order, new interfaces
            e = "<" if data[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            links = []
        btype, blen = struct.unpack_from(e + "II", data, pos)
        if blen < 12 or pos + blen > len(data):
            yield Problem(n + 1, f"truncated pcapng: block at byte {pos} says {blen} bytes, "
                                 f"{len(data) - pos} remain")
            return
        body = data[pos + 8:pos + blen - 4]
        if btype == 1:  # interface description
            link = struct.unpack_from(e + "H", body, 0)[0]
            links.append((link, _tsresol(body[8:], e)))
        elif btype in (6, 3):  # enhanced / simple packet
            n += 1
            if btype == 6:
                iface, hi, lo, cap = struct.unpack_from(e + "IIII", body, 0)
                pkt = body[20:20 + cap]
                link, tick = links[iface] if iface < len(links) else (1, 1e-6)
                t = ((hi << 32) | lo) * tick
            else:
                pkt, (link, _tick), t = body[4:], (links[0] if links else (1, 1e-6)), 0.0
            seg = _packet(link, pkt, n, t)
            if seg is not None:
                yield seg
        pos += blen


def _tsresol(options: bytes, e: str) -> float:
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack_from(e + "HH", options, pos)
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = options[pos + 4]
            return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0 ** -v
        pos += 4 + ((length + 3) & ~3)
    return 1e-6


def _packet(link: int, pkt: bytes, n: int, t: float) -> Segment | None:
    """The TCP segment in a link-layer packet, or None for anything else."""
    if link == 1:  # Ethernet (Linux captures lo this way)
        off, ethertype = 14, pkt[12:14] if len(pkt) >= 14 else b""
        while ethertype == b"\x81\x00" and len(pkt) >= off + 4:  # VLAN tags
            ethertype, off = pkt[off + 2:off + 4], off + 4
        ip = pkt[off:] if ethertype in (b"\x08\x00", b"\x86\xdd") else b""
    elif link == 113:  # Linux cooked (tshark -i any)
        ip = pkt[16:] if pkt[14:16] in (b"\x08\x00", b"\x86\xdd") else b""
    elif link == 276:  # Linux cooked v2
        ip = pkt[20:] if pkt[0:2] in (b"\x08\x00", b"\x86\xdd") else b""
    elif link in (0, 108):  # BSD loopback
        ip = pkt[4:]
    elif link in (101, 228, 229):  # raw IP
        ip = pkt
    else:
        return None
    if len(ip) < 20:
        return None
    if ip[0] >> 4 == 4:
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        if ip[9] != 6 or struct.unpack_from(">H", ip, 6)[0] & 0x3FFF:  # not TCP, or a fragment
            return None
        src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
        tcp = ip[ihl:total] if total >= ihl else ip[ihl:]
    elif ip[0] >> 4 == 6 and len(ip) >= 40:
        if ip[6] != 6:  # extension headers are not followed: Kafka traffic does not use them
            return None
        plen = struct.unpack_from(">H", ip, 4)[0]
        src, dst = _ip6(ip[8:24]), _ip6(ip[24:40])
        tcp = ip[40:40 + plen]
    else:
        return None
    if len(tcp) < 20:
        return None
    sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
    doff = (tcp[12] >> 4) * 4
    return Segment(n, t, src, sport, dst, dport, seq, tcp[13], bytes(tcp[doff:]))


def _ip6(b: bytes) -> str:
    return ":".join(f"{x:x}" for x in struct.unpack(">8H", b))


# ------------------------------------------------------------------ reassembly

@dataclass
class Piece:
    """A frame one side sent: its bytes, the capture frame where it starts, the time of the
    segment that completed it."""

    data: bytes
    frame: int
    time: float


def _rel(seq: int, isn: int) -> int:
    return (seq - isn) % (1 << 32)


def reassemble(segs: list[Segment], isn: int | None) -> tuple[bytes, list[tuple[int, int, float]], Problem | None]:
    """One direction's byte stream from its data segments (any order, retransmissions,
    overlaps). ``isn``: the sequence number of the first data byte when a SYN was seen.
    Returns the contiguous bytes, (stream offset, frame, time) marks where each segment's
    new bytes start, and a Problem if a gap cut the stream short."""
    data = [s for s in segs if s.payload]
    if not data:
        return b"", [], None
    if isn is None:  # no SYN captured: start at the lowest sequence number, modulo 2**32
        ref = data[0].seq
        base = (ref + min(((s.seq - ref + (1 << 31)) % (1 << 32)) - (1 << 31) for s in data)) % (1 << 32)
    else:
        base = isn
    data.sort(key=lambda s: (_rel(s.seq, base), s.frame))
    out = bytearray()
    marks: list[tuple[int, int, float]] = []
    for s in data:
        start = _rel(s.seq, base)
        if start > (1 << 31):  # before the base: a retransmission of pre-SYN bytes
            continue
        end = start + len(s.payload)
        if end <= len(out):
            continue  # retransmitted: every byte already placed
        if start > len(out):
            return bytes(out), marks, Problem(s.frame, f"gap in the TCP stream: {start - len(out)} "
                                              f"byte(s) missing at stream offset {len(out)}")
        marks.append((len(out), s.frame, s.time))
        out += s.payload[len(out) - start:]
    return bytes(out), marks, None


def split_frames(stream: bytes, marks: list[tuple[int, int, float]]) -> tuple[list[Piece], Problem | None]:
    """Kafka's size-prefixed frames of one direction's stream."""
    pieces: list[Piece] = []
    pos, mi = 0, 0

    def mark_at(offset: int) -> tuple[int, float]:
        nonlocal mi
        while mi + 1 < len(marks) and marks[mi + 1][0] <= offset:
            mi += 1
        return marks[mi][1], marks[mi][2]

    while pos < len(stream):
        frame_no, _ = mark_at(pos)
        if len(stream) - pos < 4:
            return pieces, Problem(frame_no, f"truncated frame: {len(stream) - pos} byte(s) at "
                                             f"stream offset {pos}, a size prefix needs 4")
        size = struct.unpack_from(">i", stream, pos)[0]
        if size < 0 or size > MAX_FRAME:
            return pieces, Problem(frame_no, f"not Kafka: size prefix {size} at stream offset {pos} "
                                             f"(0..{MAX_FRAME})")
        end = pos + 4 + size
        if end > len(stream):
            return pieces, Problem(frame_no, f"truncated frame: size prefix says {size} byte(s), "
                                             f"{len(stream) - pos - 4} captured (stream offset {pos})")
        _, done = mark_at(end - 1)
        pieces.append(Piece(stream[pos:end], frame_no, done))
        pos = end
    return pieces, None
