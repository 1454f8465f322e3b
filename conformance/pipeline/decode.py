"""Frames of one connection in, exchanges out: the part of ingest that runs inside the
executors. Pure Python over the project's strict codec (no Spark here), so transcripts and
pcaps share it and it is testable alone.

A connection's frames arrive in wire order. Requests describe themselves; a response is
decoded with the API and version of the request it answers (Kafka answers a connection's
requests in order: ``fakebroker.exchange.pairing``). A frame the codec
refuses becomes a reject naming its line or frame and the codec's reason; nothing is dropped.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fakebroker.exchange.pairing import OpenRequests
from fakebroker.protocol import DecodeError, Registry, default_registry
from fakebroker.protocol.framing import decode_request, decode_response, strip_size_prefix

# Classic APIs and the draft's heartbeat, by name: the registry gives their keys (the
# draft's keys are the project's choice and may be overridden, so never hard-code them).
JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT = "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"
CONNECT_HB = "ConnectGroupHeartbeat"


@functools.cache
def registry() -> Registry:
    """Loaded once per Python worker process (Spark reuses workers across tasks)."""
    return default_registry()


@dataclass
class Frame:
    """One request or response of a connection, as read from a transcript line or a pcap."""

    kind: str  # request | response
    ref: int  # line number (transcripts) or frame number (pcaps) where it starts
    raw: bytes | None = None  # whole frame, size prefix included
    body: dict[str, Any] | None = None  # JSON form, when there are no raw bytes
    api_key: int | None = None
    version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    time: float | None = None  # wall seconds
    vtime_ms: int | None = None


class Reject(Exception):
    def __init__(self, ref: int, reason: str) -> None:
        super().__init__(reason)
        self.ref, self.reason = ref, reason


def unit_names(connectors: Iterable[str] = (), tasks: Iterable[tuple[str, int]] = ()) -> list[str]:
    """Connect's names for units: ``conn`` for a connector instance, ``conn-3`` for a task."""
    out = set(connectors)
    out.update(c if t == -1 else f"{c}-{t}" for c, t in tasks)
    return sorted(out)


def _connect_entries(entries: list[Any] | None) -> list[str]:
    return unit_names(tasks=[(e.connector, t) for e in entries or () for t in e.tasks])


@functools.lru_cache(maxsize=1 << 14)
def connect_assignment(data: str) -> dict[str, Any]:
    """Connect's embedded assignment (SyncGroup, hex), decoded by the codec. Cached: a group's
    rounds repeat the same bytes (callers must not change the result)."""
    version, a = registry()["ConnectProtocolAssignment"].decode_versioned(bytes.fromhex(data))
    return {"assignment_version": version, "assignment_error": a.error, "leader": a.leader,
            "assigned": _connect_entries(a.assignment),
            "revoked": _connect_entries(getattr(a, "revoked", None)),
            "scheduled_delay_ms": getattr(a, "scheduled_delay", 0) or 0}


@functools.lru_cache(maxsize=1 << 14)
def connect_metadata(data: str) -> tuple[int, list[str] | None]:
    """A worker's JoinGroup metadata (hex): its version and the work it reports owning (v1+)."""
    version, m = registry()["ConnectProtocolMetadata"].decode_versioned(bytes.fromhex(data))
    alloc = getattr(m, "allocation", None)
    return version, (connect_assignment(alloc.hex())["assigned"] if alloc else None)


def _draft_units(cat: dict[str, Any] | None) -> list[str] | None:
    if cat is None:
        return None
    return unit_names(cat.get("Connectors") or (),
                      [(t["ConnectorId"], t["TaskId"]) for t in cat.get("Tasks") or ()])


def group_of(req: dict[str, Any]) -> str | None:
    """The group a request speaks for, in its API's own layout: ``GroupId``, or the one group
    OffsetFetch v8+ lists (its ``GroupId`` is then the codec's empty default, not a group).
    A request for several groups at once speaks for none of them alone: no group."""
    listed = [g.get("GroupId") for g in req.get("Groups") or () if isinstance(g, dict)]
    return req.get("GroupId") or (listed[0] if len(listed) == 1 else None)


def exchange_fields(api: str, req: dict[str, Any], resp: dict[str, Any] | None) -> dict[str, Any]:
    """The columns the audit and the metrics read, from a decoded request/response pair
    (JSON forms, spec names). Connect's embedded bytes are decoded; anything of another
    protocol type is left as it is."""
    resp = resp or {}
    out: dict[str, Any] = {
        "group_id": group_of(req), "member_id": req.get("MemberId"),
        "generation": req.get("GenerationId"), "error_code": resp.get("ErrorCode"),
        "protocol_type": req.get("ProtocolType"), "protocol_name": req.get("ProtocolName"),
    }
    if api == JOIN:
        out.update(session_timeout_ms=req.get("SessionTimeoutMs"),
                   rebalance_timeout_ms=req.get("RebalanceTimeoutMs"),
                   protocols=[p["Name"] for p in req.get("Protocols") or ()],
                   resp_generation=resp.get("GenerationId"), resp_member_id=resp.get("MemberId"),
                   leader=resp.get("Leader"), protocol_name=resp.get("ProtocolName"))
    elif api == LEAVE:
        ids = [m.get("MemberId") for m in req.get("Members") or ()]
        out["member_id"] = req.get("MemberId") or (ids[0] if ids else None)
    elif api == CONNECT_HB:
        out.update(member_epoch=req.get("MemberEpoch"), resp_member_epoch=resp.get("MemberEpoch"),
                   rebalance_timeout_ms=req.get("RebalanceTimeoutMs"),
                   protocols=[a["Name"] for a in req.get("ClientAssignors") or ()],
                   assignors=[{"name": a["Name"], "min_version": a["MinimumVersion"],
                               "max_version": a["MaximumVersion"]} for a in req.get("ClientAssignors") or ()],
                   owned=_draft_units(req.get("ConnectorsAndTasks")))
        assignment = resp.get("Assignment")
        if assignment is not None:
            out.update(assigned=_draft_units(assignment.get("ConnectorsAndTasks")),
                       assignment_error=assignment.get("Error"))
    out.update(embedded_fields(api, req, resp))
    return out


def embedded_fields(api: str, req: dict[str, Any], resp: dict[str, Any]) -> dict[str, Any]:
    """Connect's embedded bytes of a JoinGroup or SyncGroup (hex, as in the JSON forms),
    decoded: the only part of an exchange Spark's own expressions cannot read."""
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
    return out


@contextlib.contextmanager
def _embedded(out: dict[str, Any], where: str) -> Iterator[None]:
    """Connect's embedded bytes that are not Connect's (a test's placeholder metadata, another
    protocol under the "connect" type): the exchange stays, the reason is kept beside it."""
    try:
        yield
    except (DecodeError, ValueError) as e:  # ValueError: not hex
        out["embedded_error"] = f"{where}: {e}"


def _plan_units(data: str | None) -> dict[str, Any]:
    if not data:
        return {"assigned": [], "revoked": []}
    a = connect_assignment(data)
    return {"assigned": a["assigned"], "revoked": a["revoked"]}


def body_problem(reg: Registry, kind: str, api_key: int, body: Any) -> str | None:
    """Why the strict codec refuses a request or response body in JSON form (the spec's
    field names and types), or None when it reads it."""
    try:
        mt = reg.request(api_key) if kind == "request" else reg.response(api_key)
        mt.cls.from_json(body, "body")
    except (KeyError, ValueError) as e:
        return f"{kind} body: {e.args[0] if e.args else e}"
    return None


def _decode_request(reg: Registry, f: Frame) -> tuple[int, int, int, str | None, dict[str, Any]]:
    if f.raw is not None:
        try:
            r = decode_request(reg, strip_size_prefix(f.raw), base=4)
        except DecodeError as e:
            raise Reject(f.ref, f"request: {e}") from None
        return r.api_key, r.version, r.correlation_id, r.header.client_id, r.body.to_json()  # type: ignore[attr-defined]
    if f.body is None or f.api_key is None or f.version is None or f.correlation_id is None:
        raise Reject(f.ref, "request has neither raw bytes nor a body with api_key, version "
                            "and correlation_id")
    problem = body_problem(reg, "request", f.api_key, f.body)
    if problem:
        raise Reject(f.ref, problem)
    return f.api_key, f.version, f.correlation_id, f.client_id, f.body


def _decode_response(reg: Registry, f: Frame, api_key: int, version: int) -> dict[str, Any]:
    if f.raw is not None:
        try:
            return decode_response(reg, strip_size_prefix(f.raw), api_key, version, base=4).body.to_json()
        except DecodeError as e:
            raise Reject(f.ref, f"response to {reg.api_name(api_key)} v{version}: {e}") from None
    if f.body is None:
        raise Reject(f.ref, "response has neither raw bytes nor a body")
    problem = body_problem(reg, "response", api_key, f.body)
    if problem:
        raise Reject(f.ref, problem)
    return f.body


def _response_cid(f: Frame) -> int | None:
    if f.correlation_id is not None:
        return f.correlation_id
    if f.raw is not None and len(f.raw) >= 8:
        return int.from_bytes(f.raw[4:8], "big", signed=True)
    return None


def pair(frames: Iterable[Frame]) -> Iterator[dict[str, Any]]:
    """Exchange rows (and reject rows, with ``reject``) for one connection's frames."""
    reg = registry()
    pending: OpenRequests[tuple[Frame, int, int, int, str | None, dict[str, Any]]] = OpenRequests()
    for f in frames:
        try:
            if f.kind == "request":
                key, version, cid, client, body = _decode_request(reg, f)
                pending.sent(None, cid, (f, key, version, cid, client, body))
                continue
            cid = _response_cid(f)
            match = pending.answer(None, cid)
            if match is None:
                raise Reject(f.ref, f"response with correlation id {cid} answers no open request")
            req, key, version, cid, client, body = match
            yield _row(reg, req, f, key, version, cid, client, body,
                       _decode_response(reg, f, key, version))
        except Reject as r:
            yield {"ref": r.ref, "reject": r.reason}
        except Exception as e:  # a decoded body this module misreads: still one reject, never a crash
            yield {"ref": f.ref, "reject": f"cannot read exchange fields: {type(e).__name__}: {e}"}
    for req, key, version, cid, client, body in pending.unanswered():  # e.g. the capture ended
        try:
            yield _row(reg, req, None, key, version, cid, client, body, None)
        except Exception as e:
            yield {"ref": req.ref, "reject": f"cannot read exchange fields: {type(e).__name__}: {e}"}


def _row(reg: Registry, req: Frame, resp: Frame | None, key: int, version: int, cid: int,
         client: str | None, body: dict[str, Any], resp_body: dict[str, Any] | None) -> dict[str, Any]:
    api = reg.api_name(key)
    row = {"ref": req.ref, "resp_ref": resp.ref if resp else None,
           "req_time": req.time, "resp_time": resp.time if resp else None,
           "req_vtime_ms": req.vtime_ms, "resp_vtime_ms": resp.vtime_ms if resp else None,
           "api_key": key, "api": api, "version": version, "correlation_id": cid,
           "client_id": client}
    row.update(exchange_fields(api, body, resp_body))
    return row
