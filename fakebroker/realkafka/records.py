"""Reading what a real group coordinator persisted: Fetch ``__consumer_offsets`` through
``fakebroker.client``, split the record batches (format v2), decode the coordinator's
records with the project's codec (``schemas/kafka-records/``).

    records = await fetch_all(conn, "__consumer_offsets", 0)
    value = latest_group_metadata(records, "my-group")   # GroupMetadataValue, or None

Only what the coordinator writes is supported: magic 2 batches, uncompressed or gzip
(``offsets.topic.compression.codec`` is ``none`` by default); control batches are skipped.
"""

from __future__ import annotations

import asyncio
import gzip
import struct
import time
from dataclasses import dataclass
from typing import Any

from ..client import KafkaConnection
from ..protocol import Registry, Struct, default_registry

OFFSETS_TOPIC = "__consumer_offsets"
GROUP_METADATA_TYPE = 2
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class RecordFormatError(ValueError):
    pass


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's record fields) -> (value, new position)."""
    shift = raw = 0
    while True:
        if pos >= len(buf):
            raise RecordFormatError("truncated varint")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise RecordFormatError("varint too long")
    return (raw >> 1) ^ -(raw & 1), pos


def _bytes_field(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise RecordFormatError("truncated record field")
    return buf[pos:pos + n], pos + n


def decode_batches(data: bytes) -> list[Record]:
    """Every record of the (magic 2) batches in ``data``; a trailing partial batch (a fetch
    cut at its byte limit) is ignored, as clients do."""
    out: list[Record] = []
    pos = 0
    while pos + 12 <= len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break  # partial batch
        magic = data[pos + 16]
        if magic != 2:
            raise RecordFormatError(f"batch at offset {base_offset}: magic {magic}, only 2 is read")
        (attributes,) = struct.unpack_from(">h", data, pos + 21)
        base_ts = struct.unpack_from(">q", data, pos + 27)[0]
        (count,) = struct.unpack_from(">i", data, pos + 57)
        body = data[pos + 61:end]
        codec = attributes & 0x07
        if codec == 1:
            body = gzip.decompress(body)
        elif codec:
            raise RecordFormatError(f"batch at offset {base_offset}: {_CODECS.get(codec, codec)} "
                                    f"compression is not read (set offsets.topic.compression.codec=0)")
        if attributes & 0x20:  # control batch (transaction markers)
            pos = end
            continue
        rp = 0
        for _ in range(count):
            size, rp = _varint(body, rp)
            rend = rp + size
            rp += 1  # record attributes
            ts_delta, rp = _varint(body, rp)
            off_delta, rp = _varint(body, rp)
            key, rp = _bytes_field(body, rp)
            value, rp = _bytes_field(body, rp)
            out.append(Record(base_offset + off_delta, base_ts + ts_delta, key, value))
            rp = rend  # headers: skipped
        pos = end
    return out


#: Partition errors of a partition whose leader the broker has not taken up yet (just created,
#: or moving): NOT_LEADER_OR_FOLLOWER (6), UNKNOWN_TOPIC_OR_PARTITION (3), LEADER_NOT_AVAILABLE
#: (5). A request it refused for one of them did nothing, so it may be sent again. A new
#: topic's Metadata can name its leader before that broker serves the partition.
LEADER_NOT_READY = frozenset({3, 5, 6})


async def fetch_all(conn: KafkaConnection, topic: str, partition: int, *, start: int = 0,
                    max_bytes: int = 4 << 20, registry: Registry | None = None,
                    leader_wait_s: float = 10.0) -> list[Record]:
    """Every record of one partition from ``start`` up to its high watermark (Fetch v12).
    A partition whose leader is not ready is asked again for up to ``leader_wait_s``."""
    reg = registry or default_registry()
    req = reg["FetchRequest"].cls
    out: list[Record] = []
    offset = start
    deadline = time.monotonic() + leader_wait_s
    for _ in range(10_000):
        body = reg["FetchRequest"].new(
            cluster_id=None, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
            isolation_level=0, session_id=0, session_epoch=-1,
            topics=[req.FetchTopic(topic=topic, partitions=[req.FetchPartition(  # type: ignore[attr-defined]
                partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=max_bytes)])],
            forgotten_topics_data=[], rack_id="")
        resp = (await conn.send(body, 12)).response
        if resp.error_code:
            raise RecordFormatError(f"Fetch {topic}-{partition}: error {resp.error_code}")
        p = resp.responses[0].partitions[0]
        if p.error_code in LEADER_NOT_READY and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            continue
        if p.error_code:
            raise RecordFormatError(f"Fetch {topic}-{partition}: partition error {p.error_code}")
        batch = decode_batches(bytes(p.records or b""))
        fresh = [r for r in batch if r.offset >= offset]
        out.extend(fresh)
        if fresh:
            offset = fresh[-1].offset + 1
        if offset >= p.high_watermark or not batch:
            return out
        if not fresh:
            # Only control records or already-seen ones: step past the last batch read.
            offset = max(offset, batch[-1].offset + 1)
    raise RecordFormatError(f"Fetch {topic}-{partition}: did not reach the high watermark")


def decode_key(key: bytes, registry: Registry | None = None) -> tuple[int, Struct | None]:
    """A coordinator record key -> (record type, key struct or None for types without a spec)."""
    reg = registry or default_registry()
    (rtype,) = struct.unpack_from(">h", key, 0)
    if rtype != GROUP_METADATA_TYPE:
        return rtype, None
    return rtype, reg["GroupMetadataKey"].decode(key[2:], 0)


def decode_group_metadata_value(value: bytes, registry: Registry | None = None) -> tuple[int, Struct]:
    """A GroupMetadataValue record value -> (value version, struct)."""
    reg = registry or default_registry()
    (version,) = struct.unpack_from(">h", value, 0)
    return version, reg["GroupMetadataValue"].decode(value[2:], version)


@dataclass
class GroupRecord:
    offset: int
    version: int
    value: Any  # GroupMetadataValue, or None for a tombstone


def group_metadata_records(records: list[Record], group: str,
                           registry: Registry | None = None) -> list[GroupRecord]:
    """The GroupMetadata records of ``group``, in log order."""
    out = []
    for r in records:
        if r.key is None or len(r.key) < 2:
            continue
        rtype, key = decode_key(r.key, registry)
        if rtype != GROUP_METADATA_TYPE or key is None or key.group != group:  # type: ignore[attr-defined]
            continue
        if r.value is None:
            out.append(GroupRecord(r.offset, -1, None))
        else:
            version, value = decode_group_metadata_value(r.value, registry)
            out.append(GroupRecord(r.offset, version, value))
    return out
