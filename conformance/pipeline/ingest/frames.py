"""What transcript and pcap ingest share: the decode step's row shape (pandas rows from the
executors, Spark rows from expressions) and a grouped pandas step that costs one Python
call per Arrow batch."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..tables import DECODED

COLUMNS = DECODED.fieldNames()


def _table(out: list[dict[str, Any]]) -> pd.DataFrame:
    if not out:
        return pd.DataFrame(columns=COLUMNS)
    return pd.DataFrame(out, columns=COLUMNS).astype(object).where(lambda d: d.notna(), None)


def decoded_frame(rows: Iterable[dict[str, Any]], source: str, kind: str, digest: str,
                  conn: str) -> pd.DataFrame:
    return _table([{**r, "source": source, "source_kind": kind, "source_hash": digest, "conn": conn}
                   for r in rows])


def as_decoded(df: DataFrame) -> DataFrame:
    """``df``'s columns in the decode step's shape (``DECODED``): its own cast to the table's
    types, the others null (a reject row has only where and why)."""
    have = set(df.columns)
    return df.select(*[(F.col(f.name) if f.name in have else F.lit(None)).cast(f.dataType).alias(f.name)
                       for f in DECODED.fields])


def in_groups(df: DataFrame, keys: list[str], order: str,
              fn: Callable[[pd.DataFrame], pd.DataFrame], schema: Any) -> DataFrame:
    """``fn`` over every group of ``df`` by ``keys``, like groupBy().applyInPandas but with one
    pandas call per Arrow batch rather than per group (a call per connection or group costs
    more than the work on its few rows): one shuffle puts each group in one partition,
    sorted; a group cut by a batch boundary is carried into the next batch, never split."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        carry: pd.DataFrame | None = None
        for pdf in batches:
            if carry is not None and len(carry):
                pdf = pd.concat([carry, pdf], ignore_index=True)
            if pdf.empty:
                continue
            tail = pd.Series(True, index=pdf.index)
            for k in keys:
                tail &= pdf[k] == pdf[k].iloc[-1]
            carry = pdf[tail]
            if (~tail).any():
                yield pd.concat([fn(g) for _, g in pdf[~tail].groupby(keys, sort=False)],
                                ignore_index=True)
        if carry is not None and len(carry):
            yield fn(carry)

    return df.repartition(*keys).sortWithinPartitions(*keys, order).mapInPandas(run, schema)
