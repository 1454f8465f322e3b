"""Transcripts (.jsonl) into exchanges and rejects, in Spark's own engine: the JSON reader
parses each line against the schema derived from ``schemas/transcript.schema.json`` (a body
kept as its JSON text, then typed by ``tables.BODY`` in a column of its own, so it is parsed
once), column expressions take each line's own half of the exchange's fields, a window pairs
each connection's requests and responses, and Python runs only where no Spark expression
can: the strict codec's check of each distinct body (``refused_bodies``, a job of its own
whose few refusals the scan joins back by the body's text), the reason a bad line is bad
(``_line_problems``, after pairing, on those lines only), and Connect's embedded bytes
(JoinGroup and SyncGroup only, an Arrow UDF with cached decoders).

The text is read three times: a cheap count of lines per file split (line numbers without a
sort), the distinct bodies for the codec, then one scan that parses each line once; no line
of the scan crosses to Python. Shuffles: the distinct bodies', and one, by (file,
connection, correlation id), of the narrow per-line fields (a file number, not its path);
bad lines go through it with no connection, so they pair with nothing."""

from __future__ import annotations

import functools
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import StructType

from ..archives import settle_archives
from ..decode import CONNECT_HB, JOIN, LEAVE, SYNC, body_problem, embedded_fields, registry
from ..tables import BODY, EMBEDDED, transcript_line_schema
from .frames import as_decoded

KINDS = ("header", "request", "response", "close")
REQUIRED = ("conn", "api_key", "version", "correlation_id", "body")


def line_problem(text: str | None) -> str:
    """Why a line Spark could not read as a transcript event is bad (rejected lines only)."""
    if text is None or not text.strip():
        return "empty line (every line is one JSON object)"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string"):
            return f"truncated line: the JSON object ends early (after {len(text)} characters)"
        return f"invalid JSON: {e.msg} at column {e.colno}"
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    kind = obj.get("kind")
    if kind not in KINDS:
        return f"kind: {kind!r} is not one of {', '.join(KINDS)}"
    if kind == "close":
        return "conn: required for request, response and close lines"
    missing = [k for k in REQUIRED if obj.get(k) is None]
    if missing:
        return f"{kind}: {', '.join(missing)} required"
    bad = [k for k in ("api_key", "version", "correlation_id") if not isinstance(obj[k], int)]
    if bad:
        return f"{kind}: {', '.join(bad)} must be integers"
    if not isinstance(obj["body"], dict):
        return f"{kind}: body must be a JSON object"
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


REFUSED = "kind string, api_key long, body string, problem string"
# Past this many refused bodies the refusals are joined by a shuffle, not sent to every task.
BROADCAST_REFUSED = 100_000


def _refusals(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The strict codec's refusal of each distinct (kind, API, body) it refuses; the bodies
    it reads are dropped. One Python call per body, once in the whole corpus."""
    settle_archives()
    for b in batches:
        rows = [(k, a, t, _refusal(k, a, t)) for k, a, t in zip(*(b.column(c).to_pylist()
                                                                  for c in ("kind", "api_key", "body")))]
        refused = [r for r in rows if r[3] is not None]
        if refused:
            yield pa.RecordBatch.from_arrays([pa.array(c) for c in zip(*refused)],
                                             names=["kind", "api_key", "body", "problem"])


def refused_bodies(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """(kind, api_key, body, problem) of every request or response body of the files that
    the strict codec refuses, each distinct (kind, API, body text) judged once: the JVM
    parses the lines and tells the bodies apart (a map-side distinct, then one shuffle of
    the distinct ones), so Python sees a body once however often a member repeats it,
    instead of every line of the corpus crossing to Python. Exact: the body's text as the
    scan reads it, compared whole."""
    j = F.col("j")
    return (spark.read.text(list(files))
            # the row position keeps the parse in one projection (see ``_parsed``)
            .select(F.monotonically_increasing_id().alias("_pos"), F.from_json("value", _read_schema()).alias("j"))
            .where(j["kind"].isin("request", "response") & j["api_key"].isNotNull() & j["body"].startswith("{"))
            .select(j["kind"].alias("kind"), j["api_key"].alias("api_key"), j["body"].alias("body"))
            .distinct().mapInArrow(_refusals, REFUSED))


def _line_problems(bad: pa.Array) -> pa.Array:
    """``line_problem`` of each line Spark could not read as an event; null elsewhere."""
    settle_archives()
    return pa.array([None if t is None else line_problem(t) for t in bad.to_pylist()], type=pa.string())


# ---------------------------------------------------------------- each line's half of the exchange

def _draft_units(c: Column) -> Column:
    """The draft's ConnectorsAndTasks as Connect's unit names, sorted (``decode.unit_names``)."""
    tasks = F.transform(F.coalesce(c["Tasks"], F.array()), lambda t: F.when(
        t["TaskId"] == -1, t["ConnectorId"]).otherwise(F.concat(t["ConnectorId"], F.lit("-"), t["TaskId"])))
    names = F.array_sort(F.array_distinct(F.concat(F.coalesce(c["Connectors"], F.array().cast("array<string>")),
                                                   tasks)))
    return F.when(c.isNull(), F.lit(None)).otherwise(names)


def _api_names() -> Column:
    reg = registry()
    return F.create_map(*[x for k in sorted(reg.requests) for x in (F.lit(k), F.lit(reg.api_name(k)))])


def _request_half(q: Column, api: Column) -> Column:
    """The exchange's fields a request line carries (the rules of ``decode.exchange_fields``),
    with what the embedded decoder reads (JoinGroup and SyncGroup only)."""
    join, sync, leave, hb = (api == JOIN), (api == SYNC), (api == LEAVE), (api == CONNECT_HB)
    leave_member = F.coalesce(F.nullif(q["MemberId"], F.lit("")), q["Members"][0]["MemberId"])
    return F.struct(
        q["GroupId"].alias("group_id"),
        F.when(leave, leave_member).otherwise(q["MemberId"]).alias("member_id"),
        q["GenerationId"].alias("generation"), q["ProtocolType"].alias("protocol_type"),
        q["ProtocolName"].alias("protocol_name"),
        F.when(join, F.transform(F.coalesce(q["Protocols"], F.array()), lambda x: x["Name"]))
        .when(hb, F.transform(F.coalesce(q["ClientAssignors"], F.array()), lambda x: x["Name"]))
        .alias("protocols"),
        F.when(join, q["SessionTimeoutMs"]).alias("session_timeout_ms"),
        F.when(join | hb, q["RebalanceTimeoutMs"]).alias("rebalance_timeout_ms"),
        F.when(hb, q["MemberEpoch"]).alias("member_epoch"),
        F.when(hb, _draft_units(q["ConnectorsAndTasks"])).alias("draft_owned"),
        F.when(hb, F.transform(F.coalesce(q["ClientAssignors"], F.array()), lambda a: F.struct(
            a["Name"].alias("name"), a["MinimumVersion"].alias("min_version"),
            a["MaximumVersion"].alias("max_version")))).alias("assignors"),
        F.when(join | sync, F.struct(
            q["ProtocolType"].alias("ptype"),  # the decoder reads the first protocol's metadata only
            F.when(F.size(q["Protocols"]) > 0, F.coalesce(q["Protocols"][0]["Metadata"], F.lit(""))).alias("meta"),
            q["Assignments"].alias("plans"))).alias("emb"))


def _response_half(p: Column, api: Column) -> Column:
    join, sync, hb = (api == JOIN), (api == SYNC), (api == CONNECT_HB)
    draft = F.from_json(p["Assignment"], "Error int, ConnectorsAndTasks struct<Connectors: "
                        "array<string>, Tasks: array<struct<ConnectorId: string, TaskId: int>>>")
    return F.struct(
        p["ErrorCode"].alias("error_code"),
        F.when(join, p["ProtocolName"]).alias("protocol_name"),
        F.when(join, p["GenerationId"]).alias("resp_generation"),
        F.when(join, p["MemberId"]).alias("resp_member_id"),
        F.when(join, p["Leader"]).alias("leader"),
        F.when(hb, p["MemberEpoch"]).alias("resp_member_epoch"),
        F.when(hb, draft["Error"]).alias("draft_error"),
        F.when(hb, _draft_units(draft["ConnectorsAndTasks"])).alias("draft_assigned"),
        F.when(join | sync, F.struct(p["Members"].alias("members"), p["Assignment"].alias("assignment"),
                                     p["ErrorCode"].alias("error"))).alias("emb"))


# ---------------------------------------------------------------- Connect's embedded bytes

_EMBEDDED_ARROW = to_arrow_type(EMBEDDED)


def _pairs_of(items: list[dict[str, Any]] | None, key: str, value: str) -> tuple[tuple[Any, Any], ...] | None:
    return None if items is None else tuple((i[key], i[value]) for i in items)


@functools.lru_cache(maxsize=1 << 14)
def _embedded(api: str, ptype: str | None, meta: str | None, plans: tuple[tuple[Any, Any], ...] | None,
              members: tuple[tuple[Any, Any], ...] | None, assignment: str | None,
              error: int | None) -> dict[str, Any] | None:
    """Connect's embedded bytes of one JoinGroup or SyncGroup. Cached per worker: a group's
    rounds, and groups of the same workers, repeat the same bytes."""
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
    return (ev.where(is_req | orphan | F.col("problem").isNotNull() | F.col("bad").isNotNull())
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


def _refused_table(spark: SparkSession, files: dict[str, str]) -> DataFrame | None:
    """The refused bodies (``refused_bodies``) as the scan joins them, columns prefixed
    ``_r_``: none (most corpora), no join; up to ``BROADCAST_REFUSED``, collected and sent
    to every task; more (a corpus mostly refused), joined by a shuffle, the distinct bodies
    judged again within the scan's job rather than held in the driver."""
    refused = refused_bodies(spark, files)
    few = refused.limit(BROADCAST_REFUSED + 1).collect()
    if not few:
        return None
    table = (F.broadcast(spark.createDataFrame(few, REFUSED)) if len(few) <= BROADCAST_REFUSED else refused)
    return table.select(*[F.col(c).alias(f"_r_{c}") for c in ("kind", "api_key", "body", "problem")])


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
    # One scan: each line is read and parsed once, and no line crosses to Python. A body the
    # strict codec refuses (judged once per distinct body, apart) is joined in by its text; a
    # line Spark could not read goes through pairing as its text, and Python says why after.
    refused = _refused_table(spark, files)
    if refused is None:
        refusal = F.lit(None).cast("string")
    else:
        parsed = parsed.join(refused, (kind == F.col("_r_kind")) & (j["api_key"] == F.col("_r_api_key"))
                             & (j["body"] == F.col("_r_body")), "left")
        refusal = F.col("_r_problem")
    parsed = parsed.select("fid", "line", "j", F.when(~ok, F.col("value")).alias("bad"),
                           F.when(ok & is_frame, refusal).alias("problem"))
    good = F.col("problem").isNull() & F.col("bad").isNull()
    # The body parsed once, in its own column: written inline, every field read becomes its
    # own pruned ``from_json`` (Spark's JSON expression optimization), one parse per field.
    parsed = parsed.withColumn("_body", F.when(good & is_frame, F.from_json(j["body"], BODY)))
    body = F.col("_body")
    api = api_of[j["api_key"]]
    # Header and close lines (a few) are dropped after the shuffle.
    frames = parsed.select(
        "fid", "line", F.when(good, kind).alias("kind"), F.when(good, j["conn"]).alias("conn"),
        F.when(good, j["correlation_id"]).alias("correlation_id"),
        j["api_key"].alias("api_key"), j["version"].alias("version"), j["client_id"].alias("client_id"),
        j["time"].alias("time"), j["vtime_ms"].alias("vtime_ms"),
        F.when(good & (kind == "request"), _request_half(body, api)).alias("q"),
        F.when(good & (kind == "response"), _response_half(body, api)).alias("p"), "problem", "bad")
    pairs = _pairs(frames)
    q, p = F.col("q"), F.col("r.p")
    api = api_of[F.col("api_key")]
    join, hb = api == JOIN, api == CONNECT_HB
    embedded = F.arrow_udf(_embedded_batch, EMBEDDED)
    emb_in = F.when(q["emb"].isNotNull(), F.struct(api.alias("api"), q["emb"].alias("q"), p["emb"].alias("p")))
    why = F.arrow_udf(_line_problems, "string")
    # Both UDFs in one projection: one Arrow round trip to Python for the two.
    exchanges = pairs.select("*", embedded(emb_in).alias("_emb"), why("bad").alias("_why")).select(
        "fid", "conn", F.col("line").alias("ref"),
        F.col("r.line").alias("resp_ref"),
        F.col("time").alias("req_time"), F.col("r.time").alias("resp_time"),
        F.col("vtime_ms").alias("req_vtime_ms"), F.col("r.vtime_ms").alias("resp_vtime_ms"),
        "api_key", api.alias("api"), "version", "correlation_id", "client_id",
        *[q[c].alias(c) for c in ("group_id", "member_id", "generation", "protocol_type")],
        p["error_code"].alias("error_code"),
        F.when(join, p["protocol_name"]).otherwise(q["protocol_name"]).alias("protocol_name"),
        *[q[c].alias(c) for c in ("protocols", "session_timeout_ms", "rebalance_timeout_ms")],
        *[p[c].alias(c) for c in ("resp_generation", "resp_member_id")],
        F.when(join, p["leader"]).otherwise(F.col("_emb.leader")).alias("leader"),
        q["member_epoch"].alias("member_epoch"), p["resp_member_epoch"].alias("resp_member_epoch"),
        F.col("_emb.meta_version").alias("meta_version"),
        F.when(hb, q["draft_owned"]).otherwise(F.col("_emb.owned")).alias("owned"),
        F.col("_emb.members").alias("members"), F.col("_emb.plan").alias("plan"),
        F.col("_emb.assignment_version").alias("assignment_version"),
        F.when(hb, p["draft_error"]).otherwise(F.col("_emb.assignment_error")).alias("assignment_error"),
        F.when(hb, p["draft_assigned"]).otherwise(F.col("_emb.assigned")).alias("assigned"),
        F.col("_emb.revoked").alias("revoked"), F.col("_emb.scheduled_delay_ms").alias("scheduled_delay_ms"),
        F.col("_emb.embedded_error").alias("embedded_error"), q["assignors"].alias("assignors"),
        F.coalesce("problem", "_why", F.when(F.col("orphan"), F.concat(
            F.lit("response with correlation id "), F.col("correlation_id").cast("string"),
            F.lit(" answers no open request")))).alias("reject"))
    out = exchanges.join(F.broadcast(names), "fid").drop("fid")
    return as_decoded(out.withColumn("source_kind", F.lit("transcript")))
