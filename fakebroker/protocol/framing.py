"""Request and response frames: headers, the header-version rules and the size prefix.

Header versions follow Kafka's rules: a request in a flexible version carries request
header v2 (tagged fields) and otherwise v1; a response in a flexible version carries
response header v1, except ApiVersions, whose response header is always v0 so that a
client that does not yet know the broker's versions can read it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .errors import DecodeError, EncodeError
from .messages import Struct
from .registry import MessageType, Registry

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
_PREFIX = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")


def request_header_version(registry: Registry, api_key: int, version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN_KEY and version == 0:
        return 0  # the one request that predates client ids
    return 2 if registry.request(api_key).is_flexible(version) else 1


def response_header_version(registry: Registry, api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if registry.response(api_key).is_flexible(version) else 0


@dataclass(slots=True, weakref_slot=True)  # (the server frees a big request's objects when it dies)
class Request:
    """A decoded request frame. ``api_key``, ``version`` and ``correlation_id`` are the
    header's, copied out once (every layer of the server reads them)."""

    header: Struct  # a RequestHeader: request_api_key, request_api_version, correlation_id, client_id
    body: Struct
    header_version: int
    api_key: int = field(init=False)
    version: int = field(init=False)
    correlation_id: int = field(init=False)

    def __post_init__(self) -> None:
        h: Any = self.header
        self.api_key, self.version = h.request_api_key, h.request_api_version
        self.correlation_id = h.correlation_id


@dataclass
class Response:
    header: Struct  # a ResponseHeader: correlation_id
    body: Struct
    header_version: int

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)  # type: ignore[attr-defined]


def peek_request_key(frame: bytes) -> tuple[int, int]:
    """API key and version of a request frame, read without decoding the rest."""
    if len(frame) < 4:
        raise DecodeError("RequestHeader.RequestApiKey", 0, "truncated",
                          f"a request header needs at least 8 bytes, the frame has {len(frame)}")
    key, version = _KEY_VERSION.unpack_from(frame, 0)
    return key, version


def _layout(registry: Registry, kind: str, key: int, version: int) -> tuple[int, MessageType, MessageType] | None:
    """A frame's header version, header type and body type for a ``kind`` ("request" or
    "response") of an API key and version with a spec (None otherwise), looked up once
    per registry: this is on every request's path, and specs are only ever added."""
    layout = registry.frame_layouts.get((kind, key, version))
    if layout is None:
        body_type = (registry.requests if kind == "request" else registry.responses).get(key)
        if body_type is None or not body_type.supports(version):
            return None
        if kind == "request":
            layout = (request_header_version(registry, key, version), registry["RequestHeader"], body_type)
        else:
            layout = (response_header_version(registry, key, version), registry["ResponseHeader"], body_type)
        registry.frame_layouts[(kind, key, version)] = layout
    return layout


def decode_request(registry: Registry, frame: bytes | bytearray | memoryview, *, base: int = 0) -> Request:
    """Decode a request frame (without its size prefix). Requests describe themselves."""
    buf = bytes(frame)
    key, version = peek_request_key(buf)
    layout = registry.frame_layouts.get(("request", key, version)) or _layout(registry, "request", key, version)
    if layout is not None:
        hv, header_type, body_type = layout
        try:
            header, pos = header_type.decode_from(buf, 0, hv)
        except DecodeError as e:
            raise e.shift(base) from None
        try:
            body = body_type.decode_rest(buf, pos, version, base=base)
        except DecodeError as e:
            e.header = header
            raise
        return Request(header, body, hv)
    # An unknown API key or an unsupported version: the error names which (the header of
    # an unsupported version is read as v1, to give the answer its correlation id).
    if key not in registry.requests:
        raise DecodeError("RequestHeader.RequestApiKey", base, "unknown-api-key",
                          f"API key {key} has no spec loaded")
    try:
        header, pos = registry["RequestHeader"].decode_from(buf, 0, 1)
    except DecodeError as e:
        raise e.shift(base) from None
    body_type = registry.request(key)
    err = DecodeError(f"{body_type.name}", base + pos, "unsupported-version",
                      f"version {version} is outside {body_type.name}'s valid versions "
                      f"{body_type.spec.valid_versions}")
    err.header = header
    raise err


def encode_request(registry: Registry, body: Struct, version: int, correlation_id: int,
                   client_id: str | None = "fakebroker", *, size_prefix: bool = False) -> bytes:
    body_type = registry.of(body)
    if body_type.spec.type != "request":
        raise EncodeError(body_type.name, "wrong-type", "not a request")
    key = body_type.api_key
    assert key is not None
    hv = request_header_version(registry, key, version)
    header_type = registry["RequestHeader"]
    header = header_type.new(request_api_key=key, request_api_version=version,
                             correlation_id=correlation_id, client_id=client_id)
    w = bytearray(4) if size_prefix else bytearray()
    header_type.encode_into(header, hv, w)
    body_type.encode_into(body, version, w)
    if size_prefix:
        _PREFIX.pack_into(w, 0, len(w) - 4)
    return bytes(w)


def decode_response(registry: Registry, frame: bytes | bytearray | memoryview, api_key: int,
                    version: int, *, base: int = 0) -> Response:
    """Decode a response frame; responses do not say what they answer, so the caller does."""
    buf = bytes(frame)
    hv = response_header_version(registry, api_key, version)
    try:
        header, pos = registry["ResponseHeader"].decode_from(buf, 0, hv)
    except DecodeError as e:
        raise e.shift(base) from None
    body = registry.response(api_key).decode(buf[pos:], version, base=base + pos)
    return Response(header, body, hv)


def encode_response(registry: Registry, body: Struct, version: int, correlation_id: int,
                    *, size_prefix: bool = False) -> bytes:
    body_type = registry.of(body)
    if body_type.spec.type != "response":
        raise EncodeError(body_type.name, "wrong-type", "not a response")
    key = body_type.api_key
    assert key is not None
    # (For a version with no spec, the body's encoder refuses it, naming the version.)
    hv, header_type, _ = (registry.frame_layouts.get(("response", key, version))
                          or _layout(registry, "response", key, version)
                          or (0, registry["ResponseHeader"], body_type))
    w = bytearray(4) if size_prefix else bytearray()
    head = _response_header(registry, header_type, hv)
    if head is not None and -0x80000000 <= correlation_id <= 0x7FFFFFFF:
        w += head
        _PREFIX.pack_into(w, len(w) - len(head), correlation_id)
    else:  # (an out-of-range id: the header's encoder names the field)
        header_type.encode_into(header_type.new(correlation_id=correlation_id), hv, w)
    body_type.encode_into(body, version, w)
    if size_prefix:
        _PREFIX.pack_into(w, 0, len(w) - 4)
    return bytes(w)


def _response_header(registry: Registry, header_type: MessageType, hv: int) -> bytes | None:
    """The response header at version ``hv`` with correlation id 0, when the id is its
    first four bytes and nothing else in it varies (then an answer's header is this with
    the id written in, not an object encoded per response); else None. Once per registry."""
    key = ("response-header", header_type.name, hv)
    head = registry.frame_layouts.get(key, False)
    if head is False:
        zero, one = (header_type.encode(header_type.new(correlation_id=c), hv) for c in (0, 1))
        head = zero if one == _PREFIX.pack(1) + zero[4:] and zero[:4] == bytes(4) else None
        registry.frame_layouts[key] = head
    return head


def add_size_prefix(frame: bytes) -> bytes:
    return _PREFIX.pack(len(frame)) + frame


def strip_size_prefix(data: bytes, max_size: int | None = None) -> bytes:
    """Check and remove the 4-byte size prefix of exactly one frame."""
    if len(data) < 4:
        raise DecodeError("<size>", 0, "truncated", f"a size prefix needs 4 bytes, got {len(data)}")
    (size,) = _PREFIX.unpack_from(data, 0)
    if size < 0:
        raise DecodeError("<size>", 0, "negative-length", f"frame size {size} is negative")
    if max_size is not None and size > max_size:
        raise DecodeError("<size>", 0, "frame-too-large", f"frame size {size} exceeds {max_size}")
    if size != len(data) - 4:
        rule = "length-past-end" if size > len(data) - 4 else "trailing-bytes"
        raise DecodeError("<size>", 0, rule,
                          f"size prefix says {size} byte(s) but {len(data) - 4} follow")
    return data[4:]


def has_size_prefix(data: bytes) -> bool:
    """True when the first four bytes are a size equal to the remaining length."""
    return len(data) >= 4 and _PREFIX.unpack_from(data, 0)[0] == len(data) - 4
