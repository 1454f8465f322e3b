"""Transcripts (.jsonl) into exchanges and rejects, in Spark's own engine end to end: the
JSON reader parses each line against the schema derived from
``schemas/transcript.schema.json`` (bodies typed by ``tables.BODY``), a window pairs each
connection's requests and responses, and column expressions pick the fields. Python runs
only for Connect's embedded bytes (JoinGroup metadata, SyncGroup assignments), which no
Spark expression can decode: an Arrow UDF over the codec, called with null (and returning
at once) for every other exchange.

Shuffles: one, by (source, connection, correlation id), for the pairing; line numbers come
from a small count per file split, not from a sort of the corpus."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ..decode import CONNECT_HB, JOIN, LEAVE, SYNC, embedded_fields, registry
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


def _source() -> Column:
    return F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", ""))


def lines(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """(source, source_hash, line, value, j): every line of the files, parsed. ``files``
    maps path to content hash. A line's number is its index within its file split plus the
    lines of the file's earlier splits (counted in a first, cheap pass: text only)."""
    names = spark.createDataFrame(list(files.items()), "source string, source_hash string")
    where = [_source().alias("source"), F.col("_metadata.file_block_start").alias("_block"),
             F.monotonically_increasing_id().alias("_pos")]
    splits = spark.read.text(list(files)).select(*where).groupBy("source", "_block").agg(
        F.count("*").alias("n"), F.min("_pos").alias("first"))
    base, before, last = [], 0, None
    for r in sorted(splits.collect(), key=lambda r: (r.source, r._block)):
        before = 0 if r.source != last else before
        base.append((r.source, r._block, before - r.first + 1))
        before, last = before + r.n, r.source
    offsets = spark.createDataFrame(base, "source string, _block long, _base long")
    schema = transcript_line_schema()
    schema = schema.__class__([f if f.name != "body" else f.__class__("body", BODY, True) for f in schema])
    # Parsed in the projection that numbers the lines: that projection is not deterministic,
    # so no filter is pushed below it and each line is parsed once, not once per field read.
    raw = spark.read.text(list(files)).select(*where, "value", F.from_json("value", schema).alias("j"))
    return (raw.join(F.broadcast(offsets), ["source", "_block"])
            .select("source", (F.col("_pos") + F.col("_base")).alias("line"), "value", "j")
            .join(F.broadcast(names), "source"))


def _draft_units(c: Column) -> Column:
    """The draft's ConnectorsAndTasks as Connect's unit names, sorted (``decode.unit_names``)."""
    tasks = F.transform(F.coalesce(c["Tasks"], F.array()), lambda t: F.when(
        t["TaskId"] == -1, t["ConnectorId"]).otherwise(F.concat(t["ConnectorId"], F.lit("-"), t["TaskId"])))
    names = F.array_sort(F.array_distinct(F.concat(F.coalesce(c["Connectors"], F.array().cast("array<string>")),
                                                   tasks)))
    return F.when(c.isNull(), F.lit(None)).otherwise(names)


def _embedded(args: Any) -> dict[str, Any] | None:
    """Connect's embedded bytes of one JoinGroup or SyncGroup (None for anything else)."""
    if args is None:
        return None
    a = args.asDict(recursive=True)
    req = {"ProtocolType": a["ptype"], "Protocols": a["protocols"], "Assignments": a["plans"]}
    return embedded_fields(a["api"], req, {"Members": a["members"], "Assignment": a["assignment"],
                                            "ErrorCode": a["error"]}) or None


def _api_names() -> Column:
    reg = registry()
    return F.create_map(*[x for k in sorted(reg.requests) for x in (F.lit(k), F.lit(reg.api_name(k)))])


def _embedded_input(q: Column, p: Column, api: Column) -> Column:
    """What ``_embedded`` reads: set for JoinGroup and SyncGroup only."""
    return F.when((api == JOIN) | (api == SYNC), F.struct(
        api.alias("api"), q["ProtocolType"].alias("ptype"), q["Protocols"].alias("protocols"),
        q["Assignments"].alias("plans"), p["Members"].alias("members"),
        p["Assignment"].alias("assignment"), p["ErrorCode"].alias("error")))


def _exchange_columns(q: Column, p: Column, api: Column, emb: Column) -> list[Column]:
    """The exchange table's decoded columns from the request body ``q``, the response body
    ``p``, the API name and ``emb``, Connect's embedded bytes decoded (the rules of
    ``decode.exchange_fields``)."""
    join, sync, leave, hb = (api == JOIN), (api == SYNC), (api == LEAVE), (api == CONNECT_HB)
    draft_assignment = F.from_json(p["Assignment"], "Error int, ConnectorsAndTasks struct<Connectors: "
                                   "array<string>, Tasks: array<struct<ConnectorId: string, TaskId: int>>>")
    leave_member = F.coalesce(F.nullif(q["MemberId"], F.lit("")), q["Members"][0]["MemberId"])
    return [
        q["GroupId"].alias("group_id"),
        F.when(leave, leave_member).otherwise(q["MemberId"]).alias("member_id"),
        q["GenerationId"].alias("generation"), p["ErrorCode"].alias("error_code"),
        q["ProtocolType"].alias("protocol_type"),
        F.when(join, p["ProtocolName"]).otherwise(q["ProtocolName"]).alias("protocol_name"),
        F.when(join, F.transform(F.coalesce(q["Protocols"], F.array()), lambda x: x["Name"]))
        .when(hb, F.transform(F.coalesce(q["ClientAssignors"], F.array()), lambda x: x["Name"]))
        .alias("protocols"),
        F.when(join, q["SessionTimeoutMs"]).alias("session_timeout_ms"),
        F.when(join | hb, q["RebalanceTimeoutMs"]).alias("rebalance_timeout_ms"),
        F.when(join, p["GenerationId"]).alias("resp_generation"),
        F.when(join, p["MemberId"]).alias("resp_member_id"),
        F.when(join, p["Leader"]).otherwise(emb["leader"]).alias("leader"),
        F.when(hb, q["MemberEpoch"]).alias("member_epoch"),
        F.when(hb, p["MemberEpoch"]).alias("resp_member_epoch"),
        emb["meta_version"].alias("meta_version"),
        F.when(hb, _draft_units(q["ConnectorsAndTasks"])).otherwise(emb["owned"]).alias("owned"),
        emb["members"].alias("members"), emb["plan"].alias("plan"),
        emb["assignment_version"].alias("assignment_version"),
        F.when(hb, draft_assignment["Error"]).otherwise(emb["assignment_error"]).alias("assignment_error"),
        F.when(hb, _draft_units(draft_assignment["ConnectorsAndTasks"])).otherwise(emb["assigned"])
        .alias("assigned"),
        emb["revoked"].alias("revoked"), emb["scheduled_delay_ms"].alias("scheduled_delay_ms"),
        emb["embedded_error"].alias("embedded_error"),
        F.when(hb, F.transform(F.coalesce(q["ClientAssignors"], F.array()), lambda a: F.struct(
            a["Name"].alias("name"), a["MinimumVersion"].alias("min_version"),
            a["MaximumVersion"].alias("max_version")))).alias("assignors"),
    ]


def _pairs(frames: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(exchanges, unanswered responses) of request/response lines. Kafka answers a
    connection's requests in order, so the n-th response with a correlation id answers the
    n-th request with it: one shuffle by (source, conn, correlation id), then a sort."""
    key = ["source", "conn", "correlation_id"]
    is_req = F.col("kind") == "request"
    by_line = Window.partitionBy(*key).orderBy("line")
    n = F.when(is_req, F.count_if(is_req).over(by_line)).otherwise(F.count_if(~is_req).over(by_line))
    by_n = Window.partitionBy(*key).orderBy("n", "kind")  # "request" sorts before "response"
    side = F.struct("kind", "n", "line", "time", "vtime_ms", "body")
    ev = (frames.withColumn("n", n)
          .withColumn("next", F.lead(side).over(by_n)).withColumn("prev", F.lag(side).over(by_n)))
    answers = lambda a, b: (a["kind"] == "request") & (b["kind"] == "response") & (a["n"] == b["n"]) \
        & (a["line"] < b["line"])  # noqa: E731
    me = F.struct("kind", "n", "line")
    resp = F.when(answers(me, F.col("next")), F.col("next"))
    reqs = ev.where(is_req).select("*", resp.alias("r"))
    orphans = ev.where(~is_req & ~F.coalesce(answers(F.col("prev"), me), F.lit(False)))
    return reqs, orphans


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
    parsed = lines(spark, files)
    api = _api_names()[F.col("j.api_key")]
    kind = F.col("j.kind")
    ok = (kind == "header") | ((kind == "close") & F.col("j.conn").isNotNull()) | (
        kind.isin("request", "response") & F.col("j.conn").isNotNull()
                               & F.col("j.api_key").isNotNull() & F.col("j.version").isNotNull()
                               & F.col("j.correlation_id").isNotNull() & F.col("j.body").isNotNull()
                               & api.isNotNull())
    problem = F.udf(lambda text: line_problem(text), "string")  # noqa: PLW0108; rejected lines only
    # Parsed once: good lines go on to pairing, bad ones become rejects in the same pass.
    good = F.coalesce(ok, F.lit(False))
    frames = parsed.where(good & kind.isin("request", "response")).select(
        "source", "source_hash", "line", "j.kind", F.col("j.conn").alias("conn"), "j.correlation_id",
        "j.api_key", "j.version", "j.client_id", "j.time", "j.vtime_ms", "j.body")
    bad = parsed.where(~good).select("source", "source_hash", F.col("line").alias("ref"),
                                     problem("value").alias("reject"))
    reqs, orphans = _pairs(frames)
    q, p = F.col("body"), F.col("r.body")
    api = _api_names()[F.col("api_key")]
    # One UDF call per row, in a column of its own (its fields are read many times below).
    embedded = F.udf(lambda a: _embedded(a), EMBEDDED, useArrow=True)  # noqa: PLW0108 (hints would make it a pandas UDF)
    exchanges = reqs.withColumn("_emb", embedded(_embedded_input(q, p, api))).select(
        "source", "source_hash", "conn", F.col("line").alias("ref"), F.col("r.line").alias("resp_ref"),
        F.col("time").alias("req_time"), F.col("r.time").alias("resp_time"),
        F.col("vtime_ms").alias("req_vtime_ms"), F.col("r.vtime_ms").alias("resp_vtime_ms"),
        "api_key", api.alias("api"), "version", "correlation_id", "client_id",
        *_exchange_columns(q, p, api, F.col("_emb")))
    orphan_rejects = orphans.select(
        "source", "source_hash", F.col("line").alias("ref"),
        F.concat(F.lit("response with correlation id "), F.col("correlation_id").cast("string"),
                 F.lit(" answers no open request")).alias("reject"))
    return as_decoded(exchanges.unionByName(bad, allowMissingColumns=True)
                      .unionByName(orphan_rejects, allowMissingColumns=True)
                      .withColumn("source_kind", F.lit("transcript")))
