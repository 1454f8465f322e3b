"""Frames of one connection in, exchanges out: the part of ingest that runs inside the
executors. Pure Python over the project's strict codec (no Spark here), so transcripts and
pcaps share it and it is testable alone.

A connection's frames arrive in wire order. Requests describe themselves; a response is
decoded with the API and version of the request it answers (Kafka answers a connection's
requests in order: ``fakebroker.exchange.pairing``). A frame the codec
refuses becomes a reject naming its line or frame and the codec's reason; nothing is dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fakebroker.exchange.fields import exchange_fields
from fakebroker.exchange.pairing import OpenRequests
from fakebroker.protocol import DecodeError, Registry, default_registry
from fakebroker.protocol.framing import decode_request, decode_response, strip_size_prefix


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
