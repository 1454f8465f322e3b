"""Fuzzing the decoder: whatever the bytes, the only exception that may escape is DecodeError.

A peer's bytes reach ``decode_request`` (requests) and ``MessageType.decode`` (responses)
straight from the socket; an IndexError or a struct.error there would crash the fake
broker instead of producing a precise conformance failure. Inputs are random byte strings
and, more usefully, valid frames of every API and version built with the codec and then
damaged: bytes flipped, inserted, deleted, the frame cut short, lengths bumped. The last
test sends such frames through a running broker while a member of another group
heartbeats: it must keep its assignment.
"""

from __future__ import annotations

import asyncio
import logging
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


# ------------------------------------------------------------ the wire path, with a bystander
# Damaged and random frames reach a running FakeBroker, each on its own connection (a
# malformed frame closes its connection), while one well-behaved member of another group
# heartbeats through it all on the broker's virtual clock. The broker must stay up, log no
# traceback, and leave that member its generation and assignment. Bounded: WIRE_EXAMPLES
# derandomized examples (the same frames on every run) of at most WIRE_FRAMES frames each.
WIRE_EXAMPLES, WIRE_FRAMES, WIRE_CONNECTIONS = 25, 80, 8
WIRE = settings(max_examples=WIRE_EXAMPLES, derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
STEADY = "steady-group"  # longer than any drawn string: no frame names it by chance
JOIN, SYNC, HEARTBEAT = REG["JoinGroupRequest"], REG["SyncGroupRequest"], REG["HeartbeatRequest"]


@st.composite
def wire_frames(draw: st.DrawFn) -> bytes:
    """A size-prefixed frame: valid, damaged or random; now and then a wrong prefix."""
    kind = draw(st.sampled_from(["valid", "mutated", "mutated", "random"]))
    if kind == "random":
        frame = draw(st.binary(max_size=64))
    else:
        frame = draw(request_frames())
        if kind == "mutated":
            frame = draw(mutated(frame))
    n = len(frame)
    size = draw(st.sampled_from([n] * 8 + [n - 1, n + 1, -(2**31), 2**31 - 1]))
    return struct.pack(">i", size) + frame


async def _steady_member(c: Any) -> tuple[str, int, bytes]:
    proto = [JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x01")]

    def join(member: str) -> Struct:
        return JOIN.new(group_id=STEADY, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                        member_id=member, protocol_type="connect", protocols=proto)
    member = (await c.send(join(""), 5)).response.member_id
    joined = (await c.send(join(member), 5)).response
    assert joined.error_code == 0 and joined.leader == member
    mine = b"assignment of " + member.encode()
    a = SYNC.cls.SyncGroupRequestAssignment(member_id=member, assignment=mine)
    synced = (await c.send(SYNC.new(group_id=STEADY, generation_id=joined.generation_id,
                                    member_id=member, assignments=[a]), 3)).response
    assert synced.error_code == 0 and synced.assignment == mine
    return member, joined.generation_id, mine


async def _fuzz_connection(host: str, port: int, frame: bytes) -> None:
    """Send one frame and half-close: the broker answers or refuses it, then closes
    (also when the request is parked: the client has gone), so every read ends."""
    r, w = await asyncio.open_connection(host, port)
    try:
        w.write(frame)
        w.write_eof()
        await r.read()
    except ConnectionError:
        pass  # refused mid-write: the broker closed first
    finally:
        w.close()


class _Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.bad: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "internal error" in record.getMessage():
            self.bad.append(self.format(record))


@WIRE
@given(st.lists(wire_frames(), min_size=WIRE_FRAMES // 2, max_size=WIRE_FRAMES))
def test_fuzzed_wire_leaves_a_heartbeating_member_its_assignment(frames: list[bytes]) -> None:
    from fakebroker.client import KafkaConnection
    from fakebroker.coordinator.config import CoordinatorConfig
    from fakebroker.server.broker import FakeBroker
    from fakebroker.server.clock import VirtualClock

    async def go() -> None:
        clock = VirtualClock()
        broker = FakeBroker(coordinator_config=CoordinatorConfig(initial_rebalance_delay_ms=0),
                            clock=clock)
        async with broker, await KafkaConnection.open(broker.bootstrap, timeout_s=30) as c:
            member, generation, mine = await _steady_member(c)
            host, port = broker.bootstrap.rsplit(":", 1)
            pending = list(frames)

            async def fuzzer() -> None:
                while pending:
                    await _fuzz_connection(host, int(port), pending.pop())

            fuzzers = asyncio.ensure_future(asyncio.gather(*(fuzzer() for _ in range(WIRE_CONNECTIONS))))
            beats = 0
            hb = HEARTBEAT.new(group_id=STEADY, generation_id=generation, member_id=member)
            while not fuzzers.done() or beats < 3:
                clock.advance(1000)  # a tenth of the session timeout per beat: timers fire too
                assert (await c.send(hb, 3)).response.error_code == 0, f"heartbeat {beats}"
                beats += 1
            await fuzzers
            again = (await c.send(SYNC.new(group_id=STEADY, generation_id=generation,
                                           member_id=member, assignments=[]), 3)).response
            assert (again.error_code, again.assignment) == (0, mine)
            described = (await c.send(REG["DescribeGroupsRequest"].new(groups=[STEADY]), 5)).response
            (g,) = described.groups
            assert g.group_state == "Stable" and [m.member_id for m in g.members] == [member]
            assert (await c.send(REG["ApiVersionsRequest"].new(), 3)).response.error_code == 0

    watch = _Tracebacks()
    logging.getLogger().addHandler(watch)
    try:
        asyncio.run(asyncio.wait_for(go(), 120))
    finally:
        logging.getLogger().removeHandler(watch)
    assert not watch.bad, "\n".join(watch.bad)
