"""The broker's Heartbeat fast path (``FakeBroker._heartbeat``) against the generic pipeline.

Differential: the same random sequence of requests (joins, syncs, leaves, heartbeats of
every version, valid or not, plain or unusual, malformed or cut short) and clock advances
goes to a broker with the fast path and to one without (``fast_heartbeats=False``), each
connection's bytes on a stub transport; after every step both wrote the same bytes, closed
the same connections, and their coordinators hold the same groups, members and timers.
A run also checks that the fast path was taken (and refused), so the test cannot pass by
never exercising it. Virtual time throughout: nothing depends on the machine's speed."""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

import pytest

from fakebroker.coordinator.classic.group import ClassicGroup
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.intercept.hooks import Continue
from fakebroker.protocol import default_registry
from fakebroker.protocol.framing import decode_request, decode_response, encode_request
from fakebroker.protocol.heartbeat_frame import heartbeat_answer, read_heartbeat
from fakebroker.server.broker import FakeBroker
from fakebroker.server.connection import Link
from fakebroker.server.clock import VirtualClock
from fakebroker.server.config import BrokerConfig

REG = default_registry()
JOIN, SYNC, HB, LEAVE = (REG[f"{n}Request"] for n in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"))
JOIN_V, SYNC_V, LEAVE_V = 5, 3, 3


class _Transport:
    def __init__(self) -> None:
        self.out: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.out.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class World:
    """One broker on stub connections."""

    def __init__(self, fast: bool) -> None:
        ids = itertools.count(1)
        self.clock = VirtualClock()
        self.broker = FakeBroker(
            BrokerConfig(port=0), CoordinatorConfig(
                initial_rebalance_delay_ms=0, min_session_timeout_ms=0,
                member_id_suffix=lambda: f"{next(ids):04d}"),
            clock=self.clock, fast_heartbeats=fast)
        self.links: list[tuple[Link, _Transport]] = []
        self.fast_taken = 0

    def connect(self) -> int:
        link, t = Link(self.broker), _Transport()
        link.connection_made(t)  # type: ignore[arg-type]
        self.links.append((link, t))
        return len(self.links) - 1

    def send(self, conn: int, frame: bytes) -> None:
        self.links[conn][0].data_received(frame)

    def close(self, conn: int) -> None:
        link, _ = self.links[conn]
        link.connection_lost(None)

    def state(self) -> Any:
        coord = self.broker.coordinator
        groups = {}
        for gid, g in sorted(coord.groups.items()):
            assert isinstance(g, ClassicGroup)
            groups[gid] = (g.state, g.generation_id, g.leader_id, g.protocol_name, sorted(g.static_members.items()),
                           sorted(g.pending_join), sorted(g.pending_sync),
                           [(m.member_id, m.group_instance_id, m.session_timeout_ms, m.assignment,
                             m.awaiting_join is not None, m.awaiting_sync is not None, m.is_new)
                            for m in g.members.values()])
        timers = coord.env.timers
        return (coord.env.now_ms, groups,
                sorted((repr(k), t.deadline_ms, t.seq) for k, t in timers._by_key.items()),
                coord.next_deadline(), self.broker.quiet())

    def wire(self) -> Any:
        return [(t.out, t.closed) for _, t in self.links]


async def settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


def _heartbeat(rng: random.Random, ids: list[str], instances: dict[str, str], generation: int) -> bytes:
    version = rng.randint(0, 4)
    member = rng.choice(ids + ["", "nobody"]) if ids else rng.choice(["", "nobody"])
    instance = None
    if version >= 3 and rng.random() < 0.4:
        instance = rng.choice(list(instances) + ["lost"]) if instances else "lost"
    elif version >= 3 and member in instances.values():
        instance = next(i for i, m in instances.items() if m == member)
    group = rng.choice(["g"] * 8 + ["", "other", "é" * 70])  # 140 bytes: a two-byte compact length
    body = HB.new(group_id=group, generation_id=rng.choice([generation] * 6 + [generation - 1, -1, 7]),
                  member_id=member, group_instance_id=instance)
    client = rng.choice(["c", None, "ü", ""])
    frame = encode_request(REG, body, version, rng.randint(-2**31, 2**31 - 1), client, size_prefix=True)
    roll = rng.random()
    if roll < 0.05:  # cut short
        frame = frame[:rng.randint(4, len(frame) - 1)]
        frame = len(frame[4:]).to_bytes(4, "big") + frame[4:]
    elif roll < 0.08:  # a byte left over
        frame = (len(frame) - 3).to_bytes(4, "big") + frame[4:] + b"\x00"
    elif roll < 0.11:  # a byte changed
        i = rng.randrange(4, len(frame))
        frame = frame[:i] + bytes([rng.randrange(256)]) + frame[i + 1:]
    elif roll < 0.14 and version == 4:  # a tagged field in the body (a valid request)
        body._unknown_tags = {7: b"x"}  # type: ignore[attr-defined]
        frame = encode_request(REG, body, version, 1, client, size_prefix=True)
    elif roll < 0.16:  # a version not advertised
        frame = frame[:6] + b"\x00\x09" + frame[8:]
    elif roll < 0.20:  # a null (or, compact, a zero-length-byte) group or member id
        pos = 4 + 10 + len((client or "").encode()) + (version >= 4)
        if rng.random() < 0.5:  # the member id's length instead
            pos += (1 if version >= 4 else 2) + len(group.encode()) + 4
        null = b"\x00" if version >= 4 else b"\xff\xff"
        frame = frame[:pos] + null + frame[pos + len(null):]
    return frame


async def run(seed: int, steps: int) -> tuple[int, int]:
    rng = random.Random(seed)
    worlds = [World(True), World(False)]
    for w in worlds:
        await w.broker.start()
    try:
        members: dict[int, str] = {}  # connection -> member id
        instances: dict[str, str] = {}  # instance id -> member id (as last assigned)
        generation = 0
        fresh = 0

        def each(fn: Any) -> None:
            for w in worlds:
                fn(w)

        for step in range(steps):
            roll = rng.random()
            conns = list(members)
            if roll < 0.08 or not conns:  # a new member joins (dynamic or static)
                fresh += 1
                static = rng.random() < 0.4
                instance = f"i{rng.randint(0, 3)}" if static else None
                conn = [w.connect() for w in worlds][0]
                frame = encode_request(REG, JOIN.new(
                    group_id="g", session_timeout_ms=rng.choice([30, 60, 200]), rebalance_timeout_ms=100,
                    member_id="", group_instance_id=instance, protocol_type="consumer",
                    protocols=[JOIN.cls.JoinGroupRequestProtocol(name="range", metadata=b"m")]),  # type: ignore[attr-defined]
                    JOIN_V, fresh, "c", size_prefix=True)
                each(lambda w: w.send(conn, frame))
                members[conn] = ""
                if instance is not None:
                    instances[instance] = ""
            elif roll < 0.16:  # a member (re)joins with the id it was given
                conn = rng.choice(conns)
                frame = encode_request(REG, JOIN.new(
                    group_id="g", session_timeout_ms=rng.choice([30, 60, 200]), rebalance_timeout_ms=100,
                    member_id=members[conn], protocol_type="consumer",
                    group_instance_id=next((i for i, m in instances.items() if m and m == members[conn]), None),
                    protocols=[JOIN.cls.JoinGroupRequestProtocol(name="range", metadata=b"m")]),  # type: ignore[attr-defined]
                    JOIN_V, step, "c", size_prefix=True)
                each(lambda w: w.send(conn, frame))
            elif roll < 0.22:  # a sync (the leader's with an assignment for every member)
                conn = rng.choice(conns)
                plan = [SYNC.cls.SyncGroupRequestAssignment(member_id=m, assignment=b"a")  # type: ignore[attr-defined]
                        for m in members.values() if m]
                frame = encode_request(REG, SYNC.new(group_id="g", generation_id=generation,
                                                     member_id=members[conn], assignments=plan),
                                       SYNC_V, step, "c", size_prefix=True)
                each(lambda w: w.send(conn, frame))
            elif roll < 0.25:  # a leave
                conn = rng.choice(conns)
                frame = encode_request(REG, LEAVE.new(group_id="g", members=[
                    LEAVE.cls.MemberIdentity(member_id=members[conn])]),  # type: ignore[attr-defined]
                    LEAVE_V, step, "c", size_prefix=True)
                each(lambda w: w.send(conn, frame))
            elif roll < 0.30:  # time passes: sessions expire, rebalances time out
                ms = rng.choice([1, 5, 20, 40, 70])
                each(lambda w: w.clock.advance(ms))
                if rng.random() < 0.5:  # a heartbeat before the timers' task runs: timers are due
                    frame = _heartbeat(rng, [m for m in members.values() if m],
                                       {i: m for i, m in instances.items() if m}, generation)
                    conn = rng.choice(conns)
                    each(lambda w: w.send(conn, frame))
            elif roll < 0.32:  # a connection drops
                conn = rng.choice(conns)
                each(lambda w: w.close(conn))
                del members[conn]
            else:  # heartbeats, mostly plain, on a member's connection or a new one
                frame = _heartbeat(rng, [m for m in members.values() if m],
                                   {i: m for i, m in instances.items() if m}, generation)
                conn = rng.choice(conns) if rng.random() < 0.9 else [w.connect() for w in worlds][0]
                each(lambda w: w.send(conn, frame))
            await settle()
            # What the members learnt (from the fast world; the other's bytes are compared).
            for conn in list(members):
                for out in worlds[0].links[conn][1].out[-3:]:
                    try:
                        join = decode_response(REG, out[4:], 11, JOIN_V).body
                    except Exception:  # noqa: BLE001 - not a JoinGroup answer
                        continue
                    if join.member_id and join.error_code in (0, 79):  # type: ignore[attr-defined]
                        members[conn] = join.member_id  # type: ignore[attr-defined]
                        for i, m in instances.items():
                            if m == "" or m == join.member_id:  # type: ignore[attr-defined]
                                instances[i] = join.member_id  # type: ignore[attr-defined]
                        generation = max(generation, join.generation_id)  # type: ignore[attr-defined]
            fast, slow = worlds
            assert fast.wire() == slow.wire(), f"seed {seed}, step {step}: the answers differ"
            assert fast.state() == slow.state(), f"seed {seed}, step {step}: the coordinators differ"
        return sum(t.out.__len__() for _, t in worlds[0].links), len(worlds[0].links)
    finally:
        for w in worlds:
            await w.broker.stop()


@pytest.mark.parametrize("seed", range(6))
def test_fast_and_generic_heartbeats_answer_and_change_state_alike(seed: int, monkeypatch: Any) -> None:
    taken: list[bool] = []
    original = FakeBroker._heartbeat

    def counting(self: FakeBroker, conn: Any, frame: bytes) -> bytes | None:
        out = original(self, conn, frame)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(FakeBroker, "_heartbeat", counting)
    answers, _ = asyncio.run(run(seed, 400))
    assert answers > 100
    assert taken.count(True) > 30, "the fast path was hardly taken"
    assert taken.count(False) > 5, "the fast path never declined"


#: Every version the Heartbeat spec has: the fast path is checked against the codec for each.
VERSIONS = range(HB.lowest, HB.highest + 1)


def test_plain_frames_are_read_as_the_codec_reads_them() -> None:
    rng = random.Random(1)
    read = set()
    for _ in range(2000):
        version = rng.choice(VERSIONS)
        since = HB.spec.struct.fields[-1].versions.lo  # GroupInstanceId's first version
        body = HB.new(group_id=rng.choice(["g", "é" * rng.randint(0, 70)]), generation_id=rng.randint(-5, 5),
                      member_id=rng.choice(["", "m-1", "x" * 200]),
                      group_instance_id=rng.choice([None, "", "i"]) if version >= since else None)
        corr = rng.randint(-2**31, 2**31 - 1)
        frame = encode_request(REG, body, version, corr, rng.choice([None, "c"]))
        got = read_heartbeat(frame)
        long = HB.is_flexible(version) and any(len((s or "").encode()) >= 127 for s in (
            body.group_id, body.member_id, body.group_instance_id))  # type: ignore[attr-defined]
        if long:
            assert got is None  # a two-byte compact length: the generic path reads it
            continue
        decoded = decode_request(REG, frame)
        b: Any = decoded.body
        assert got == (version, corr, b.group_id, b.generation_id, b.member_id, b.group_instance_id)
        assert (decoded.version, decoded.correlation_id) == (version, corr)
        read.add(version)
    assert read == set(VERSIONS)


def test_answers_are_the_codecs() -> None:
    from fakebroker.protocol.framing import encode_response
    for version in VERSIONS:
        for error in (0, 16, 22, 25, 27, 82):
            for corr in (0, 1, -1, 2**31 - 1):
                expected = encode_response(REG, REG["HeartbeatResponse"].new(error_code=error), version, corr,
                                           size_prefix=True)
                assert heartbeat_answer(REG, version, corr, error) == expected


def test_recorders_and_hooks_see_every_heartbeat() -> None:
    """The fast path is off while anything must see requests: every heartbeat reaches the
    recorder and the hook."""

    class Seen:
        def __init__(self) -> None:
            self.requests: list[int] = []

        def begin(self, **_: Any) -> None:
            pass

        def request(self, registry: Any, conn: int, frame: bytes, now: int, **_: Any) -> None:
            self.requests.append(int.from_bytes(frame[:2], "big"))

        def response(self, *_: Any, **__: Any) -> None:
            pass

        def close(self, *_: Any, **__: Any) -> None:
            pass

        def close_sink(self) -> None:
            pass

    async def go() -> tuple[list[int], list[int]]:
        w = World(True)
        await w.broker.start()
        try:
            conn = w.connect()
            join = encode_request(REG, JOIN.new(group_id="g", session_timeout_ms=60_000, rebalance_timeout_ms=100,
                                                member_id="", group_instance_id="s", protocol_type="consumer",
                                                protocols=[JOIN.cls.JoinGroupRequestProtocol(  # type: ignore[attr-defined]
                                                    name="range", metadata=b"m")]), JOIN_V, 1, "c", size_prefix=True)
            w.send(conn, join)
            await settle()
            member = decode_response(REG, w.links[conn][1].out[-1][4:], 11, JOIN_V).body.member_id  # type: ignore[attr-defined]
            hb = encode_request(REG, HB.new(group_id="g", generation_id=1, member_id=member), 3, 2, "c",
                                size_prefix=True)
            w.send(conn, hb)  # generic: the route is set up
            w.send(conn, hb)  # fast
            seen = w.broker.record(Seen())  # type: ignore[arg-type]
            w.send(conn, hb)
            w.broker.stop_recording(seen)  # type: ignore[arg-type]
            hooked: list[int] = []
            w.broker.hooks.add(lambda call: hooked.append(call.api_key) or Continue(), name="count")  # type: ignore[func-returns-value]
            w.send(conn, hb)
            await settle()
            answers = [decode_response(REG, o[4:], 12, 3).body.error_code for o in w.links[conn][1].out[1:]]  # type: ignore[attr-defined]
            assert answers == [0, 0, 0, 0]
            return seen.requests, hooked
        finally:
            await w.broker.stop()

    recorded, hooked = asyncio.run(go())
    assert recorded == [12]
    assert hooked == [12]


def test_a_registry_with_other_heartbeat_specs_never_takes_the_fast_path() -> None:
    import dataclasses

    from fakebroker.protocol import Registry
    from fakebroker.protocol.heartbeat_frame import fits

    specs = [mt.spec for mt in REG.types.values()]
    assert fits(REG) and fits(Registry(specs))  # the same specs, loaded again
    other = [dataclasses.replace(s, latest_version_unstable=not s.latest_version_unstable)
             if s.name == "HeartbeatResponse" else s for s in specs]
    without = [s for s in specs if s.name != "HeartbeatRequest"]
    for registry in (Registry(other), Registry(without)):
        assert not fits(registry)
        assert not FakeBroker(BrokerConfig(port=0), registry=registry)._fast_heartbeats
    assert FakeBroker(BrokerConfig(port=0))._fast_heartbeats
    assert not FakeBroker(BrokerConfig(port=0), fast_heartbeats=False)._fast_heartbeats
