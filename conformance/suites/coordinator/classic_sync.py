"""SyncGroup: errors, the leader's assignments delivered byte-exact, the sync barrier."""

from __future__ import annotations

from ...harness.cases import case
from fakebroker.connect.embedded import assignment_bytes
from ...harness.context import CoordinatorContext
from .common import distinct_previous, joined_pair, leader_and_followers, stable_group, stable_pair


@case("CLS-SYNC-01")
async def wrong_generation(ctx: CoordinatorContext) -> None:
    members, first = await stable_group(ctx, 2)
    # The previous generation is one the group answered, not generation - 1 (which is -1,
    # "no generation", on a coordinator that numbers from 0).
    gen = await ctx.join_all(members, new=False)
    previous = distinct_previous(ctx, first, gen)
    leader, (follower,) = leader_and_followers(members, gen)
    ctx.expect_error(await follower.sync(generation=gen.generation + 1), "ILLEGAL_GENERATION",
                     "SyncGroup with the next generation")
    ctx.expect_error(await follower.sync(generation=previous), "ILLEGAL_GENERATION",
                     f"SyncGroup with the previous generation ({previous}, as answered)")


@case("CLS-SYNC-02")
async def unknown_member(ctx: CoordinatorContext) -> None:
    (m,), gen = await stable_group(ctx, 1)
    ctx.expect_error(await m.sync(member_id="not-a-member"), "UNKNOWN_MEMBER_ID",
                     "SyncGroup from an unknown member id")


@case("CLS-SYNC-03")
async def sync_while_preparing(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    p = leader.submit_join()  # the leader rejoining starts a rebalance (PreparingRebalance)
    await ctx.until_answered([p], 0)
    ctx.expect_error(await follower.sync(), "REBALANCE_IN_PROGRESS",
                     "SyncGroup while the group prepares a rebalance")


@case("CLS-SYNC-04")
async def assignment_byte_exact(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2, 3)]
    gen = await ctx.join_all(members)
    given = {m.member_id: assignment_bytes(2, leader=gen.leader, assigned=[(f"conn-{m.name}", -1), (f"conn-{m.name}", 0)])
             + bytes([i, 0xff, 0x00]) for i, m in enumerate(members)}
    await ctx.sync_all(gen, members, assignments=given)
    for m in members:
        r = gen.syncs[m.name]
        ctx.expect_error(r, "NONE", f"{m.name}'s SyncGroup")
        ctx.expect_equal(bytes(r.assignment), given[m.member_id], f"assignment bytes received by {m.name}")


@case("CLS-SYNC-05")
async def follower_waits_for_leader(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await joined_pair(ctx)
    parked = follower.submit_sync()
    answered_early = await ctx.until_answered([parked], 1000, keep_alive=[leader])
    ctx.check(not answered_early, "follower SyncGroup before the leader's", "held",
              "answered before the leader synced")
    given = {follower.member_id: b"for-the-follower", leader.member_id: b"for-the-leader"}
    r = await leader.sync(assignments=given)
    ctx.expect_error(r, "NONE", "leader SyncGroup")
    ctx.check(await ctx.until_answered([parked], ctx.rebalance_ms), "follower SyncGroup once the leader synced",
              "answered", f"still parked {ctx.rebalance_ms} ms after the leader's SyncGroup was answered")
    fr = await parked.response()
    ctx.expect_error(fr, "NONE", "follower SyncGroup")
    ctx.expect_equal(bytes(fr.assignment), b"for-the-follower", "follower's assignment")


@case("CLS-SYNC-06")
async def missing_assignment_is_empty(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2)]
    gen = await ctx.join_all(members)
    leader, (follower,) = leader_and_followers(members, gen)
    await ctx.sync_all(gen, members, assignments={leader.member_id: b"only-the-leader"})
    r = gen.syncs[follower.name]
    ctx.expect_error(r, "NONE", "SyncGroup of a member the leader gave nothing")
    ctx.expect_equal(bytes(r.assignment), b"", "assignment of a member the leader gave nothing")


@case("CLS-SYNC-07")
async def resync_in_stable(ctx: CoordinatorContext) -> None:
    leader, follower, gen = await stable_pair(ctx)
    first = bytes(gen.syncs[follower.name].assignment)
    r = await follower.sync()
    ctx.expect_error(r, "NONE", "SyncGroup repeated in a Stable group")
    ctx.expect_equal(bytes(r.assignment), first, "assignment returned by the repeated SyncGroup")
    ctx.expect_error(await leader.heartbeat(), "NONE", "leader heartbeat after the repeated SyncGroup")


@case("CLS-SYNC-08")
async def inconsistent_protocol(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await joined_pair(ctx)
    ctx.expect_error(await follower.sync(protocol_type="consumer"), "INCONSISTENT_GROUP_PROTOCOL",
                     "SyncGroup v5 with protocol type consumer")
    ctx.expect_error(await follower.sync(protocol_name="not-the-selected-one"),
                     "INCONSISTENT_GROUP_PROTOCOL", "SyncGroup v5 with another protocol name")


@case("CLS-SYNC-09")
async def protocol_in_sync_response(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 2)
    for m in members:
        r = gen.syncs[m.name]
        ctx.expect_equal(r.protocol_type, "connect", f"{m.name}'s SyncGroup v5 ProtocolType")
        ctx.expect_equal(r.protocol_name, gen.protocol, f"{m.name}'s SyncGroup v5 ProtocolName")


@case("CLS-SYNC-10")
async def empty_group_id(ctx: CoordinatorContext) -> None:
    (m,), gen = await stable_group(ctx, 1)
    ctx.expect_error(await m.sync(group_id=""), "INVALID_GROUP_ID", "SyncGroup with an empty group id")
