"""Static membership (group.instance.id, KIP-345) as the classic coordinator keeps it and
DescribeGroups reports it."""

from __future__ import annotations

from ...harness.cases import case
from ...harness.context import CoordinatorContext
from .common import answered_without_rebalance, leader_and_followers


@case("CLS-STATIC-01")
async def static_join_without_round_trip(ctx: CoordinatorContext) -> None:
    s = await ctx.member("s1", instance_id="instance-1")
    p = s.submit_join(member_id="")
    ctx.check(await ctx.until_answered([p], ctx.initial_delay_ms + ctx.rebalance_ms),
              "static member's first JoinGroup", "answered", "parked")
    r = s.take_join(await p.response())
    ctx.expect_error(r, "NONE", "JoinGroup v9 of a static member without a member id")
    ctx.check(bool(r.member_id), "member id given to the static member", "non-empty", r.member_id)


async def _static_pair(ctx: CoordinatorContext):  # type: ignore[no-untyped-def]
    other = await ctx.member("other")
    s = await ctx.member("static", instance_id="instance-1")
    gen = await ctx.form_group([other, s])
    return other, s, gen


@case("CLS-STATIC-02")
async def restart_fences_old_id(ctx: CoordinatorContext) -> None:
    other, s, gen = await _static_pair(ctx)
    old_id = s.member_id
    again = await ctx.member("static-restarted", instance_id="instance-1", protocols=s.protocols)
    p = again.submit_join(member_id="")
    ctx.check(await ctx.until_answered([p], ctx.rebalance_ms, keep_alive=[other]),
              "JoinGroup of the restarted static member", "answered", "parked")
    r = again.take_join(await p.response())
    ctx.expect_error(r, "NONE", "JoinGroup of the restarted static member")
    ctx.check(r.member_id != old_id and bool(r.member_id), "member id after the restart",
              f"a new id (not {old_id!r})", r.member_id)
    ctx.expect_error(await s.heartbeat(member_id=old_id, generation=gen.generation), "FENCED_INSTANCE_ID",
                     "Heartbeat with the replaced member id and the instance id")


@case("CLS-STATIC-03")
async def restart_without_rebalance(ctx: CoordinatorContext) -> None:
    other, s, gen = await _static_pair(ctx)
    leader, _ = leader_and_followers([other, s], gen)
    if leader is s:
        ctx.note("the static member leads; the case restarts it as a follower is not possible here")
    again = await ctx.member("static-restarted", instance_id="instance-1", protocols=s.protocols)
    p = again.submit_join(member_id="")
    # No rebalance is concluded from what the other member's heartbeats answer while the
    # restarted member waits for its answer (within the rebalance timeout), not from a pause.
    r = await answered_without_rebalance(ctx, p, other, "static member restarting unchanged")
    ctx.expect_error(r, "NONE", "the restarted static member's JoinGroup")
    ctx.expect_error(await other.heartbeat(), "NONE",
                     "the other member's heartbeat after the static member restarted unchanged")


@case("CLS-STATIC-04")
async def static_leave(ctx: CoordinatorContext) -> None:
    other, s, gen = await _static_pair(ctx)
    r = await s.leave(members=[(s.member_id, "instance-1")])  # at v3+ (the requirement's versions)
    v = s.client.last.version
    ctx.expect_error(r, "NONE", f"LeaveGroup v{v} of the static member (top level)")
    ctx.expect_error(r.members[0], "NONE", f"LeaveGroup v{v} of the static member (per member)")
    ctx.expect_error(await other.heartbeat(), "REBALANCE_IN_PROGRESS",
                     "the other member's heartbeat after the static member left")


@case("CLS-DESC-06")
async def describe_reports_instance_ids(ctx: CoordinatorContext) -> None:
    other, s, _ = await _static_pair(ctx)
    d = await other.describe()  # at v4+ (the requirement's versions)
    v = other.client.last.version
    ctx.expect_error(d, "NONE", f"DescribeGroups v{v}")
    by_id = {x.member_id: x for x in d.members}
    for m, want in ((s, "instance-1"), (other, None)):  # None: a dynamic member has no instance id
        ctx.check(m.member_id in by_id, f"{m.name} in DescribeGroups v{v}", "listed", sorted(by_id))
        ctx.expect_equal(by_id[m.member_id].group_instance_id, want,
                         f"{m.name}'s GroupInstanceId in DescribeGroups v{v}")
