"""The executor side shared by transcript and pcap ingest: one connection's frames (a
pandas group) in, exchange and reject rows out, through ``decode.pair``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from ..decode import Frame, pair
from ..tables import DECODED

COLUMNS = DECODED.fieldNames()


def decoded_frame(rows: Iterable[dict[str, Any]], source: str, kind: str, digest: str,
                  conn: str) -> pd.DataFrame:
    out = [{**r, "source": source, "source_kind": kind, "source_hash": digest, "conn": conn}
           for r in rows]
    return pd.DataFrame(out, columns=COLUMNS).astype(object).where(lambda d: d.notna(), None) \
        if out else pd.DataFrame(columns=COLUMNS)


def decode_frames(frames: list[Frame], source: str, kind: str, digest: str, conn: str) -> pd.DataFrame:
    frames.sort(key=lambda f: f.ref)
    return decoded_frame(pair(frames), source, kind, digest, conn)
