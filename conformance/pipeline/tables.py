"""The warehouse's tables: their Spark schemas, where they live, and the transcript line
schema derived from ``schemas/transcript.schema.json`` (the one contract, not a copy)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql.types import (ArrayType, BooleanType, DataType, DoubleType, IntegerType,
                               LongType, StringType, StructField, StructType)

from fakebroker.exchange.fields import FIELDS, Field, Type
from fakebroker.protocol import default_schema_dir

S, I, L, D = StringType(), IntegerType(), LongType(), DoubleType()
UNITS = ArrayType(S)


def _fields(*cols: tuple[str, DataType]) -> StructType:
    return StructType([StructField(n, t, True) for n, t in cols])


# ---------------------------------------------------------------- transcript lines

_JSON_TYPES: dict[str, DataType] = {"integer": L, "number": D, "string": S, "boolean": BooleanType()}


def _spark_type(prop: dict[str, Any], defs: dict[str, Any]) -> DataType:
    if "$ref" in prop:
        prop = defs[prop["$ref"].rsplit("/", 1)[-1]]
    types = prop.get("type")
    types = [t for t in ([types] if isinstance(types, str) else types or []) if t != "null"]
    if len(types) == 1 and types[0] in _JSON_TYPES:
        return _JSON_TYPES[types[0]]
    if types == ["array"] and prop.get("items", {}).get("type") == "string":
        return ArrayType(S)
    # Objects (bodies, matchers) and mixed types (conn: integer or string) stay JSON text:
    # Spark's reader keeps a value's raw text for a string column.
    return S


@functools.cache
def transcript_line_schema() -> StructType:
    """Every property any line kind may have, typed from the JSON Schema."""
    schema = json.loads((default_schema_dir() / "transcript.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    cols: dict[str, DataType] = {}
    for kind in ("time", "request", "response", "close"):
        for name, prop in defs[kind].get("properties", {}).items():
            if prop == {}:  # re-listed for additionalProperties; typed in "time"
                continue
            t = _spark_type(prop, defs)
            cols[name] = t if name not in cols or cols[name] == t else S
    return StructType([StructField(n, t, True) for n, t in cols.items()])


_UNIT_CAT = _fields(("Connectors", ArrayType(S)),
                    ("Tasks", ArrayType(_fields(("ConnectorId", S), ("TaskId", I)))))

# ---------------------------------------------------------------- warehouse tables

def spark_type(t: Type) -> DataType:
    """A column type of the exchange's field table as Spark's."""
    if isinstance(t, str):
        return {"string": S, "int": I}[t]
    kind, inner = t
    if kind == "array":
        return ArrayType(spark_type(inner))
    return _fields(*[(n, spark_type(c)) for n, c in inner])


def exchange_schema(fields: Sequence[Field] = FIELDS) -> StructType:
    """One row per request/response pair: where and when it is (the pipeline's), then the
    exchange's fields (``fakebroker.exchange.fields.FIELDS``, one row each). ``ref``: the
    transcript line or pcap frame number of the request (``resp_ref`` of the response), so
    a person can open the evidence."""
    return _fields(
        ("source", S), ("source_kind", S), ("source_hash", S), ("conn", S),
        ("ref", L), ("resp_ref", L), ("req_time", D), ("resp_time", D),
        ("req_vtime_ms", L), ("resp_vtime_ms", L),
        ("api_key", I), ("api", S), ("version", I), ("correlation_id", I), ("client_id", S),
        *[(f.name, spark_type(f.type)) for f in fields],
        ("day", S),
    )


def embedded_schema(fields: Sequence[Field] = FIELDS) -> StructType:
    """Connect's embedded bytes decoded (``fakebroker.exchange.fields.embedded_fields``): the
    columns some API takes from them, a subset of the exchanges'."""
    return _fields(*[(f.name, spark_type(f.type)) for f in fields if any(t.side == "embedded" for t in f.takes())])


EXCHANGE = exchange_schema()


# The request and response body fields ingest reads, any API (JSON forms, spec names):
# what the readers read, typed here; ``body_schema`` adds a field a new column takes as is.
# ``Assignment`` is hex for SyncGroup and an object for the draft's heartbeat: a string
# column keeps an object's JSON text, parsed again where the API is known.
_READ_BODY = _fields(
    ("GroupId", S), ("MemberId", S), ("GenerationId", I), ("ErrorCode", I), ("ProtocolType", S),
    ("ProtocolName", S), ("SessionTimeoutMs", I), ("RebalanceTimeoutMs", I), ("Leader", S),
    ("MemberEpoch", I), ("Protocols", ArrayType(_fields(("Name", S), ("Metadata", S)))),
    ("Members", ArrayType(_fields(("MemberId", S), ("Metadata", S)))),
    ("Assignments", ArrayType(_fields(("MemberId", S), ("Assignment", S)))), ("Assignment", S),
    ("ClientAssignors", ArrayType(_fields(("Name", S), ("MinimumVersion", I), ("MaximumVersion", I)))), ("ConnectorsAndTasks", _UNIT_CAT),
    # OffsetFetch v8+ lists its groups (objects); DescribeGroups lists names: JSON text
    ("Groups", S))


def body_schema(fields: Sequence[Field] = FIELDS) -> StructType:
    """The body fields ingest parses: the readers' inputs, and every top-level field a
    column of ``fields`` takes as it is (typed as that column)."""
    extra: dict[str, DataType] = {}
    for f in fields:
        for t in f.takes():
            if t.side != "embedded" and t.how == "value" and "." not in t.path \
                    and t.path not in _READ_BODY.fieldNames():
                extra.setdefault(t.path, spark_type(f.type))
    return StructType(_READ_BODY.fields + [StructField(n, t, True) for n, t in extra.items()])


BODY = body_schema()

REJECT = _fields(("source", S), ("source_kind", S), ("source_hash", S), ("ref", L),
                 ("ref_kind", S), ("reason", S))

EMBEDDED = embedded_schema()

# The decode step emits exchanges and rejects in one frame; ``reject`` set means a reject.
DECODED = StructType(EXCHANGE.fields + [StructField("reject", S, True)])

SOURCE = _fields(("source", S), ("source_kind", S), ("source_hash", S), ("bytes", L),
                 ("ingested_at", D), ("title", S))

OUTCOME = _fields(("run_id", S), ("report", S), ("target", S), ("implementation", S),
                  ("impl_version", S), ("suite", S), ("started", D), ("requirement", S),
                  ("level", S), ("outcome", S), ("duration_s", D), ("message", S))

RUN = _fields(("run_id", S), ("report", S), ("target", S), ("implementation", S),
              ("impl_version", S), ("suite", S), ("started", D), ("finished", D),
              ("verdict", S), ("cases", L), ("source_hash", S),
              # requirements with an outcome; those the run's scope left out (results.json)
              ("ran", L), ("left_out", UNITS))

# ``requirement``: the catalogue id the violation breaks (the suites' ids: one language).
VIOLATION = _fields(("invariant", S), ("requirement", S), ("source", S), ("source_kind", S), ("ref", L),
                    ("ref_kind", S), ("group_id", S), ("generation", I), ("members", ArrayType(S)),
                    ("unit", S), ("detail", S))

_BY_MEMBER = ArrayType(_fields(("member", S), ("units", UNITS)))
# A unit's stretch of running nowhere (cause: eager, revoked or lost; to_ms/ms null: not
# running again by the end of the recording).
_PAUSES = ArrayType(_fields(("unit", S), ("cause", S), ("from_ms", D), ("to_ms", D), ("ms", D)))
# One row per group and rebalance round (classic generation or the draft's member epoch);
# a consumer group's rounds have no Connect units: their unit counts are null.
ROUND = _fields(("source", S), ("group_id", S), ("generation", I), ("mode", S), ("protocol", S),
                ("leader", S), ("member_ids", ArrayType(S)), ("members", I), ("start_ms", D),
                ("end_ms", D), ("duration_ms", D), ("units_moved", I), ("units_paused", I),
                ("pause_ms", D), ("assigned", _BY_MEMBER), ("revoked", _BY_MEMBER),
                ("revocations", I), ("pauses", _PAUSES), ("span_ms", D))

# table name -> partition columns
PARTITIONS: dict[str, list[str]] = {
    "exchanges": ["source_kind", "day"], "rejects": ["source_kind"], "sources": [],
    "outcomes": [], "runs": [], "rounds": [], "violations": [],
}
