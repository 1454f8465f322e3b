"""Session and rebalance timeouts (virtual time on the builtin broker)."""

from __future__ import annotations

from ...harness.cases import case
from ...harness.context import CoordinatorContext
from .common import joined_pair, leader_and_followers, stable_group, stable_pair


@case("CLS-SESS-01")
async def silent_member_removed(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 2)
    alive, silent = members
    await ctx.advance(ctx.session_ms + 1000, keep_alive=[alive])
    ctx.expect_error(await silent.heartbeat(), "UNKNOWN_MEMBER_ID",
                     "heartbeat of a member silent for longer than its session timeout")
    ctx.expect_error(await alive.heartbeat(), "REBALANCE_IN_PROGRESS",
                     "heartbeat of the remaining member after the other expired")


@case("CLS-SESS-02")
async def heartbeats_keep_alive(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 2)
    await ctx.advance(3 * ctx.session_ms, keep_alive=members)
    for m in members:
        ctx.expect_error(await m.heartbeat(), "NONE", f"{m.name}'s heartbeat after 3 session timeouts of heartbeating")


@case("CLS-SESS-03")
async def pending_id_expires(ctx: CoordinatorContext) -> None:
    keeper = await ctx.member("keeper")
    await ctx.form_group([keeper])
    m = await ctx.member("m1")
    await m.obtain_member_id()
    await ctx.advance(ctx.session_ms + 1000, keep_alive=[keeper])
    ctx.expect_error(await m.join(), "UNKNOWN_MEMBER_ID",
                     "JoinGroup with a MEMBER_ID_REQUIRED id unused for longer than the session timeout")


@case("CLS-REB-01")
async def laggard_removed_at_rebalance_timeout(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 3)
    leader, (f1, lagging) = leader_and_followers(members, gen)
    p1 = leader.submit_join()
    await ctx.until_answered([p1], 0)
    p2 = f1.submit_join()
    ok = await ctx.until_answered([p1, p2], ctx.rebalance_ms + 2000, keep_alive=[lagging])
    ctx.check(ok, "join phase with a member that never rejoins", "completes at the rebalance timeout", "still parked")
    r = leader.take_join(await p1.response())
    f1.take_join(await p2.response())
    ctx.expect_error(r, "NONE", "leader's JoinGroup")
    ctx.expect_equal(sorted(x.member_id for x in r.members), sorted([leader.member_id, f1.member_id]),
                     "members of the generation formed at the rebalance timeout")
    ctx.expect_error(await lagging.heartbeat(), "UNKNOWN_MEMBER_ID", "heartbeat of the member that did not rejoin")


@case("CLS-REB-02")
async def missing_sync_removed(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await joined_pair(ctx)
    ctx.expect_error(await leader.sync(assignments={leader.member_id: b"x", follower.member_id: b"y"}),
                     "NONE", "leader's SyncGroup")
    await ctx.advance(ctx.rebalance_ms + 2000, keep_alive=[leader, follower])
    ctx.expect_error(await follower.heartbeat(), "UNKNOWN_MEMBER_ID",
                     "heartbeat of a member that never sent SyncGroup, after the rebalance timeout")
    ctx.expect_error(await leader.heartbeat(), "REBALANCE_IN_PROGRESS",
                     "leader heartbeat after the other member was removed")


@case("CLS-REB-03")
async def completes_when_all_rejoined(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    p1 = leader.submit_join()
    await ctx.until_answered([p1], 0)
    p2 = follower.submit_join()
    # Before the rebalance timeout could complete it: half of it, of the target's timing.
    bound = ctx.rebalance_ms // 2
    ctx.check(await ctx.until_answered([p1, p2], bound), "join phase once every member rejoined",
              f"completes within {bound} ms (the rebalance timeout is {ctx.rebalance_ms} ms)",
              f"{sum(not p.done() for p in (p1, p2))} JoinGroup(s) still parked after {bound} ms")
