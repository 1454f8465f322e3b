"""LeaveGroup and the Empty state."""

from __future__ import annotations

from fakebroker.protocol.error_codes import error_text

from ...harness.cases import case
from ...harness.context import CoordinatorContext
from .common import leader_and_followers, stable_group, stable_pair


@case("CLS-LEAVE-01")
async def leave_rebalances(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 3)
    leader, followers = leader_and_followers(members, gen)
    r = await followers[0].leave()
    v = followers[0].client.last.version
    ctx.expect_error(r, "NONE", f"LeaveGroup v{v} (top level)")
    if v >= 3:  # KIP-345: each member answered
        ctx.expect_equal(len(r.members), 1, f"members answered by LeaveGroup v{v}")
        ctx.expect_error(r.members[0], "NONE", f"LeaveGroup v{v} (the member)")
    ctx.expect_error(await leader.heartbeat(), "REBALANCE_IN_PROGRESS", "leader heartbeat after a member left")
    nxt = await ctx.join_all([leader, followers[1]], new=False)
    ctx.expect_equal(sorted(m.member_id for m in nxt.joins[leader.name].members),
                     sorted([leader.member_id, followers[1].member_id]),
                     "members of the generation after the leave")


@case("CLS-LEAVE-02")
async def unknown_member(ctx: CoordinatorContext) -> None:
    (m,), gen = await stable_group(ctx, 1)
    stranger = await ctx.member("stranger")
    stranger.member_id = "not-a-member"
    r1 = await stranger.leave(version=1)
    ctx.expect_error(r1, "UNKNOWN_MEMBER_ID", "LeaveGroup v1 of an unknown member (top level)")
    v = stranger.client.version("LeaveGroup")
    if v >= 3:  # KIP-345: members in a batch, each answered
        r = await stranger.leave(version=v)
        ctx.expect_equal(len(r.members), 1, f"members answered by LeaveGroup v{v}")
        ctx.expect_error(r.members[0], "UNKNOWN_MEMBER_ID", f"LeaveGroup v{v} of an unknown member (per member)")
    else:
        ctx.note(f"the broker speaks LeaveGroup up to v{v}: the per-member answer (v3+) is not checked")
    ctx.expect_error(await m.heartbeat(), "NONE", "heartbeat of the real member afterwards")


@case("CLS-LEAVE-03")
async def heartbeat_after_leave(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    ctx.expect_error(await follower.leave(), "NONE", "LeaveGroup")
    ctx.expect_error(await follower.heartbeat(), "UNKNOWN_MEMBER_ID", "heartbeat of a member that left")


@case("CLS-LEAVE-04")
async def batch_answers_each(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 3)
    leader, followers = leader_and_followers(members, gen)
    who = [(followers[0].member_id, None), ("not-a-member", None), (followers[1].member_id, None)]
    r = await leader.leave(members=who)  # at v3+ (the requirement's versions)
    ctx.expect_error(r, "NONE", f"LeaveGroup v{leader.client.last.version} batch (top level)")
    got = [(x.member_id, error_text(x.error_code)) for x in r.members]
    ctx.expect_equal(got, [(followers[0].member_id, error_text(0)), ("not-a-member", error_text(25)),
                           (followers[1].member_id, error_text(0))],
                     "per-member answers (member id, error) of the batch")


@case("CLS-LEAVE-05")
async def last_leave_empties(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 2)
    for m in members:
        ctx.expect_error(await m.leave(), "NONE", f"{m.name}'s LeaveGroup")
    await ctx.advance(ctx.rebalance_ms)  # a rebalance started by the first leave may complete
    d = await members[0].describe()
    ctx.expect_equal(d.group_state, "Empty", "DescribeGroups state after every member left")
    ctx.expect_equal(len(d.members), 0, "members listed by DescribeGroups")
