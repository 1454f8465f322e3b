"""Captures (.pcap / .pcapng) into exchanges and rejects: executors parse each file into
TCP segments, a shuffle brings each connection's segments together, and each connection is
reassembled, cut into Kafka frames and decoded by the codec."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..archives import settle_archives
from ..decode import Frame, pair
from ..tables import DECODED
from ..tcp import ACK, SYN, Problem, Segment, reassemble, segments, split_frames
from .frames import as_decoded, decoded_frame

PACKET = ("source string, source_hash string, conn string, frame long, time double, src string, "
          "sport int, dst string, dport int, seq long, flags int, payload binary, problem string")


def _conn(s: Segment) -> str:
    a, b = (s.src, s.sport), (s.dst, s.dport)
    lo, hi = sorted([a, b])
    return f"{lo[0]}:{lo[1]}-{hi[0]}:{hi[1]}"


def _parse(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    settle_archives()
    for pdf in batches:
        for r in pdf.itertuples(index=False):
            rows = []
            for s in segments(bytes(r.content)):
                if isinstance(s, Problem):
                    rows.append((r.source, r.source_hash, None, s.frame, None, None, None, None,
                                 None, None, None, None, s.reason))
                elif s.payload or s.flags & SYN:
                    rows.append((r.source, r.source_hash, _conn(s), s.frame, s.time, s.src, s.sport,
                                 s.dst, s.dport, s.seq, s.flags, s.payload, None))
            yield pd.DataFrame(rows, columns=[c.split()[0] for c in PACKET.split(", ")])


def _client_side(segs: list[Segment]) -> tuple[str, int]:
    """The side that opened the connection (sent the bare SYN); without a handshake in the
    capture, the side on the higher (ephemeral) port."""
    for s in segs:
        if s.flags & SYN and not s.flags & ACK:
            return s.src, s.sport
    s = segs[0]
    return max([(s.src, s.sport), (s.dst, s.dport)], key=lambda a: (a[1], a[0]))


def _stream(pdf: pd.DataFrame) -> pd.DataFrame:
    first = pdf.iloc[0]
    segs = [Segment(int(r.frame), float(r.time), r.src, int(r.sport), r.dst, int(r.dport),
                    int(r.seq), int(r.flags), bytes(r.payload or b""))
            for r in pdf.itertuples(index=False)]
    segs.sort(key=lambda s: s.frame)
    client = _client_side(segs)
    frames: list[Frame] = []
    rejects: list[dict] = []
    for kind, side in (("request", lambda s: (s.src, s.sport) == client),
                       ("response", lambda s: (s.src, s.sport) != client)):
        mine = [s for s in segs if side(s)]
        syn = next((s for s in mine if s.flags & SYN), None)
        stream, marks, gap = reassemble(mine, (syn.seq + 1) % (1 << 32) if syn else None)
        pieces, cut = split_frames(stream, marks)
        frames += [Frame(kind=kind, ref=p.frame, raw=p.data, time=p.time) for p in pieces]
        rejects += [{"ref": p.frame, "reject": f"{kind} stream of {first.conn}: {p.reason}"}
                    for p in (gap, cut) if p is not None]
    frames.sort(key=lambda f: f.ref)
    return decoded_frame([*pair(frames), *rejects], first.source, "pcap", first.source_hash,
                         client_label(client))


def client_label(client: tuple[str, int]) -> str:
    return f"{client[0]}:{client[1]}"


def ingest(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """Decoded exchanges and rejects (``reject`` set) of the captures."""
    names = spark.createDataFrame(list(files.items()), "source string, source_hash string")
    content = (spark.read.format("binaryFile").load(list(files))
               .select(F.url_decode(F.regexp_replace("path", "^file:(//)?", "")).alias("source"), "content")
               .join(F.broadcast(names), "source"))
    packets = content.mapInPandas(_parse, PACKET).cache()
    problems = as_decoded(packets.where(F.col("problem").isNotNull()).select(
        "source", F.lit("pcap").alias("source_kind"), "source_hash",
        F.col("frame").alias("ref"), F.concat(F.lit("capture: "), "problem").alias("reject")))
    streams = (packets.where(F.col("problem").isNull()).drop("problem")
               .groupBy("source", "conn").applyInPandas(_stream, DECODED))
    return streams.unionByName(problems)
