"""Heartbeat: errors by generation, membership and group state."""

from __future__ import annotations

from ...harness.cases import case
from ...harness.context import CoordinatorContext
from .common import distinct_previous, leader_and_followers, rebalance_round, stable_group, stable_pair


@case("CLS-HB-01")
async def wrong_generation(ctx: CoordinatorContext) -> None:
    (m,), first = await stable_group(ctx, 1)
    # The previous generation is one the group answered, not generation - 1 (which is -1,
    # "no generation", on a coordinator that numbers from 0).
    gen = await rebalance_round(ctx, [m])
    previous = distinct_previous(ctx, first, gen)
    ctx.expect_error(await m.heartbeat(generation=gen.generation + 1), "ILLEGAL_GENERATION",
                     "Heartbeat with the next generation")
    ctx.expect_error(await m.heartbeat(generation=previous), "ILLEGAL_GENERATION",
                     f"Heartbeat with the previous generation ({previous}, as answered)")


@case("CLS-HB-02")
async def preparing_rebalance(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 3)
    leader, followers = leader_and_followers(members, gen)
    p = followers[0].submit_join(protocols=[("sessioned", b"changed")])
    await ctx.until_answered([p], 0)
    for m in (leader, followers[1]):
        ctx.expect_error(await m.heartbeat(), "REBALANCE_IN_PROGRESS",
                         f"{m.name}'s heartbeat while the group prepares a rebalance")


@case("CLS-HB-03")
async def unknown_member(ctx: CoordinatorContext) -> None:
    (m,), gen = await stable_group(ctx, 1)
    ctx.expect_error(await m.heartbeat(member_id="not-a-member"), "UNKNOWN_MEMBER_ID",
                     "Heartbeat from an unknown member id")


@case("CLS-HB-04")
async def stable_ok(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 2)
    for m in members:
        ctx.expect_error(await m.heartbeat(), "NONE", f"{m.name}'s heartbeat in a Stable group")


@case("CLS-HB-05")
async def completing_rebalance_ok(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2)]
    await ctx.join_all(members)
    for m in members:
        ctx.expect_error(await m.heartbeat(), "NONE",
                         f"{m.name}'s heartbeat between JoinGroup and SyncGroup")


@case("CLS-HB-06")
async def empty_group_id(ctx: CoordinatorContext) -> None:
    (m,), gen = await stable_group(ctx, 1)
    ctx.expect_error(await m.heartbeat(group_id=""), "INVALID_GROUP_ID", "Heartbeat with an empty group id")


@case("CLS-HB-07")
async def others_told_to_rejoin(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    p = leader.submit_join(protocols=[("sessioned", b"subscription-changed")])
    await ctx.until_answered([p], 0)
    ctx.expect_error(await follower.heartbeat(), "REBALANCE_IN_PROGRESS",
                     "follower heartbeat after the leader changed its metadata")
    # ... and rejoining brings the group to a new generation with both members.
    q = follower.submit_join()
    ctx.check(await ctx.until_answered([p, q], ctx.rebalance_ms), "rejoin of both members",
              "answered", "parked")
    ctx.expect_error(follower.take_join(await q.response()), "NONE", "follower rejoin")
