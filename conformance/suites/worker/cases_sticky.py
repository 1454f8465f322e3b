"""Worker suite, KIP-341 (K341-*): the sticky assignor's user data and generation, for a
consumer-group member claiming protocol ``sticky``.

What the member sends is read with ``schemas/assignors/ConsumerProtocolSubscription.json``
(the JoinGroup metadata, int16 version prefix) and ``StickyAssignorUserData.json`` (the user
data, Kafka's layout: no version prefix; v0 and v1 told apart by the bytes left after the
partition list). As leader, the member's SyncGroup assignments are read as Kafka's consumer
protocol assignment (int16 version, []{topic, []int32}, nullable user data).

The leader cases forge the member's first SyncGroup answer (an empty assignment), so the
member owns nothing and the partitions claimed by the scripted peers are the only claims.
"""

from __future__ import annotations

import struct
from typing import Any

from fakebroker.protocol import DecodeError, default_registry

from ...harness.cases import case
from ...harness.outcomes import Broken, Violation
from ...harness.worker import Seen, WorkerContext, WorkerProcess

W = "worker"
REG = default_registry()
SUBSCRIPTION = REG["ConsumerProtocolSubscription"]
USER_DATA = REG["StickyAssignorUserData"]
PROTOCOL = "sticky"
PROTOCOL_TYPE = "consumer"
TOPICS = ["t0", "t1"]  # the bundled target's topics (t0:3, t1:2)
PEER_SESSION_MS = 30_000
EMPTY_ASSIGNMENT = b"\x00\x00" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff"  # v0, no partitions, null user data

TP = tuple[str, int]


def user_data_bytes(owned: list[TP], generation: int | None) -> bytes:
    """Kafka's sticky user data: v1 with ``generation``, v0 (no generation) when None."""
    by: dict[str, list[int]] = {}
    for t, p in sorted(owned):
        by.setdefault(t, []).append(p)
    entries = [USER_DATA.classes["TopicPartition"](topic=t, partitions=ps) for t, ps in by.items()]
    if generation is None:
        return USER_DATA.encode(USER_DATA.new(previous_assignment=entries), 0)
    return USER_DATA.encode(USER_DATA.new(previous_assignment=entries, generation=generation), 1)


def subscription_bytes(owned: list[TP], generation: int | None) -> bytes:
    return SUBSCRIPTION.encode_versioned(
        SUBSCRIPTION.new(topics=TOPICS, user_data=user_data_bytes(owned, generation)), 0)


def decode_user_data(data: bytes, what: str) -> tuple[int, list[TP], int]:
    """(layout version, partitions, generation) of sticky user data, strictly."""
    try:
        v0, pos = USER_DATA.decode_from(data, 0, 0)
    except DecodeError as e:
        raise Violation(what, "sticky user data in Kafka's layout (no version prefix)",
                        f"{e}; bytes {data.hex()}") from None
    left = len(data) - pos
    if left == 0:
        return 0, _parts(v0.previous_assignment), -1
    try:
        v1 = USER_DATA.decode(data, 1)
    except DecodeError as e:
        raise Violation(what, "v0 (nothing after the partition list) or v1 (exactly an int32 generation after it)",
                        f"{left} byte(s) after the partition list: {e}; bytes {data.hex()}") from None
    return 1, _parts(v1.previous_assignment), v1.generation


def _parts(entries: Any) -> list[TP]:
    return sorted((e.topic, p) for e in entries or () for p in e.partitions)


def decode_assignment(data: bytes, what: str) -> list[TP]:
    """Kafka's ConsumerProtocolAssignment (any version: its fields up to the user data)."""
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out: list[TP] = []
        for _ in range(n):
            (ln,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2:pos + 2 + ln].decode()
            pos += 2 + ln
            (k,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out += [(topic, p) for p in struct.unpack_from(f">{k}i", data, pos)]
            pos += 4 * k
        return sorted(out)
    except (struct.error, UnicodeDecodeError) as e:
        raise Violation(what, "a consumer protocol assignment", f"{e}; bytes {data.hex()}") from None


def sticky_metadata(ctx: WorkerContext, join: Seen) -> tuple[int, list[TP], int]:
    protos = {p.name: bytes(p.metadata) for p in join.request.protocols}
    ctx.check(PROTOCOL in protos, "protocols of the member's JoinGroup", f"one named {PROTOCOL!r}", sorted(protos))
    try:
        _, sub = SUBSCRIPTION.decode_versioned(protos[PROTOCOL])
    except DecodeError as e:
        raise Violation("metadata of protocol sticky", "a ConsumerProtocolSubscription", str(e)) from None
    if not sub.user_data:
        raise Violation("user data of the member's sticky subscription after an assignment",
                        "its previous assignment and generation", "no user data")
    return decode_user_data(bytes(sub.user_data), "user data of the sticky subscription")


def peer_protocols(owned: list[TP], generation: int | None) -> list[tuple[str, bytes]]:
    return [(PROTOCOL, subscription_bytes(owned, generation))]


async def peer_joins(ctx: WorkerContext, name: str, protocols: list[tuple[str, bytes]]) -> Any:
    peer = await ctx.member(name, session_timeout_ms=PEER_SESSION_MS, protocols=protocols)
    await peer.obtain_member_id(protocol_type=PROTOCOL_TYPE)
    return peer, peer.submit_join(protocol_type=PROTOCOL_TYPE)


async def rejoin_with(ctx: WorkerContext, w: WorkerProcess, after: Seen,
                      peers: list[tuple[str, list[tuple[str, bytes]]]]) -> tuple[Seen, Seen]:
    """Peers join (the member must rejoin); the round completes; returns the member's
    JoinGroup and SyncGroup of that round (peers' syncs checked)."""
    joined = [await peer_joins(ctx, n, p) for n, p in peers]
    if not await ctx.until_answered([p for _, p in joined], ctx.rebalance_ms):
        raise Violation("the member rejoining after peers joined", "the join phase completes", "a peer's JoinGroup is still parked")
    syncs, generation = [], None
    for peer, p in joined:
        r = peer.take_join(await p.response())
        ctx.expect_error(r, "NONE", f"{peer.name}'s JoinGroup (setup)")
        generation = r.generation_id
        syncs.append(peer.submit_sync(protocol_type=PROTOCOL_TYPE))
    # The round the peers are in: a SyncGroup of the worker's own earlier round may still come.
    sync = await ctx.worker_synced(w, after=after)
    while sync.request.generation_id != generation:
        sync = await ctx.worker_synced(w, after=sync)
    for s in syncs:
        ctx.expect_error(await s.response(), "NONE", "a peer's SyncGroup (setup)")
    join = [s for s in ctx.seen(w, "JoinGroup") if s.index < sync.index and s.ok][-1]
    return join, sync


async def first_round(ctx: WorkerContext, *, forge_empty: bool) -> tuple[WorkerProcess, Seen, Seen]:
    w = await ctx.start_worker()
    if forge_empty:
        resp = REG["SyncGroupResponse"]
        ctx.recorder.forge(w.worker_id, "SyncGroup", lambda req: resp.new(
            throttle_time_ms=0, error_code=0, protocol_type=PROTOCOL_TYPE, protocol_name=PROTOCOL,
            assignment=EMPTY_ASSIGNMENT))
    sync = await ctx.worker_synced(w)
    join = [s for s in ctx.seen(w, "JoinGroup") if s.ok][-1]
    return w, join, sync


async def leader_round(ctx: WorkerContext, peers: list[tuple[str, list[tuple[str, bytes]]]]) -> tuple[dict[str, list[TP]], dict[str, str], int]:
    """The member leads generation G alone with an empty (forged) assignment; peers join with
    crafted claims; returns (the leader's assignments by peer name, ids by name, G)."""
    w, join1, sync1 = await first_round(ctx, forge_empty=True)
    g = join1.response.generation_id
    join, sync = await rejoin_with(ctx, w, sync1, peers)
    if join.response.leader != join.response.member_id:
        raise Broken(f"the member is not the leader of the round (leader {join.response.leader!r})")
    ids = {m.name: m.member_id for m in ctx.members}
    names = {v: k for k, v in ids.items()}
    names[join.response.member_id] = "member"
    got = {names.get(a.member_id, a.member_id): decode_assignment(bytes(a.assignment), f"the leader's assignment for {a.member_id}")
           for a in sync.request.assignments}
    ctx.note(f"generation of the member's first round: {g}; leader's assignments: {got}")
    return got, ids, g


def owner_of(got: dict[str, list[TP]], tp: TP) -> str | None:
    return next((m for m, parts in got.items() if tp in parts), None)


# ---------------------------------------------------------------- what the member reports

@case("K341-01", suite=W, timeout_s=90)
async def reports_generation(ctx: WorkerContext) -> None:
    w, join1, sync1 = await first_round(ctx, forge_empty=False)
    given = decode_assignment(bytes(sync1.response.assignment), "the member's first assignment (harness)")
    join, _ = await rejoin_with(ctx, w, sync1, [("peer", peer_protocols([], None))])
    version, parts, gen = sticky_metadata(ctx, join)
    ctx.expect_equal(version, 1, "user data layout version (v1 carries the generation)")
    ctx.expect_equal(parts, given, "partitions in the user data (its last assignment)")
    ctx.expect_equal(gen, join1.response.generation_id, "generation in the user data (that of the assignment)")


@case("K341-05", suite=W, timeout_s=120)
async def generation_is_the_groups(ctx: WorkerContext) -> None:
    w, join1, sync1 = await first_round(ctx, forge_empty=False)
    join2, sync2 = await rejoin_with(ctx, w, sync1, [("peer-1", peer_protocols([], None))])
    _, _, gen1 = sticky_metadata(ctx, join2)
    ctx.expect_equal(gen1, join1.response.generation_id, "generation reported after the first round (the group's)")
    join3, _ = await rejoin_with(ctx, w, sync2, [("peer-2", peer_protocols([], None))])
    _, _, gen2 = sticky_metadata(ctx, join3)
    ctx.expect_equal(gen2, join2.response.generation_id, "generation reported after the second round (the group's)")


# ---------------------------------------------------------------- the member as leader

# Each leader case has claims that an assignment ignoring them would not reproduce: with the
# members in id order (peer-a, peer-b, then the member under test, whose ids start with its
# client id), a fresh balanced assignment gives t0-0 and t1-0 to peer-a, t0-1 and t1-1 to
# peer-b and t0-2 to the member; every expected owner below differs from that.

@case("K341-02", suite=W, timeout_s=120)
async def highest_generation_wins(ctx: WorkerContext) -> None:
    got, _, g = await leader_round(ctx, [
        ("peer-a", peer_protocols([("t0", 1), ("t0", 2)], g_new := 1)),
        ("peer-b", peer_protocols([("t0", 1), ("t1", 0)], 0))])
    ctx.check(g >= g_new, "generation of the member's first round (setup)", f">= {g_new}", g)
    ctx.expect_equal(owner_of(got, ("t0", 1)), "peer-a",
                     "owner of t0-1 (claimed by peer-a at generation 1 and by peer-b at generation 0)")
    ctx.expect_equal(owner_of(got, ("t0", 2)), "peer-a", "owner of t0-2 (claimed only by peer-a)")
    ctx.expect_equal(owner_of(got, ("t1", 0)), "peer-b", "owner of t1-0 (claimed only by peer-b)")


@case("K341-03", suite=W, timeout_s=120)
async def old_layout_is_generation_minus_one(ctx: WorkerContext) -> None:
    got, _, _ = await leader_round(ctx, [
        ("peer-a", peer_protocols([("t0", 2), ("t1", 0)], None)),   # v0: no generation
        ("peer-b", peer_protocols([("t1", 0)], 0))])
    ctx.expect_equal(owner_of(got, ("t0", 2)), "peer-a", "owner of t0-2 (claimed only by peer-a, old layout)")
    ctx.expect_equal(owner_of(got, ("t1", 0)), "peer-b",
                     "owner of t1-0 (peer-a: old layout, generation -1; peer-b: generation 0)")


@case("K341-04", suite=W, timeout_s=120)
async def generation_after_the_list_is_no_obstacle(ctx: WorkerContext) -> None:
    got, _, _ = await leader_round(ctx, [
        ("peer-a", peer_protocols([("t0", 0), ("t1", 1)], 1)),
        ("peer-b", peer_protocols([], None))])
    ctx.expect_equal(sorted(p for p in got.get("peer-a", []) if p in {("t0", 0), ("t1", 1)}), [("t0", 0), ("t1", 1)],
                     "partitions of peer-a's v1 claim (list followed by a generation) it keeps")
