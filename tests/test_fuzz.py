"""Fuzzing the decoder: whatever the bytes, the only exception that may escape is DecodeError.

A peer's bytes reach ``decode_request`` (requests) and ``MessageType.decode`` (responses)
straight from the socket; an IndexError or a struct.error there would crash the fake
broker instead of producing a precise conformance failure. Inputs are random byte strings
and, more usefully, valid frames of every API and version built with the codec and then
damaged: bytes flipped, inserted, deleted, the frame cut short, lengths bumped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.protocol import DecodeError, MessageType, Struct, default_registry
from fakebroker.protocol.framing import decode_request, encode_request
from fakebroker.protocol.spec import INT_RANGES, FieldSpec, StructSpec, TypeRef

REG = default_registry()
REQUESTS = sorted(REG.requests.values(), key=lambda mt: mt.name)
RESPONSES = sorted(REG.responses.values(), key=lambda mt: mt.name)
RULES = {
    "truncated", "negative-length", "null-not-nullable", "length-past-end", "trailing-bytes",
    "duplicate-tag", "descending-tags", "varint-too-long", "tagged-field-size", "invalid-utf8",
    "unsupported-version", "unknown-api-key",
}

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------ valid messages from the specs
def value_of(mt: MessageType, t: TypeRef, f: FieldSpec, version: int, element: bool = False) -> st.SearchStrategy[Any]:
    """Values of type ``t`` that are valid for field ``f`` at ``version``."""
    k = t.kind
    if k in INT_RANGES:
        lo, hi = INT_RANGES[k]
        base: st.SearchStrategy[Any] = st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1])
    elif k == "bool":
        base = st.booleans()
    elif k == "float64":
        base = st.floats()
    elif k == "string":
        base = st.text(max_size=6)
    elif k in ("bytes", "records"):
        base = st.binary(max_size=6)
    elif k == "uuid":
        base = st.uuids()
    elif k == "array":
        assert t.element is not None
        base = st.lists(value_of(mt, t.element, f, version, element=True), max_size=3)
    elif k == "struct":
        assert t.struct is not None
        base = struct_of(mt, t.struct, version)
    else:
        raise AssertionError(k)
    if not element and version in f.nullable_versions:
        return st.none() | base
    return base


def struct_of(mt: MessageType, s: StructSpec, version: int) -> st.SearchStrategy[Struct]:
    cls = mt.classes[s.name]
    fields = {f.attr: value_of(mt, f.type, f, version) for f in s.fields if version in f.versions}
    return st.builds(cls, **fields)


@st.composite
def messages(draw: st.DrawFn, types: list[MessageType]) -> tuple[MessageType, int, Struct]:
    mt = draw(st.sampled_from(types))
    version = draw(st.integers(mt.lowest, mt.highest))
    return mt, version, draw(struct_of(mt, mt.spec.struct, version))


@st.composite
def request_frames(draw: st.DrawFn) -> bytes:
    mt, version, msg = draw(messages(REQUESTS))
    client_id = draw(st.none() | st.text(max_size=4))
    return encode_request(REG, msg, version, draw(st.integers(-(2**31), 2**31 - 1)), client_id)


@st.composite
def response_bodies(draw: st.DrawFn) -> tuple[MessageType, int, bytes]:
    mt, version, msg = draw(messages(RESPONSES))
    return mt, version, mt.encode(msg, version)


# ------------------------------------------------------------ damage
@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with one to four random faults of the kinds peers actually produce."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "bump", "bump-int"]))
        at = draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[at] ^= draw(st.integers(1, 255))
        elif op == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and buf:
            del buf[at:at + draw(st.integers(1, 4))]
        elif op == "truncate":
            del buf[at:]
        elif op == "bump" and buf:
            # Nudges one-byte compact lengths, counts and varints.
            buf[at] = (buf[at] + draw(st.sampled_from([-2, -1, 1, 2, 0x7f, 0x80]))) % 256
        elif op == "bump-int" and len(buf) >= at + 4:
            # Nudges a classic int16/int32 length prefix, e.g. 0 -> -1 or 5 -> 6.
            fmt = draw(st.sampled_from([">h", ">i"]))
            (n,) = struct.unpack_from(fmt, buf, at)
            lim = 2**15 if fmt == ">h" else 2**31
            n = (n + draw(st.sampled_from([-2, -1, 1, 2, lim // 2])) + lim) % (2 * lim) - lim
            struct.pack_into(fmt, buf, at, n)
    return bytes(buf)


# ------------------------------------------------------------ the property
def only_decode_errors(decode: Callable[[], Any], what: str, data: bytes) -> Any:
    """Run ``decode``; a DecodeError is fine, anything else fails with the input shown."""
    try:
        return decode()
    except DecodeError as e:
        # "malformed" is the codec's catch-all for an exception a generated check should
        # have prevented (an IndexError, a struct.error): a missing explicit check.
        assert e.rule != "malformed", f"catch-all fired: {e}\n{what} input: {data.hex()}"
        assert e.rule in RULES, f"unknown rule {e.rule!r} for {what} input {data.hex()}"
        assert 0 <= e.offset <= len(data), f"offset {e.offset} outside {what} input {data.hex()}"
        return None
    except Exception as e:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{type(e).__name__} escaped decoding {what}: {e}\ninput: {data.hex()}")


def check_request(frame: bytes) -> None:
    req = only_decode_errors(lambda: decode_request(REG, frame), "a request frame", frame)
    if req is not None:
        # Whatever is accepted must re-encode, and that encoding must be a fixed point
        # (bytes, not objects, are compared: a float64 NaN is not equal to itself).
        def again(r: Any) -> bytes:
            return encode_request(REG, r.body, r.version, r.correlation_id, r.header.client_id)

        first = again(req)
        assert again(decode_request(REG, first)) == first, frame.hex()


def check_response(mt: MessageType, version: int, data: bytes) -> None:
    msg = only_decode_errors(lambda: mt.decode(data, version), f"a {mt.name} v{version}", data)
    if msg is not None:
        first = mt.encode(msg, version)
        assert mt.encode(mt.decode(first, version), version) == first, data.hex()


@FUZZ
@given(st.binary(max_size=64))
def test_random_bytes_as_request(data: bytes) -> None:
    check_request(data)


@FUZZ
@given(st.sampled_from(sorted(REG.requests)), st.integers(-1, 20), st.binary(max_size=48))
def test_random_body_behind_a_plausible_header(key: int, version: int, body: bytes) -> None:
    # Random bytes rarely get past the API key; a real key and version make them reach bodies.
    frame = struct.pack(">hhi", key, version, 1) + body
    check_request(frame)


@FUZZ
@given(st.data())
def test_mutated_request_frames(data: st.DataObject) -> None:
    frame = data.draw(request_frames(), label="valid frame")
    assert decode_request(REG, frame).body is not None  # the undamaged frame decodes
    check_request(frame)
    check_request(data.draw(mutated(frame), label="mutated frame"))


@FUZZ
@given(st.sampled_from(RESPONSES), st.data())
def test_random_bytes_as_response(mt: MessageType, data: st.DataObject) -> None:
    version = data.draw(st.integers(mt.lowest, mt.highest), label="version")
    check_response(mt, version, data.draw(st.binary(max_size=48), label="bytes"))


@FUZZ
@given(st.data())
def test_mutated_responses(data: st.DataObject) -> None:
    mt, version, body = data.draw(response_bodies(), label="valid response")
    assert mt.decode(body, version) is not None
    check_response(mt, version, data.draw(mutated(body), label="mutated response"))
