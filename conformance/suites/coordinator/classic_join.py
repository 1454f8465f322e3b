"""JoinGroup: member ids, session timeout bounds, group id, protocol checks, generations."""

from __future__ import annotations

from fakebroker.protocol.error_codes import error_text

from ...harness.cases import case
from ...harness.context import CoordinatorContext
from ...harness.outcomes import NotApplicable
from .common import answered_without_rebalance, joined_pair, leader_and_followers, stable_group, stable_pair


@case("CLS-JOIN-01")
async def member_id_required(ctx: CoordinatorContext) -> None:
    m = await ctx.member("m1")
    r = await m.join(member_id="")  # at v4+ (the requirement's versions)
    ctx.expect_error(r, "MEMBER_ID_REQUIRED", f"JoinGroup v{m.client.last.version} with an empty member id")
    ctx.check(bool(r.member_id), "member id handed out with MEMBER_ID_REQUIRED", "a non-empty id",
              r.member_id)


@case("CLS-JOIN-02")
async def rejoin_with_issued_id(ctx: CoordinatorContext) -> None:
    m = await ctx.member("m1")
    await m.obtain_member_id()
    issued = m.member_id
    gen = await ctx.join_all([m], new=False)
    r = gen.joins["m1"]  # join_all has checked it was admitted (error NONE)
    ctx.expect_equal(r.member_id, issued, "member id of the admitted member")
    # "Receives a generation": one of the group's, numbered from the target's first
    # (timing.first_generation: Kafka's 1); -1 is the protocol's "no generation".
    first = ctx.target.timing.first_generation
    ctx.check(r.generation_id >= first, "generation of the admitted member",
              f"a generation id (>= {first}, the target's first)", r.generation_id)


def needs_session_bounds(ctx: CoordinatorContext) -> None:
    """A coordinator declaring no session-timeout bounds (timing.session_bounds = false) has
    no bound to be below, above or at."""
    if not ctx.target.timing.session_bounds:
        raise NotApplicable("the target declares no session-timeout bounds (timing.session_bounds = false)")


@case("CLS-JOIN-03")
async def session_below_min(ctx: CoordinatorContext) -> None:
    needs_session_bounds(ctx)
    m = await ctx.member("m1")
    low = ctx.target.timing.min_session_timeout_ms - 1
    ctx.expect_error(await m.join(member_id="", session_timeout_ms=low),
                     "INVALID_SESSION_TIMEOUT", f"JoinGroup with session timeout {low} ms")


@case("CLS-JOIN-04")
async def session_above_max(ctx: CoordinatorContext) -> None:
    needs_session_bounds(ctx)
    m = await ctx.member("m1")
    high = ctx.target.timing.max_session_timeout_ms + 1
    ctx.expect_error(await m.join(member_id="", session_timeout_ms=high),
                     "INVALID_SESSION_TIMEOUT", f"JoinGroup with session timeout {high} ms")


@case("CLS-JOIN-05")
async def session_at_bounds(ctx: CoordinatorContext) -> None:
    needs_session_bounds(ctx)
    t = ctx.target.timing
    for i, session in enumerate((t.min_session_timeout_ms, t.max_session_timeout_ms)):
        # The member's name puts the session timeout into every message about its joins.
        m = await ctx.member(f"member-with-session-{session}ms", group_id=f"{ctx.group_id}-{i}",
                             session_timeout_ms=session, rebalance_timeout_ms=ctx.rebalance_ms)
        await ctx.join_all([m])  # a Violation unless MEMBER_ID_REQUIRED, then error NONE


@case("CLS-JOIN-06")
async def empty_group_id(ctx: CoordinatorContext) -> None:
    m = await ctx.member("m1")
    ctx.expect_error(await m.join(member_id="", group_id=""), "INVALID_GROUP_ID",
                     "JoinGroup with an empty group id")


@case("CLS-JOIN-07")
async def unknown_member_id(ctx: CoordinatorContext) -> None:
    await stable_group(ctx, 1)
    stranger = await ctx.member("stranger")
    ctx.expect_error(await stranger.join(member_id="stranger-not-a-member"), "UNKNOWN_MEMBER_ID",
                     "JoinGroup with a member id the group never issued")


@case("CLS-JOIN-08")
async def protocol_type_mismatch(ctx: CoordinatorContext) -> None:
    await stable_group(ctx, 1)
    other = await ctx.member("other")
    ctx.expect_error(await other.join(member_id="", protocol_type="consumer"),
                     "INCONSISTENT_GROUP_PROTOCOL", "JoinGroup with protocol type consumer into a connect group")


@case("CLS-JOIN-09")
async def no_common_protocol(ctx: CoordinatorContext) -> None:
    await stable_group(ctx, 1)
    other = await ctx.member("other", protocols=[("range", b"x")])
    ctx.expect_error(await other.join(member_id=""), "INCONSISTENT_GROUP_PROTOCOL",
                     "JoinGroup sharing no protocol with the group")


@case("CLS-JOIN-10")
async def same_generation_for_all(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2, 3)]
    gen = await ctx.join_all(members)
    seen = {(r.generation_id, r.protocol_name, r.leader) for r in gen.joins.values()}
    ctx.check(len(seen) == 1, "(generation, protocol, leader) across the members' JoinGroup responses",
              "one value", sorted(seen, key=repr))


@case("CLS-JOIN-11")
async def generation_bumps_by_one(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 2)
    leader, followers = leader_and_followers(members, gen)
    previous = gen.generation
    for _ in range(2):
        nxt = await ctx.join_all([leader, *followers], new=False)
        ctx.expect_equal(nxt.generation, previous + 1, "generation after a completed rebalance")
        await ctx.sync_all(nxt, [leader, *followers])
        previous = nxt.generation


@case("CLS-JOIN-12")
async def old_version_gets_id_directly(ctx: CoordinatorContext) -> None:
    m = await ctx.member("m1")
    gen = await ctx.join_all([m])  # at v0-3 (the requirement's versions)
    ctx.check(bool(gen.joins["m1"].member_id),
              f"member id of a JoinGroup v{m.client.last.version} without one",
              "a non-empty id (joined at once)", gen.joins["m1"].member_id)


@case("CLS-JOIN-13")
async def protocol_type_in_response(ctx: CoordinatorContext) -> None:
    m = await ctx.member("m1")
    gen = await ctx.join_all([m])  # at v7+ (the requirement's versions)
    ctx.expect_equal(gen.joins["m1"].protocol_type, "connect",
                     f"JoinGroup v{m.client.last.version} response ProtocolType")


@case("CLS-JOIN-14")
async def join_aborts_pending_sync(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await joined_pair(ctx)
    parked = follower.submit_sync()
    if await ctx.until_answered([parked], 0):
        early = (await parked.response()).error_code
        ctx.check(False, "follower SyncGroup before the leader's", "held until the leader syncs",
                  f"answered at once with {error_text(early)}")
    rejoin = leader.submit_join(protocols=[("sessioned", b"changed-metadata")])
    if not await ctx.until_answered([parked], ctx.rebalance_ms):
        ctx.check(False, "parked follower SyncGroup after the leader rejoined with new metadata",
                  "answered REBALANCE_IN_PROGRESS", f"still parked after {ctx.rebalance_ms} ms")
    ctx.expect_error(await parked.response(), "REBALANCE_IN_PROGRESS",
                     "parked follower SyncGroup after the leader rejoined with new metadata")
    again = follower.submit_join()
    await ctx.until_answered([rejoin, again], ctx.rebalance_ms)
    for m, p in ((leader, rejoin), (follower, again)):
        ctx.expect_error(m.take_join(await p.response()), "NONE", f"{m.name} rejoining after the abort")


@case("CLS-JOIN-15", timeout_s=60)
async def follower_rejoin_same_metadata(ctx: CoordinatorContext) -> None:
    leader, follower, gen = await stable_pair(ctx)
    p = follower.submit_join()
    r = await answered_without_rebalance(ctx, p, leader,
                                         "follower rejoining a Stable group with unchanged metadata")
    ctx.expect_error(r, "NONE", "follower rejoin with unchanged metadata")
    ctx.expect_equal(r.generation_id, gen.generation, "generation in that JoinGroup response")
    ctx.expect_error(await leader.heartbeat(), "NONE", "leader heartbeat after the follower's rejoin")


@case("CLS-JOIN-16")
async def leader_rejoin_forces_rebalance(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    p = leader.submit_join()
    await ctx.until_answered([p], 0)
    ctx.expect_error(await follower.heartbeat(), "REBALANCE_IN_PROGRESS",
                     "follower heartbeat after the leader rejoined with unchanged metadata")


@case("CLS-JOIN-17")
async def changed_metadata_rebalances(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    p = follower.submit_join(protocols=[("sessioned", b"new-config-offset")])
    await ctx.until_answered([p], 0)
    ctx.expect_error(await leader.heartbeat(), "REBALANCE_IN_PROGRESS",
                     "leader heartbeat after a follower rejoined with changed metadata")
