"""Heartbeat (API 12, v0-4) frames read and answered straight from bytes: the server's
fast path for its most frequent request.

``read_heartbeat`` returns a frame's fields only when the frame is plain (a well-formed
header and body, every string's length in one byte where the version uses compact
strings, no tagged fields, nothing left over); for anything else it returns None and the
frame takes the generic path (``framing.decode_request``), which keeps every strictness
check and error message. So whatever this reads, the generic decoder reads the same way.

``heartbeat_answer`` is the response frame, size prefix included, for a version and error
code: encoded once by the codec, then copied with the correlation id written in.

The layout is the default registry's Heartbeat spec: its versions, the first flexible one
and the first with GroupInstanceId are read from the spec, and the field order this module
reads is checked against it at import. ``fits`` says whether a registry's specs are those
(a registry loaded from other specs gets the generic path). tests/server/test_fast_heartbeat.py
compares the reader and the answers with the codec's, byte for byte, for every version.
"""

from __future__ import annotations

import struct
from typing import Any, TypeAlias

from .framing import encode_response
from .registry import Registry, default_registry

_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _layout() -> tuple[int, int, int, int, int]:
    """(API key, lowest, highest, first flexible version, first with GroupInstanceId) from
    the default registry's spec, whose fields must be the ones ``read_heartbeat`` reads."""
    mt = default_registry()["HeartbeatRequest"]
    fields = {f.name: f for f in mt.spec.struct.fields}
    if list(fields) != ["GroupId", "GenerationId", "MemberId", "GroupInstanceId"]:
        raise RuntimeError(f"HeartbeatRequest's fields are {list(fields)}: heartbeat_frame "
                           "reads GroupId, GenerationId, MemberId, GroupInstanceId")
    flexible = next((v for v in range(mt.lowest, mt.highest + 1) if mt.is_flexible(v)),
                    mt.highest + 1)
    since = fields["GroupInstanceId"].versions.lo
    return mt.spec.api_key, mt.lowest, mt.highest, flexible, since


API_KEY, _LOWEST, _HIGHEST, _FLEXIBLE, _INSTANCE_ID_SINCE = _layout()

#: (api version, correlation id, group id, generation id, member id, group instance id)
HeartbeatFrame: TypeAlias = tuple[int, int, str, int, str, "str | None"]


def fits(registry: Registry) -> bool:
    """``registry``'s Heartbeat and header specs are the ones this module reads and writes."""
    if registry is default_registry():
        return True
    ref = default_registry()
    try:
        return all(registry[name].spec == ref[name].spec
                   for name in ("HeartbeatRequest", "HeartbeatResponse", "RequestHeader",
                                "ResponseHeader"))
    except KeyError:
        return False


def read_heartbeat(frame: bytes) -> HeartbeatFrame | None:
    """The fields of a plain Heartbeat request frame (no size prefix), else None."""
    if len(frame) < 8:
        return None
    key, version, correlation_id = _HEAD.unpack_from(frame, 0)
    if key != API_KEY or not _LOWEST <= version <= _HIGHEST:
        return None
    flexible = version >= _FLEXIBLE
    try:
        _, pos = _string(frame, 8, False, nullable=True)  # the client id (valid UTF-8 too)
        if flexible:
            if frame[pos]:  # the header's tagged fields: none
                return None
            pos += 1
        group_id, pos = _string(frame, pos, flexible)
        generation_id = _I32.unpack_from(frame, pos)[0]
        member_id, pos = _string(frame, pos + 4, flexible)
        instance_id = None
        if version >= _INSTANCE_ID_SINCE:
            instance_id, pos = _string(frame, pos, flexible, nullable=True)
        if flexible:
            if frame[pos]:  # the body's tagged fields: none
                return None
            pos += 1
    except (_Unusual, IndexError, struct.error, UnicodeDecodeError):  # or cut short, or not UTF-8
        return None
    if pos != len(frame):  # a string ran past the end (slices stop there), or bytes left over
        return None
    return version, correlation_id, group_id, generation_id, member_id, instance_id


class _Unusual(Exception):
    """A string the generic path must read: null where not nullable, or a compact length
    longer than one byte."""


def _string(frame: bytes, pos: int, compact: bool, nullable: bool = False) -> tuple[Any, int]:
    """A string field at ``pos`` (None if null) and the position after it; a string running
    past the end is cut there (the caller's final position check refuses the frame)."""
    if compact:
        n = frame[pos] - 1
        if n >= 127:
            raise _Unusual
        pos += 1
    else:
        n = _I16.unpack_from(frame, pos)[0]
        pos += 2
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise _Unusual
    e = pos + n
    return frame[pos:e].decode(), e


def heartbeat_answer(registry: Registry, version: int, correlation_id: int, error_code: int) -> bytes:
    """The HeartbeatResponse frame (size prefix included) the codec would encode for
    ``version``, ``correlation_id`` and ``error_code`` (no throttle, no tagged fields)."""
    key = ("heartbeat-answer", version, error_code)
    parts = registry.frame_layouts.get(key)
    if parts is None:
        body = registry["HeartbeatResponse"].new(error_code=error_code)
        whole = encode_response(registry, body, version, 0, size_prefix=True)
        parts = registry.frame_layouts[key] = (whole[:4], whole[8:])
    return parts[0] + _I32.pack(correlation_id) + parts[1]
