"""The fields of an exchange that analysis reads, in one table: per column, its type and,
per API, where it is taken from (the request or the response body, in JSON form with the
spec's names, or Connect's embedded bytes decoded).

Everything that reads exchange fields is made from ``FIELDS``: ``exchange_fields`` here (the
harness, the pipeline's pcap ingest, the invariant tests), and the pipeline's Spark schema
and column expressions (``conformance.pipeline.tables`` and ``ingest.fields``). A new column
is one row; a new way of reading one (``how``) is a reader here and its Spark form there.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union

from ..protocol import DecodeError, default_registry

# Classic APIs and the draft's heartbeat, by name: the registry gives their keys (the
# draft's keys are the project's choice and may be overridden, so never hard-code them).
JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT = "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"
CONNECT_HB = "ConnectGroupHeartbeat"

# ---------------------------------------------------------------------------- column types

# "string", "int", ("array", T) or ("struct", ((name, T), ...)): the pipeline makes Spark
# types of them; nothing here depends on Spark.
Type = Union[str, tuple[str, Any]]
STRING, INT = "string", "int"


def array(item: Type) -> Type:
    return ("array", item)


def struct(*cols: tuple[str, Type]) -> Type:
    return ("struct", tuple(cols))


UNITS = array(STRING)  # Connect's unit names: "conn" for a connector, "conn-3" for a task


@dataclass(frozen=True)
class Take:
    """Where a column comes from: ``side`` request, response or embedded (Connect's
    embedded bytes, ``path`` then names a key of ``embedded_fields``); ``path`` the body's
    field, dotted for a nested one; ``how`` the reader of ``READERS`` applied to it."""

    side: str
    path: str
    how: str = "value"


def req(path: str, how: str = "value") -> Take:
    return Take("request", path, how)


def resp(path: str, how: str = "value") -> Take:
    return Take("response", path, how)


def emb(name: str) -> Take:
    return Take("embedded", name)


@dataclass(frozen=True)
class Field:
    """One column: taken by ``default`` for every API that has no entry in ``by_api``,
    null for the others."""

    name: str
    type: Type
    default: Take | None = None
    by_api: tuple[tuple[str, Take], ...] = ()

    def take(self, api: str) -> Take | None:
        return next((t for a, t in self.by_api if a == api), self.default)

    def takes(self) -> list[Take]:
        return ([self.default] if self.default else []) + [t for _, t in self.by_api]


def only(*pairs: tuple[str, Take]) -> tuple[tuple[str, Take], ...]:
    return tuple(pairs)


# The exchanges table's columns, in its order. Sources: KIP-848's Connect draft for
# ConnectGroupHeartbeat; Kafka's message specs (schemas/messages) for the classic APIs;
# Connect's embedded protocol (schemas/connect) for the embedded bytes.
FIELDS: tuple[Field, ...] = (
    Field("group_id", STRING, req("GroupId", "group")),
    Field("member_id", STRING, req("MemberId"), only((LEAVE, req("MemberId", "member_or_first")))),
    Field("generation", INT, req("GenerationId")),
    Field("error_code", INT, resp("ErrorCode")),
    Field("protocol_type", STRING, req("ProtocolType")),
    Field("protocol_name", STRING, req("ProtocolName"), only((JOIN, resp("ProtocolName")))),
    Field("protocols", array(STRING), None, only((JOIN, req("Protocols", "names")),
                                                 (CONNECT_HB, req("ClientAssignors", "names")))),
    Field("session_timeout_ms", INT, None, only((JOIN, req("SessionTimeoutMs")))),
    Field("rebalance_timeout_ms", INT, None, only((JOIN, req("RebalanceTimeoutMs")),
                                                  (CONNECT_HB, req("RebalanceTimeoutMs")))),
    Field("resp_generation", INT, None, only((JOIN, resp("GenerationId")))),
    Field("resp_member_id", STRING, None, only((JOIN, resp("MemberId")))),
    Field("leader", STRING, None, only((JOIN, resp("Leader")), (SYNC, emb("leader")))),
    Field("member_epoch", INT, None, only((CONNECT_HB, req("MemberEpoch")))),
    Field("resp_member_epoch", INT, None, only((CONNECT_HB, resp("MemberEpoch")))),
    Field("meta_version", INT, None, only((JOIN, emb("meta_version")))),
    Field("owned", UNITS, None, only((JOIN, emb("owned")),
                                     (CONNECT_HB, req("ConnectorsAndTasks", "units")))),
    Field("members", array(struct(("member", STRING), ("owned", UNITS))), None,
          only((JOIN, emb("members")))),
    Field("plan", array(struct(("member", STRING), ("assigned", UNITS), ("revoked", UNITS))), None,
          only((SYNC, emb("plan")))),
    Field("assignment_version", INT, None, only((SYNC, emb("assignment_version")))),
    Field("assignment_error", INT, None, only((SYNC, emb("assignment_error")),
                                              (CONNECT_HB, resp("Assignment.Error")))),
    Field("assigned", UNITS, None, only((SYNC, emb("assigned")),
                                        (CONNECT_HB, resp("Assignment.ConnectorsAndTasks", "units")))),
    Field("revoked", UNITS, None, only((SYNC, emb("revoked")))),
    Field("scheduled_delay_ms", INT, None, only((SYNC, emb("scheduled_delay_ms")))),
    Field("embedded_error", STRING, None, only((JOIN, emb("embedded_error")), (SYNC, emb("embedded_error")))),
    Field("assignors", array(struct(("name", STRING), ("min_version", INT), ("max_version", INT))), None,
          only((CONNECT_HB, req("ClientAssignors", "assignors")))),
)

def embedded_apis(fields: Sequence[Field] = FIELDS) -> tuple[str, ...]:
    """The APIs some column takes Connect's embedded bytes of (``embedded_fields`` reads them)."""
    return tuple(sorted({a for f in fields for a, t in f.by_api if t.side == "embedded"}))


EMBEDDED_APIS = embedded_apis()


# ---------------------------------------------------------------------------- readers

def unit_names(connectors: Iterable[str] = (), tasks: Iterable[tuple[str, int]] = ()) -> list[str]:
    """Connect's names for units: ``conn`` for a connector instance, ``conn-3`` for a task."""
    out = set(connectors)
    out.update(c if t == -1 else f"{c}-{t}" for c, t in tasks)
    return sorted(out)


def group_of(body: dict[str, Any]) -> str | None:
    """The group a request speaks for, in its API's own layout: ``GroupId``, or the one group
    OffsetFetch v8+ lists (its ``GroupId`` is then the codec's empty default, not a group).
    A request for several groups at once speaks for none of them alone: no group."""
    listed = [g.get("GroupId") for g in body.get("Groups") or () if isinstance(g, dict)]
    return body.get("GroupId") or (listed[0] if len(listed) == 1 else None)


def _draft_units(cat: dict[str, Any] | None) -> list[str] | None:
    """The draft's ConnectorsAndTasks as Connect's unit names."""
    if cat is None:
        return None
    return unit_names(cat.get("Connectors") or (),
                      [(t["ConnectorId"], t["TaskId"]) for t in cat.get("Tasks") or ()])


def get_path(body: dict[str, Any], path: str) -> Any:
    node: Any = body
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _member_or_first(body: dict[str, Any], path: str) -> Any:
    """LeaveGroup v3+ names its members in a list; earlier versions name one."""
    ids = [m.get("MemberId") for m in body.get("Members") or ()]
    return get_path(body, path) or (ids[0] if ids else None)


READERS: dict[str, Callable[[dict[str, Any], str], Any]] = {
    "value": get_path,
    "group": lambda body, _path: group_of(body),
    "member_or_first": _member_or_first,
    "names": lambda body, path: [x["Name"] for x in get_path(body, path) or ()],
    "units": lambda body, path: _draft_units(get_path(body, path)),
    "assignors": lambda body, path: [{"name": a["Name"], "min_version": a["MinimumVersion"],
                                      "max_version": a["MaximumVersion"]} for a in get_path(body, path) or ()],
}


def exchange_fields(api: str, req: dict[str, Any], resp: dict[str, Any] | None,
                    fields: Sequence[Field] = FIELDS) -> dict[str, Any]:
    """The table's columns of one decoded request/response pair (JSON forms, spec names):
    every column the API has, null where the exchange does not carry it."""
    bodies = {"request": req, "response": resp or {}}
    embedded = embedded_fields(api, req, bodies["response"]) if api in embedded_apis(fields) else {}
    out: dict[str, Any] = {}
    for f in fields:
        t = f.take(api)
        if t is not None:
            out[f.name] = embedded.get(t.path) if t.side == "embedded" else READERS[t.how](bodies[t.side], t.path)
    return out


# ---------------------------------------------------------------------------- Connect's embedded bytes

def _connect_entries(entries: list[Any] | None) -> list[str]:
    return unit_names(tasks=[(e.connector, t) for e in entries or () for t in e.tasks])


@functools.lru_cache(maxsize=1 << 14)
def connect_assignment(data: str) -> dict[str, Any]:
    """Connect's embedded assignment (SyncGroup, hex), decoded by the codec. Cached: a group's
    rounds repeat the same bytes (callers must not change the result)."""
    version, a = default_registry()["ConnectProtocolAssignment"].decode_versioned(bytes.fromhex(data))
    return {"assignment_version": version, "assignment_error": a.error, "leader": a.leader,
            "assigned": _connect_entries(a.assignment),
            "revoked": _connect_entries(getattr(a, "revoked", None)),
            "scheduled_delay_ms": getattr(a, "scheduled_delay", 0) or 0}


@functools.lru_cache(maxsize=1 << 14)
def connect_metadata(data: str) -> tuple[int, list[str] | None]:
    """A worker's JoinGroup metadata (hex): its version and the work it reports owning (v1+)."""
    version, m = default_registry()["ConnectProtocolMetadata"].decode_versioned(bytes.fromhex(data))
    alloc = getattr(m, "allocation", None)
    return version, (connect_assignment(alloc.hex())["assigned"] if alloc else None)


def partition_names(topics: Iterable[Any] | None) -> list[str]:
    """A consumer's partitions as units, named as Kafka's ``TopicPartition`` prints them: ``orders-3``."""
    return sorted({f"{t.topic}-{p}" for t in topics or () for p in t.partitions})


@functools.lru_cache(maxsize=1 << 14)
def consumer_assignment(data: str) -> list[str]:
    """A consumer's assignment (SyncGroup, hex; ConsumerProtocolAssignment v0-3): every
    partition it is to own, under eager and cooperative assignors alike (KIP-429 revokes by
    leaving a partition out). No bytes: nothing (the coordinator's answer to a member the
    leader's plan leaves out)."""
    if not data:
        return []
    _, a = default_registry()["ConsumerProtocolAssignment"].decode_versioned(bytes.fromhex(data))
    return partition_names(a.assigned_partitions)


@functools.lru_cache(maxsize=1 << 14)
def consumer_owned(data: str) -> list[str] | None:
    """The partitions a consumer reports owning as it joins (JoinGroup metadata, hex;
    ConsumerProtocolSubscription v1+, KIP-429); None from v0, which does not say."""
    version, s = default_registry()["ConsumerProtocolSubscription"].decode_versioned(bytes.fromhex(data))
    return partition_names(s.owned_partitions) if version >= 1 else None


def consumer_fields(api: str, req: dict[str, Any], resp: dict[str, Any]) -> dict[str, Any]:
    """A consumer group's embedded bytes as units (topic partitions) in the columns Connect's
    fill: ``owned`` and ``members`` (JoinGroup), ``plan`` and ``assigned`` (SyncGroup). The
    Connect protocol's own columns (``meta_version``, ``assignment_version``, ``revoked``)
    stay null: the invariants judge Connect's rounds only."""
    out: dict[str, Any] = {}
    if api == JOIN:
        if req.get("Protocols"):
            with _embedded(out, "Protocols[0].Metadata"):
                out["owned"] = consumer_owned(req["Protocols"][0]["Metadata"] or "")
        if resp.get("Members"):
            with _embedded(out, "Members[*].Metadata"):
                out["members"] = [{"member": m["MemberId"], "owned": consumer_owned(m["Metadata"] or "")}
                                  for m in resp["Members"]]
    elif api == SYNC:
        if req.get("Assignments"):
            with _embedded(out, "Assignments[*].Assignment"):
                out["plan"] = [{"member": p["MemberId"], "assigned": consumer_assignment(p["Assignment"] or ""),
                                "revoked": []} for p in req["Assignments"]]
        if resp.get("Assignment") is not None and resp.get("ErrorCode") == 0:
            with _embedded(out, "response Assignment"):
                out["assigned"] = consumer_assignment(resp["Assignment"])
    return out


def embedded_fields(api: str, req: dict[str, Any], resp: dict[str, Any]) -> dict[str, Any]:
    """The embedded bytes of a JoinGroup or SyncGroup (hex, as in the JSON forms),
    decoded: the only part of an exchange Spark's own expressions cannot read. A consumer
    group's are its partitions (``consumer_fields``); a SyncGroup before v5 names no protocol
    type: Connect's bytes, else a consumer's."""
    if req.get("ProtocolType") == "consumer":
        return consumer_fields(api, req, resp)
    out: dict[str, Any] = {}
    if api == JOIN and req.get("ProtocolType") == "connect":
        if req.get("Protocols"):
            with _embedded(out, "Protocols[0].Metadata"):
                out["meta_version"], out["owned"] = connect_metadata(req["Protocols"][0]["Metadata"] or "")
        if resp.get("Members"):
            with _embedded(out, "Members[*].Metadata"):
                out["members"] = [{"member": m["MemberId"], "owned": connect_metadata(m["Metadata"] or "")[1]}
                                  for m in resp["Members"]]
    elif api == SYNC and req.get("ProtocolType") in ("connect", None):
        if req.get("Assignments"):
            with _embedded(out, "Assignments[*].Assignment"):
                out["plan"] = [{"member": p["MemberId"], **_plan_units(p["Assignment"])}
                               for p in req["Assignments"]]
        if resp.get("Assignment") and resp.get("ErrorCode") == 0:
            with _embedded(out, "response Assignment"):
                out.update(connect_assignment(resp["Assignment"]))
        if "embedded_error" in out and req.get("ProtocolType") is None:
            consumer = consumer_fields(api, req, resp)  # each format's decoder consumes every byte
            if "embedded_error" not in consumer:
                return consumer
    return out


@contextlib.contextmanager
def _embedded(out: dict[str, Any], where: str) -> Iterator[None]:
    """Embedded bytes their protocol type's decoder refuses (a test's placeholder metadata,
    another protocol under the "connect" type, a truncated assignment): the exchange stays,
    the reason is kept beside it (``embedded_error``, counted by the audit)."""
    try:
        yield
    except (DecodeError, ValueError) as e:  # ValueError: not hex
        out["embedded_error"] = f"{where}: {e}"


def _plan_units(data: str | None) -> dict[str, Any]:
    if not data:
        return {"assigned": [], "revoked": []}
    a = connect_assignment(data)
    return {"assigned": a["assigned"], "revoked": a["revoked"]}
