"""Transcripts: every frame a broker exchanged, one JSON line each.

The one format that recording, pcap export, golden fixtures, client-side replay,
broker-side scripts, the harness and the pipeline all read (one transcript format
everywhere):

    {"kind": "header", "format": "fakebroker-transcript", "version": 1, ...}   (optional)
    {"kind": "request", "seq": 1, "conn": 1, "correlation_id": 1, "api_key": 11,
     "api": "JoinGroup", "version": 9, "client_id": "w1", "body": {...}, "raw": "0000...",
     "vtime_ms": 0, "time": 1700000000.0}
    {"kind": "response", ...same keys without client_id...}
    {"kind": "close", "conn": 1, "by": "client", ...}

Parsing is pure (``parse_lines``): text in, a ``Transcript`` or a ``TranscriptError``
naming the line and the reason out. ``schemas/transcript.schema.json`` is the contract;
this module adds what a schema cannot say (a response answers an earlier request of the
same connection, raw bytes agree with the decoded body, bodies use the spec's names).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from jsonschema import Draft202012Validator

from ..parse_guard import InputLimit, loads_json
from ..protocol import DecodeError, Registry, Struct, default_schema_dir
from ..protocol.framing import (decode_request, decode_response, encode_request,
                                encode_response, peek_request_key, strip_size_prefix)
from ..intercept.matchers import matcher_problems, spec_path_problem
from .pairing import OpenRequests, response_of

FORMAT = "fakebroker-transcript"
VERSION = 1
KINDS = ("header", "request", "response", "close")


class TranscriptError(ValueError):
    """A transcript line is invalid: ``source:line: reason``."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        self.source, self.line, self.reason = source, line, reason
        super().__init__(f"{source}:{line}: {reason}")


@dataclass
class Event:
    """One line of a transcript other than the header. ``body`` is the JSON form."""

    kind: str  # request | response | close
    conn: int | str
    seq: int | None = None
    correlation_id: int | None = None
    api_key: int | None = None
    version: int | None = None
    client_id: str | None = None
    body: dict[str, Any] | None = None
    raw: bytes | None = None  # the whole frame, size prefix included
    error: str | None = None  # request only: why it did not decode
    by: str | None = None  # close only: client | broker
    reason: str | None = None  # close only
    match: dict[str, dict[str, Any]] = field(default_factory=dict)
    hooks: list[str] = field(default_factory=list)
    vtime_ms: int | None = None
    time: float | None = None
    line: int = 0  # where it was read from (0: built in memory)
    api: str | None = None

    @property
    def is_frame(self) -> bool:
        return self.kind in ("request", "response")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.seq is not None:
            out["seq"] = self.seq
        out["conn"] = self.conn
        if self.kind == "close":
            out["by"] = self.by
            if self.reason:
                out["reason"] = self.reason
        else:
            out["correlation_id"] = self.correlation_id
            out["api_key"] = self.api_key
            if self.api is not None:
                out["api"] = self.api
            out["version"] = self.version
            if self.kind == "request":
                out["client_id"] = self.client_id
            out["body"] = self.body
            if self.raw is not None:
                out["raw"] = self.raw.hex()
            if self.error is not None:
                out["error"] = self.error
            if self.match:
                out["match"] = self.match
        if self.hooks:
            out["hooks"] = list(self.hooks)
        if self.vtime_ms is not None:
            out["vtime_ms"] = self.vtime_ms
        if self.time is not None:
            out["time"] = self.time
        return out

    def struct(self, registry: Registry) -> Struct:
        """The body as a message object (the spec's names are checked)."""
        assert self.body is not None and self.api_key is not None
        mt = registry.request(self.api_key) if self.kind == "request" else registry.response(self.api_key)
        return mt.cls.from_json(self.body)

    def frame(self, registry: Registry, *, correlation_id: int | None = None,
              body: dict[str, Any] | None = None) -> bytes:
        """The frame to put on the wire (size prefix included): the recorded bytes, or the
        body encoded when it was edited, substituted or written by hand."""
        cid = self.correlation_id if correlation_id is None else correlation_id
        if body is None and self.raw is not None and cid == self.correlation_id:
            return self.raw
        if self.body is None and body is None:
            raise ValueError(f"event on line {self.line} has neither a body nor raw bytes")
        assert self.api_key is not None and self.version is not None and cid is not None
        probe = Event(**{**self.__dict__, "body": body if body is not None else self.body})
        obj = probe.struct(registry)
        if self.kind == "request":
            return encode_request(registry, obj, self.version, cid, self.client_id, size_prefix=True)
        return encode_response(registry, obj, self.version, cid, size_prefix=True)


@dataclass
class Transcript:
    header: dict[str, Any] | None
    events: list[Event]
    source: str = "<transcript>"
    # What was accepted but not kept (a last line torn by a crash): for the user to read.
    warnings: list[str] = field(default_factory=list)

    def frames(self) -> Iterator[Event]:
        return (e for e in self.events if e.is_frame)

    def requests(self) -> list[Event]:
        return [e for e in self.events if e.kind == "request"]

    def response_to(self, request: Event) -> Event | None:
        """The response answering ``request`` (``pairing``'s rule), None if none does."""
        return response_of(self.events).get(id(request))

    def lines(self) -> Iterator[str]:
        if self.header is not None:
            yield dumps(self.header)
        for e in self.events:
            yield dumps(e.to_json())

    def dump(self, out: IO[str]) -> None:
        for line in self.lines():
            out.write(line + "\n")

    def save(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            self.dump(f)


def dumps(obj: dict[str, Any]) -> str:
    """One line, keys in insertion order, no spaces wasted, ASCII-safe."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True)


def new_header(origin: str, **extra: Any) -> dict[str, Any]:
    head: dict[str, Any] = {"kind": "header", "format": FORMAT, "version": VERSION, "origin": origin}
    head.update({k: v for k, v in extra.items() if v is not None})
    return head


# ---------------------------------------------------------------------------- parsing

@functools.cache
def _schema() -> dict[str, Any]:
    return json.loads((default_schema_dir() / "transcript.schema.json").read_text(encoding="utf-8"))


@functools.cache
def _validator(kind: str) -> Draft202012Validator:
    schema = _schema()
    # One validator per kind: a oneOf over kinds would only say "not valid under any".
    return Draft202012Validator({"$schema": schema["$schema"], "$defs": schema["$defs"],
                                 "$ref": f"#/$defs/{kind}"})


def schema_errors(obj: Any) -> list[str]:
    """Why a parsed line breaks the schema: ``path: message (rule)``, most precise first."""
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {type(obj).__name__}"]
    kind = obj.get("kind")
    if kind not in KINDS:
        return [f"kind: {kind!r} is not one of {', '.join(KINDS)}"]
    errs = sorted(_validator(kind).iter_errors(obj), key=lambda e: (-len(e.absolute_path), e.message))
    return [f"{_json_path(e.absolute_path) or '<line>'}: {e.message} (rule: {e.validator})" for e in errs]


def _json_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def parse_lines(lines: Iterable[str], registry: Registry, source: str = "<transcript>", *,
                check_raw: bool = True) -> Transcript:
    """Parse and check a transcript; the first fault raises TranscriptError. A last line
    cut short without its newline (the recorder was killed mid-write) is left out with a
    warning, so a crashed run's recording stays usable up to its last complete line."""
    t = Transcript(None, [], source)
    t.events = list(iter_events(lines, registry, t, check_raw=check_raw))
    return t


EMPTY_LINE = "empty line (every line is one JSON object)"


def json_fault(e: json.JSONDecodeError, body: str, torn: bool = False) -> str:
    """Why a line (``body``, without its newline) is no JSON: cut short, or invalid where."""
    if e.pos >= len(body) or e.msg.startswith("Unterminated string") or torn:
        return f"truncated line: the JSON object ends early (after {len(body)} characters)"
    return f"invalid JSON: {e.msg} at column {e.colno}"


def line_problem(text: str) -> str | None:
    """Why one line, judged alone, is no transcript line (JSON, the schema), or None: what
    a reader that sees lines one by one and out of order (the pipeline) can tell."""
    if not text.strip():
        return EMPTY_LINE
    body = text.rstrip("\r\n")
    try:
        obj = loads_json(body)
    except json.JSONDecodeError as e:
        return json_fault(e, body)
    except InputLimit as e:
        return str(e)
    errs = schema_errors(obj)
    return errs[0] if errs else None


def iter_events(lines: Iterable[str], registry: Registry, into: Transcript, *,
                check_raw: bool = True) -> Iterator[Event]:
    """The events of ``lines`` one by one as they are read and checked (for inputs too big
    to hold); the header and warnings go to ``into``. Raises TranscriptError as read."""
    source = into.source
    open_requests: OpenRequests[Event] = OpenRequests()
    last_seq = 0
    n = kept = 0
    for n, text in enumerate(lines, 1):
        if not text.strip():
            raise TranscriptError(source, n, EMPTY_LINE)
        body = text.rstrip("\r\n")
        try:
            obj = loads_json(body)
        except json.JSONDecodeError as e:
            torn = not text.endswith("\n")  # only the last line can lack its newline
            if torn and n > 1:
                into.warnings.append(
                    f"{source}:{n}: the last line is torn (cut after {len(body)} characters, "
                    f"no newline): left out; kept {kept} event(s) from the {n - 1} complete "
                    "line(s)")
                break
            raise TranscriptError(source, n, json_fault(e, body, torn)) from None
        except InputLimit as e:
            raise TranscriptError(source, n, str(e)) from None
        errs = schema_errors(obj)
        if errs:
            raise TranscriptError(source, n, errs[0])
        if obj["kind"] == "header":
            if n != 1:
                raise TranscriptError(source, n, "a header may only be the first line")
            into.header = obj
            continue
        ev = _event(obj, n)
        if ev.seq is not None:
            if ev.seq <= last_seq:
                raise TranscriptError(source, n, f"seq {ev.seq} does not follow {last_seq}")
            last_seq = ev.seq
        try:
            _check_event(ev, registry, open_requests, check_raw)
        except ValueError as e:
            raise TranscriptError(source, n, str(e)) from None
        kept += 1
        yield ev
    if n == 0:
        raise TranscriptError(source, 1, "empty transcript")


def open_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The lines of a transcript file, read lazily; unreadable or non-UTF-8 input raises
    TranscriptError naming the line."""
    p = Path(path)
    try:
        f = open(p, "rb")
    except OSError as e:
        raise TranscriptError(str(p), 0, f"cannot read: {e.strerror or e}") from None
    with f:
        for n, raw in enumerate(f, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TranscriptError(str(p), n, f"not UTF-8: {e.reason}") from None


def load(path: str | os.PathLike[str], registry: Registry, *, check_raw: bool = True) -> Transcript:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise TranscriptError(str(p), 0, f"cannot read: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise TranscriptError(str(p), line, f"not UTF-8: {e.reason}") from None
    return parse_lines(text.splitlines(keepends=True), registry, str(p), check_raw=check_raw)


def load_transcript(cmd: str, path: Path, registry: Registry) -> Transcript:
    """``load``, its warnings (a torn last line) printed as ``fakebroker CMD: warning: ...``."""
    transcript = load(path, registry)
    for w in transcript.warnings:
        print(f"fakebroker {cmd}: warning: {w}", file=sys.stderr)
    return transcript


def _event(obj: dict[str, Any], line: int) -> Event:
    raw = obj.get("raw")
    return Event(kind=obj["kind"], conn=obj["conn"], seq=obj.get("seq"),
                 correlation_id=obj.get("correlation_id"), api_key=obj.get("api_key"),
                 version=obj.get("version"), client_id=obj.get("client_id"), body=obj.get("body"),
                 raw=bytes.fromhex(raw) if raw is not None else None, error=obj.get("error"),
                 by=obj.get("by"), reason=obj.get("reason"), match=obj.get("match", {}),
                 hooks=obj.get("hooks", []), vtime_ms=obj.get("vtime_ms"), time=obj.get("time"),
                 line=line, api=obj.get("api"))


def _check_event(ev: Event, registry: Registry, open_requests: OpenRequests[Event],
                 check_raw: bool) -> None:
    if ev.kind == "close":
        open_requests.close(ev.conn)  # unanswered requests die with their connection
        return
    if ev.body is None:
        if ev.kind == "request" and ev.raw is not None and ev.error is not None:
            if ev.correlation_id is not None:  # it may still be answered (ApiVersions v0)
                open_requests.sent(ev.conn, ev.correlation_id, ev)
            return  # an undecodable frame, kept as bytes
        raise ValueError("body is null: only an undecodable request (with raw and error) may "
                         "have no body")
    if ev.api_key is None or ev.version is None or ev.correlation_id is None:
        raise ValueError("api_key, version and correlation_id are required with a body")
    try:
        mt = registry.request(ev.api_key) if ev.kind == "request" else registry.response(ev.api_key)
    except KeyError as e:
        raise ValueError(str(e.args[0])) from None
    if ev.api is not None and ev.api != registry.api_name(ev.api_key):
        raise ValueError(f"api {ev.api!r} does not match api_key {ev.api_key} "
                         f"({registry.api_name(ev.api_key)})")
    if not mt.supports(ev.version):
        raise ValueError(f"{mt.name} has no version {ev.version} (valid: {mt.spec.valid_versions})")
    try:
        obj = mt.cls.from_json(ev.body, "body")
    except ValueError as e:
        raise ValueError(f"{e}") from None
    for path, m in ev.match.items():
        problems = matcher_problems(m)
        if path:
            problems += [p for p in [spec_path_problem(mt.spec.struct, path)] if p]
        if problems:
            raise ValueError(f"match {path!r}: {problems[0]}")
    if ev.kind == "request":
        open_requests.sent(ev.conn, ev.correlation_id, ev)
    else:
        req = open_requests.answer(ev.conn, ev.correlation_id)
        if req is None:
            raise ValueError(f"response on connection {ev.conn!r} with correlation id "
                             f"{ev.correlation_id} answers no open request")
        if req.body is None:  # answering an undecodable request: Kafka's v0 fallback
            if req.api_key != ev.api_key:
                raise ValueError(f"response is {registry.api_name(ev.api_key)} but its request "
                                 f"(line {req.line}) is api {req.api_key}")
        elif (req.api_key, req.version) != (ev.api_key, ev.version):
            raise ValueError(f"response is {registry.api_name(ev.api_key)} v{ev.version} but its "
                             f"request (line {req.line}) is {registry.api_name(req.api_key or -1)} "
                             f"v{req.version}")
    if ev.raw is not None and check_raw:
        _check_raw(ev, registry, obj)


def _check_raw(ev: Event, registry: Registry, obj: Struct) -> None:
    assert ev.raw is not None and ev.api_key is not None and ev.version is not None
    try:
        frame = strip_size_prefix(ev.raw)
        if ev.kind == "request":
            decoded = decode_request(registry, frame, base=4)
            key, version = decoded.api_key, decoded.version
            cid = decoded.correlation_id
        else:
            resp = decode_response(registry, frame, ev.api_key, ev.version, base=4)
            decoded, key, version, cid = resp, ev.api_key, ev.version, resp.correlation_id  # type: ignore[assignment]
    except DecodeError as e:
        raise ValueError(f"raw: {e}") from None
    if (key, version, cid) != (ev.api_key, ev.version, ev.correlation_id):
        raise ValueError(f"raw is api {key} v{version} correlation id {cid}, the line says api "
                         f"{ev.api_key} v{ev.version} correlation id {ev.correlation_id}")
    if decoded.body != obj:
        where = _first_difference(decoded.body.to_json(), obj.to_json())
        raise ValueError(f"raw and body disagree at body.{where} (edit one, or remove raw)")


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b or a[k] != b[k]:
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return path or "<body>"


# ---------------------------------------------------------------------------- writing

class TranscriptWriter:
    """Appends lines to a file, flushing each, so a crash leaves every finished line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._f: IO[str] | None = open(self.path, "w", encoding="utf-8")

    def write(self, obj: dict[str, Any]) -> None:
        if self._f is not None:
            self._f.write(dumps(obj) + "\n")
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def peek_frame(frame: bytes) -> tuple[int | None, int | None, int | None]:
    """API key, version and correlation id of a request frame (no size prefix), as far as
    its bytes go: for recording frames that do not decode."""
    try:
        key, version = peek_request_key(frame)
    except DecodeError:
        return None, None, None
    cid = int.from_bytes(frame[4:8], "big", signed=True) if len(frame) >= 8 else None
    return key, version, cid


def utc_stamp(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


__all__ = ["Event", "Transcript", "TranscriptError", "TranscriptWriter", "parse_lines", "load",
           "iter_events", "open_lines", "line_problem",
           "dumps", "new_header", "schema_errors", "peek_frame", "FORMAT", "VERSION"]
