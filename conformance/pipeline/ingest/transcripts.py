"""Transcripts (.jsonl) into exchanges and rejects, in Spark's own engine: the JSON reader
parses each line against the schema derived from ``schemas/transcript.schema.json`` (a body
kept as its JSON text, then typed by ``tables.BODY`` in a column of its own, so it is parsed
once), column expressions made from the exchange's field table (``ingest.fields``) take each
line's own half of the exchange's fields, a window pairs each connection's requests and
responses (``fakebroker.exchange.pairing``'s rule), and Python runs only where no Spark
expression can: the strict codec's check of every body and the reason a bad line is bad
(``_problems``, one Arrow UDF in the same scan, the codec run once per body a worker has
not seen lately), and Connect's embedded bytes (JoinGroup and SyncGroup only, an Arrow UDF
with cached decoders).

The text is read twice: a cheap count of lines per file split (line numbers without a sort),
then one scan that parses each line once. Shuffles: one, by (file, connection, correlation
id), of the narrow per-line fields (a file number, not its path); bad lines go through it
with no connection, so they pair with nothing."""

from __future__ import annotations

import functools
import json
import urllib.parse
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

from fakebroker.exchange import transcript
from fakebroker.exchange.fields import EMBEDDED_APIS, embedded_fields

from ..archives import settle_archives
from ..decode import body_problem, registry
from ..tables import BODY, EMBEDDED, transcript_line_schema
from .fields import columns, half
from .frames import as_decoded

REQUIRED = ("conn", "api_key", "version", "correlation_id", "body")


def line_problem(text: str | None) -> str:
    """Why a line Spark could not read as a transcript event is bad (rejected lines only):
    the transcript format's reason (``fakebroker.exchange.transcript.line_problem``), else
    what Spark needs of a line that the format leaves open."""
    problem = transcript.line_problem(text or "")
    if problem is not None:
        return problem
    obj = json.loads(text or "")
    kind = obj["kind"]
    missing = [k for k in REQUIRED if obj.get(k) is None]
    if kind == "close" or missing:
        return f"{kind}: {', '.join(missing or ['conn'])} required"
    return f"{kind}: api_key {obj['api_key']} is no API of the codec's registry"


def _source_of(file_path: str) -> str:
    """A path as the user named it, from Spark's ``_metadata.file_path`` URI."""
    return urllib.parse.unquote(file_path[len("file:"):].removeprefix("//") if file_path.startswith("file:")
                                else file_path)


# The line fields ingest reads, typed as the JSON Schema derives them; the parser skips the
# others (the frame's raw hex above all: the longest field) instead of copying them into rows.
READ = ("kind", "conn", "correlation_id", "api_key", "version", "client_id", "time", "vtime_ms", "body")


def _read_schema() -> StructType:
    full = transcript_line_schema()
    return StructType([full[name] for name in READ])


def _parsed(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """(_path, _block, _pos, value, j): every line of the files parsed once, its body kept
    as JSON text. Parsed in a projection that is not deterministic (the row position), so
    no filter is pushed below it to parse a line once per field read."""
    return spark.read.text(list(files)).select(
        F.col("_metadata.file_path").alias("_path"), F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_pos"), "value",
        F.from_json("value", _read_schema()).alias("j"))


def lines(spark: SparkSession, files: dict[str, str]) -> tuple[DataFrame, DataFrame]:
    """(lines, names): every line as (fid, line, value, j), ``fid`` a small file number and
    ``names`` its (fid, source, source_hash). A line's number is its index within its file
    split plus the lines of the file's earlier splits (counted first in a cheap text pass)."""
    where = [F.col("_metadata.file_path").alias("_path"), F.col("_metadata.file_block_start").alias("_block"),
             F.monotonically_increasing_id().alias("_pos")]
    splits = spark.read.text(list(files)).select(*where).groupBy("_path", "_block").agg(
        F.count("*").alias("n"), F.min("_pos").alias("first")).collect()
    fids = {p: i for i, p in enumerate(sorted(files))}
    base, before, last = [], 0, None
    for r in sorted(splits, key=lambda r: (r._path, r._block)):
        before = 0 if r._path != last else before
        base.append((r._path, r._block, fids[_source_of(r._path)], before - r.first + 1))
        before, last = before + r.n, r._path
    offsets = spark.createDataFrame(base, "_path string, _block long, fid int, _base long")
    names = spark.createDataFrame([(i, p, files[p]) for p, i in fids.items()],
                                  "fid int, source string, source_hash string")
    out = (_parsed(spark, files).join(F.broadcast(offsets), ["_path", "_block"])
           .select("fid", (F.col("_pos") + F.col("_base")).alias("line"), "value", "j"))
    return out, names


# ---------------------------------------------------------------- what is wrong with a line

def _refusal(kind: str, api_key: int, text: str) -> str | None:
    try:
        return body_problem(registry(), kind, api_key, json.loads(text))
    except ValueError as e:
        return f"{kind} body: invalid JSON: {e}"


# A connection repeats its bodies (every heartbeat of a member in a generation is the same
# text), so the codec reads each body once per worker while it is recent: bounded, so a
# worker's memory does not grow with the corpus (~700 bytes a body).
_refusal_cached = functools.lru_cache(maxsize=1 << 15)(_refusal)


def _problems(arg: pa.Array) -> pa.Array:
    """Why each line is a reject, null for a good one: ``line_problem`` of a line Spark could
    not read as an event (``bad``), the strict codec's refusal of a request or response
    body. One Python call per Arrow batch. A batch repeats its bodies (a member's heartbeats
    and their answers), so the bodies are told apart in Arrow (a dictionary encoding) and
    Python sees each distinct (kind, API, body) of the batch once."""
    settle_archives()
    out = np.full(len(arg), None, dtype=object)
    valid = arg.is_valid()
    bad = arg.field("bad")
    for i in np.flatnonzero(pc.and_(valid, bad.is_valid()).to_numpy(zero_copy_only=False)):
        out[i] = line_problem(bad[i].as_py())
    rows = np.flatnonzero(pc.and_(valid, bad.is_null()).to_numpy(zero_copy_only=False))
    if len(rows):
        body = pc.dictionary_encode(arg.field("body").take(rows))
        response = pc.equal(arg.field("kind").take(rows), "response").to_numpy(zero_copy_only=False)
        api_key = arg.field("api_key").take(rows).to_numpy(zero_copy_only=False)
        distinct, which = np.unique(np.stack([body.indices.to_numpy(zero_copy_only=False).astype(np.int64),
                                              response.astype(np.int64), api_key.astype(np.int64)], axis=1),
                                    axis=0, return_inverse=True)
        texts = body.dictionary.to_pylist()
        found = np.array([_refusal_cached("response" if r else "request", int(k), texts[b])
                          for b, r, k in distinct.tolist()], dtype=object)
        out[rows] = found[which.reshape(-1)]
    return pa.array(out.tolist(), type=pa.string())


# ---------------------------------------------------------------- each line's half of the exchange

def _api_names() -> Column:
    reg = registry()
    return F.create_map(*[x for k in sorted(reg.requests) for x in (F.lit(k), F.lit(reg.api_name(k)))])


def _embedded_in(body: Column, api: Column, side: str) -> Column:
    """What the embedded decoder reads of a line (JoinGroup and SyncGroup only): of a
    request its protocol type, first protocol's metadata and the leader's plan; of a
    response its members and assignment."""
    if side == "request":
        got = F.struct(body["ProtocolType"].alias("ptype"),
                       F.when(F.size(body["Protocols"]) > 0,
                              F.coalesce(body["Protocols"][0]["Metadata"], F.lit(""))).alias("meta"),
                       body["Assignments"].alias("plans"))
    else:
        got = F.struct(body["Members"].alias("members"), body["Assignment"].alias("assignment"),
                       body["ErrorCode"].alias("error"))
    return F.when(api.isin(*EMBEDDED_APIS), got).alias("emb")


# ---------------------------------------------------------------- Connect's embedded bytes

_EMBEDDED_ARROW = to_arrow_type(EMBEDDED)


def _pairs_of(items: list[dict[str, Any]] | None, key: str, value: str) -> tuple[tuple[Any, Any], ...] | None:
    return None if items is None else tuple((i[key], i[value]) for i in items)


@functools.lru_cache(maxsize=1 << 14)
def _embedded(api: str, ptype: str | None, meta: str | None, plans: tuple[tuple[Any, Any], ...] | None,
              members: tuple[tuple[Any, Any], ...] | None, assignment: str | None,
              error: int | None) -> dict[str, Any] | None:
    """The embedded bytes of one JoinGroup or SyncGroup (``decode.embedded_fields``). Cached
    per worker: a group's rounds, and groups of the same workers, repeat the same bytes."""
    req = {"ProtocolType": ptype, "Protocols": None if meta is None else [{"Metadata": meta}],
           "Assignments": None if plans is None else [{"MemberId": m, "Assignment": a} for m, a in plans]}
    resp = {"Members": None if members is None else [{"MemberId": m, "Metadata": d} for m, d in members],
            "Assignment": assignment, "ErrorCode": error}
    return embedded_fields(api, req, resp) or None


def _fields_of(arr: pa.Array) -> dict[str, pa.Array]:
    """A struct array's children, each null where the struct is."""
    return {f.name: child for f, child in zip(arr.type, arr.flatten())}


def _embedded_batch(arg: pa.Array) -> pa.Array:
    """One Python call per Arrow batch, over the rows that carry embedded bytes (JoinGroup
    and SyncGroup; the rest stay null), read column by column; each distinct result is
    converted back to Arrow once and the rows take their copy of it."""
    settle_archives()
    valid = arg.is_valid()
    top = _fields_of(arg.filter(valid))
    q, p = _fields_of(top["q"]), _fields_of(top["p"])
    cols = [c.to_pylist() for c in (top["api"], q["ptype"], q["meta"], q["plans"], p["members"],
                                     p["assignment"], p["error"])]
    results: list[dict[str, Any] | None] = []
    seen: dict[int, int] = {}
    take: list[int | None] = [None] * len(arg)
    for i, api, ptype, meta, plans, members, assignment, error in zip(
            np.flatnonzero(valid.to_numpy(zero_copy_only=False)), *cols):
        out = _embedded(api, ptype, meta, _pairs_of(plans, "MemberId", "Assignment"),
                        _pairs_of(members, "MemberId", "Metadata"), assignment, error)
        at = seen.get(id(out))
        if at is None:
            at = seen[id(out)] = len(results)
            results.append(out)
        take[i] = at
    return pa.array(results, type=_EMBEDDED_ARROW).take(pa.array(take, type=pa.int32()))


# ---------------------------------------------------------------- pairing

def _pairs(frames: DataFrame) -> DataFrame:
    """Every request with its answer (``r``, null when unanswered), every response that
    answers no request (``orphan``), and every bad line (``problem`` set; no conn, so they
    pair with nothing). Kafka answers a connection's requests in order, so the n-th response
    with a correlation id answers the n-th request with it: one shuffle by (file, conn,
    correlation id) of the narrow halves, two sorts within it."""
    key = ["fid", "conn", "correlation_id"]
    is_req, is_resp = F.col("kind") == "request", F.col("kind") == "response"
    by_line = Window.partitionBy(*key).orderBy("line")
    n = F.when(is_req, F.count_if(is_req).over(by_line)).otherwise(F.count_if(is_resp).over(by_line))
    by_n = Window.partitionBy(*key).orderBy("n", "kind")  # "request" sorts before "response"
    nxt = F.lead(F.struct("kind", "n", "line", "time", "vtime_ms", "p")).over(by_n)
    prev = F.lag(F.struct("kind", "n", "line")).over(by_n)
    answers = lambda a, b: (a["kind"] == "request") & (b["kind"] == "response") & (a["n"] == b["n"]) \
        & (a["line"] < b["line"])  # noqa: E731
    me = F.struct("kind", "n", "line")
    ev = frames.withColumn("n", n).select("*", nxt.alias("_next"), prev.alias("_prev"))
    orphan = F.coalesce(is_resp & ~F.coalesce(answers(F.col("_prev"), me), F.lit(False)), F.lit(False))
    return (ev.where(is_req | orphan | F.col("problem").isNotNull())
            .select("*", F.when(is_req & answers(me, F.col("_next")), F.col("_next")).alias("r"),
                    orphan.alias("orphan")))


def title(path: str) -> str | None:
    """The header's title (or id): the format puts the header on line 1, so the driver reads
    one line per file rather than Spark filtering the corpus for it."""
    try:
        with open(path, encoding="utf-8") as f:
            head = json.loads(f.readline())
        return head.get("title") or head.get("id") if head.get("kind") == "header" else None
    except (OSError, ValueError, AttributeError):
        return None


def ingest(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """Exchanges and rejects (``reject`` set) of the transcripts, in the decode step's shape."""
    parsed, names = lines(spark, files)
    j = F.col("j")
    api_of = _api_names()
    kind = j["kind"]
    is_frame = kind.isin("request", "response")
    ok = F.coalesce((kind == "header") | ((kind == "close") & j["conn"].isNotNull()) | (
        is_frame & j["conn"].isNotNull()
        & j["api_key"].isNotNull() & j["version"].isNotNull() & j["correlation_id"].isNotNull()
        & j["body"].startswith("{") & api_of[j["api_key"]].isNotNull()), F.lit(False))
    # One scan: each line is read and parsed once, and what Python must judge (a line Spark
    # could not read, the strict codec's check of a body) goes to one Arrow UDF, the rest null.
    check = F.when(~ok, F.struct(F.col("value").alias("bad"), F.lit(None).cast("string").alias("kind"),
                                 F.lit(None).cast("long").alias("api_key"), F.lit(None).cast("string").alias("body"))
                   ).when(is_frame, F.struct(F.lit(None).cast("string").alias("bad"), kind.alias("kind"),
                                             j["api_key"].alias("api_key"), j["body"].alias("body")))
    parsed = parsed.withColumn("problem", F.arrow_udf(_problems, "string")(check))
    good = F.col("problem").isNull()
    # The body parsed once, in its own column: written inline, every field read becomes its
    # own pruned ``from_json`` (Spark's JSON expression optimization), one parse per field.
    parsed = parsed.withColumn("_body", F.when(good & is_frame, F.from_json(j["body"], BODY)))
    body = F.col("_body")
    api = api_of[j["api_key"]]
    # No filter here: Spark would push it below the join and run the UDF twice; header and
    # close lines (a few) are dropped after the shuffle.
    frames = parsed.select(
        "fid", "line", F.when(good, kind).alias("kind"), F.when(good, j["conn"]).alias("conn"),
        F.when(good, j["correlation_id"]).alias("correlation_id"),
        j["api_key"].alias("api_key"), j["version"].alias("version"), j["client_id"].alias("client_id"),
        j["time"].alias("time"), j["vtime_ms"].alias("vtime_ms"),
        *[F.when(good & (kind == side), half(body, api, side, _embedded_in(body, api, side))).alias(name)
          for side, name in (("request", "q"), ("response", "p"))], "problem")
    pairs = _pairs(frames)
    q, p = F.col("q"), F.col("r.p")
    api = api_of[F.col("api_key")]
    embedded = F.arrow_udf(_embedded_batch, EMBEDDED)
    emb_in = F.when(q["emb"].isNotNull(), F.struct(api.alias("api"), q["emb"].alias("q"), p["emb"].alias("p")))
    exchanges = pairs.withColumn("_emb", embedded(emb_in)).select(
        "fid", "conn", F.col("line").alias("ref"),
        F.col("r.line").alias("resp_ref"),
        F.col("time").alias("req_time"), F.col("r.time").alias("resp_time"),
        F.col("vtime_ms").alias("req_vtime_ms"), F.col("r.vtime_ms").alias("resp_vtime_ms"),
        "api_key", api.alias("api"), "version", "correlation_id", "client_id",
        *columns(q, p, F.col("_emb"), api),
        F.coalesce("problem", F.when(F.col("orphan"), F.concat(
            F.lit("response with correlation id "), F.col("correlation_id").cast("string"),
            F.lit(" answers no open request")))).alias("reject"))
    out = exchanges.join(F.broadcast(names), "fid").drop("fid")
    return as_decoded(out.withColumn("source_kind", F.lit("transcript")))
