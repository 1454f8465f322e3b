"""What transcript and pcap ingest share: the decode step's row shape (pandas rows from the
executors, Spark rows from expressions) and a grouped Python step that costs one Python
call per Arrow batch."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..archives import settle_archives
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
              fn: Callable[[list[dict[str, Any]]], list[dict[str, Any]]], schema: StructType) -> DataFrame:
    """``fn`` over the rows (plain dicts) of every group of ``df`` by ``keys``, like
    groupBy().applyInPandas but with one Python call per Arrow batch rather than per group
    (a call per group costs more than the work on its few rows), and rows straight from
    Arrow (``to_pylist``: ints, lists and None, no pandas or numpy objects to convert back):
    one shuffle puts each group in one partition, sorted; a group cut by a batch boundary
    is carried into the next batch, never split."""
    arrow_schema = to_arrow_schema(schema)

    def batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist(rows, schema=arrow_schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        settle_archives()
        key = operator.itemgetter(*keys)
        carry: list[dict[str, Any]] = []
        for b in batches:
            rows = carry + b.to_pylist()
            if not rows:
                continue
            cut, last = len(rows), key(rows[-1])
            while cut and key(rows[cut - 1]) == last:
                cut -= 1
            carry = rows[cut:]
            out = [r for _, g in itertools.groupby(rows[:cut], key) for r in fn(list(g))]
            if out:
                yield batch(out)
        if carry:
            yield batch(fn(carry))

    return df.repartition(*keys).sortWithinPartitions(*keys, order).mapInArrow(run, schema)
