"""Group state (DescribeGroups), protocol vote, leader election, metadata pass-through."""

from __future__ import annotations

from ...harness.cases import case
from fakebroker.connect.embedded import assignment_bytes, connect_protocols, metadata_bytes
from ...harness.context import CoordinatorContext, Generation
from .common import leader_and_followers, stable_group, stable_pair

ALL = ("sessioned", "compatible", "default")


# ---------------------------------------------------------------- state

@case("CLS-STATE-01")
async def states_of_a_new_group(ctx: CoordinatorContext) -> None:
    observer = await ctx.member("observer")
    m1 = await ctx.member("m1")
    p1 = await ctx.first_join(m1)
    await ctx.until_answered([p1], 0)
    members = [m1]
    if ctx.initial_delay_ms > 0:
        ctx.expect_equal((await observer.describe()).group_state, "PreparingRebalance",
                         "state while the first join phase runs (the initial delay)")
        ctx.check(await ctx.until_answered([p1], ctx.initial_delay_ms + ctx.rebalance_ms),
                  "first JoinGroup", "answered", "parked")
        r = m1.take_join(await p1.response())
        ctx.expect_error(r, "NONE", "m1's first JoinGroup")
        gen = Generation(r.generation_id, r.leader, r.protocol_name, {"m1": r})
    else:
        # No initial delay: m1's JoinGroup completes the first join phase at once, so the
        # group is seen in PreparingRebalance while a second member's join waits for m1.
        ctx.note("initial delay 0: PreparingRebalance observed while m2's JoinGroup waits for m1")
        ctx.check(await ctx.until_answered([p1], ctx.rebalance_ms), "m1's first JoinGroup with no initial delay",
                  "answered", f"still parked after {ctx.rebalance_ms} ms")
        m1.take_join(await p1.response())
        m2 = await ctx.member("m2")
        p2 = await ctx.first_join(m2)
        await ctx.until_answered([p2], 0)
        ctx.expect_equal((await observer.describe()).group_state, "PreparingRebalance",
                         "state while m2's first JoinGroup waits for m1 to rejoin")
        members = [m1, m2]
        gen = await ctx.join_all([m1], new=False)
        ctx.check(await ctx.until_answered([p2], ctx.rebalance_ms), "m2's JoinGroup once m1 rejoined",
                  "answered", f"still parked {ctx.rebalance_ms} ms after m1's JoinGroup was answered")
        gen.joins["m2"] = m2.take_join(await p2.response())
        ctx.expect_error(gen.joins["m2"], "NONE", "m2's first JoinGroup")
    ctx.expect_equal((await observer.describe()).group_state, "CompletingRebalance",
                     "state between JoinGroup and SyncGroup")
    gen = await ctx.sync_all(gen, members)
    for m in members:
        ctx.expect_error(gen.syncs[m.name], "NONE", f"{m.name}'s SyncGroup")
    ctx.expect_equal((await observer.describe()).group_state, "Stable", "state after the SyncGroups")


@case("CLS-STATE-02")
async def initial_delay_bounded(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2)]
    pending = []
    for m in members:
        pending.append(await ctx.first_join(m))
    bound = max(ctx.rebalance_ms, ctx.initial_delay_ms) + 1000
    ctx.check(await ctx.until_answered(pending, bound), "first join phase of a new group",
              f"complete on its own within {bound} ms", "still parked")


@case("CLS-STATE-03")
async def describe_reports_bytes(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}", protocols=connect_protocols(f"m{i}", ALL, [(f"c{i}", 0)]))
               for i in (1, 2)]
    gen = await ctx.join_all(members)
    given = {m.member_id: assignment_bytes(2, leader=gen.leader, assigned=[(f"c-{m.name}", -1)])
             for m in members}
    await ctx.sync_all(gen, members, assignments=given)
    d = await members[0].describe()
    ctx.expect_error(d, "NONE", "DescribeGroups")
    ctx.expect_equal(d.protocol_type, "connect", "DescribeGroups ProtocolType")
    ctx.expect_equal(d.protocol_data, gen.protocol, "DescribeGroups ProtocolData (selected protocol)")
    by_id = {x.member_id: x for x in d.members}
    for m in members:
        ctx.check(m.member_id in by_id, f"{m.name} in DescribeGroups", "listed", sorted(by_id))
        sent = dict(m.protocols)[gen.protocol or ""]
        ctx.expect_equal(bytes(by_id[m.member_id].member_metadata), sent, f"{m.name}'s metadata in DescribeGroups")
        ctx.expect_equal(bytes(by_id[m.member_id].member_assignment), given[m.member_id],
                         f"{m.name}'s assignment in DescribeGroups")


# ---------------------------------------------------------------- vote

@case("CLS-VOTE-01")
async def selected_supported_by_all(ctx: CoordinatorContext) -> None:
    a = await ctx.member("a", protocols=connect_protocols("a", ALL))
    b = await ctx.member("b", protocols=connect_protocols("b", ("compatible", "default")))
    gen = await ctx.join_all([a, b])
    ctx.check(gen.protocol in ("compatible", "default"), "selected protocol",
              "one of compatible, default (supported by every member)", gen.protocol)


@case("CLS-VOTE-02")
async def vote_by_preference(ctx: CoordinatorContext) -> None:
    # The first member (likely leader) prefers default; the two others prefer compatible.
    a = await ctx.member("a", protocols=connect_protocols("a", ("default", "compatible")))
    b = await ctx.member("b", protocols=connect_protocols("b", ("compatible", "default")))
    c = await ctx.member("c", protocols=connect_protocols("c", ("compatible", "default")))
    gen = await ctx.join_all([a, b, c])
    ctx.expect_equal(gen.protocol, "compatible", "protocol chosen by 2 votes for compatible against 1 for default")


@case("CLS-VOTE-03")
async def eager_member_downgrades(ctx: CoordinatorContext) -> None:
    a = await ctx.member("a", protocols=connect_protocols("a", ALL))
    b = await ctx.member("b", protocols=connect_protocols("b", ALL))
    gen = await ctx.form_group([a, b])
    ctx.expect_equal(gen.protocol, "sessioned", "protocol of two sessioned-capable workers")
    e = await ctx.member("e", protocols=connect_protocols("e", ("default",)))
    p = await ctx.first_join(e)
    await ctx.until_answered([p], 0)
    nxt = await ctx.join_all([a, b], new=False)
    e.take_join(await p.response())
    ctx.expect_equal(nxt.protocol, "default", "protocol once an eager-only worker joined")
    ctx.expect_equal(e.protocol_name, "default", "protocol in the eager worker's JoinGroup response")


@case("CLS-VOTE-04")
async def rolling_upgrade(ctx: CoordinatorContext) -> None:
    new = await ctx.member("new", protocols=connect_protocols("new", ("compatible", "default")))
    old = await ctx.member("old", protocols=connect_protocols("old", ("default",)))
    gen = await ctx.form_group([new, old])
    ctx.expect_equal(gen.protocol, "default", "protocol while one member is not upgraded")
    upgraded = connect_protocols("old", ("compatible", "default"))
    p_old = old.submit_join(protocols=upgraded)
    await ctx.until_answered([p_old], 0)
    p_new = new.submit_join()
    ctx.check(await ctx.until_answered([p_old, p_new], ctx.rebalance_ms), "rejoins after the upgrade",
              "answered", "parked")
    r = new.take_join(await p_new.response())
    old.take_join(await p_old.response())
    ctx.expect_error(r, "NONE", "JoinGroup after the upgrade")
    ctx.expect_equal(r.protocol_name, "compatible", "protocol once every member supports compatible")


# ---------------------------------------------------------------- leader

@case("CLS-LEAD-01")
async def one_leader_per_generation(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2, 3)]
    gen = await ctx.join_all(members)
    ids = {m.member_id for m in members}
    ctx.check(gen.leader in ids, "leader id", f"one of {sorted(ids)}", gen.leader)
    with_list = [m.name for m in members if gen.joins[m.name].members]
    leader_name = next(m.name for m in members if m.member_id == gen.leader)
    ctx.expect_equal(with_list, [leader_name], "members whose JoinGroup response lists the group")


@case("CLS-LEAD-02")
async def leader_lists_everyone(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}") for i in (1, 2, 3)]
    gen = await ctx.join_all(members)
    leader, _ = leader_and_followers(members, gen)
    listed = sorted(x.member_id for x in gen.joins[leader.name].members)
    ctx.expect_equal(listed, sorted(m.member_id for m in members), "member ids in the leader's JoinGroup response")


@case("CLS-LEAD-03")
async def sticky_leader(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 3)
    leader, followers = leader_and_followers(members, gen)
    nxt = await ctx.join_all([*followers, leader], new=False)
    # Proof that the answers are of the next generation, not a follower's stale one.
    ctx.check(nxt.generation > gen.generation, "generation every member was answered in",
              f"a new one (> {gen.generation})", nxt.generation)
    ctx.expect_equal(nxt.leader, leader.member_id, "leader of the next generation after everyone rejoined")


@case("CLS-LEAD-04")
async def new_leader_after_leave(ctx: CoordinatorContext) -> None:
    members, gen = await stable_group(ctx, 3)
    leader, followers = leader_and_followers(members, gen)
    ctx.expect_error(await leader.leave(), "NONE", "leader's LeaveGroup")
    for f in followers:
        ctx.expect_error(await f.heartbeat(), "REBALANCE_IN_PROGRESS", f"{f.name}'s heartbeat after the leader left")
    nxt = await ctx.join_all(followers, new=False)
    ctx.check(nxt.leader in {f.member_id for f in followers}, "leader after the old leader left",
              "one of the remaining members", nxt.leader)


# ---------------------------------------------------------------- metadata pass-through

@case("CLS-META-01")
async def metadata_byte_exact(ctx: CoordinatorContext) -> None:
    members = [await ctx.member(f"m{i}", protocols=connect_protocols(
        f"m{i}", ("sessioned",), [(f"conn{i}", -1), (f"conn{i}", 0), (f"conn{i}", 1)])) for i in (1, 2, 3)]
    gen = await ctx.join_all(members)
    leader, _ = leader_and_followers(members, gen)
    got = {x.member_id: bytes(x.metadata) for x in gen.joins[leader.name].members}
    for m in members:
        ctx.expect_equal(got.get(m.member_id), dict(m.protocols)["sessioned"], f"{m.name}'s metadata as the leader received it")


@case("CLS-META-02")
async def metadata_of_selected_protocol(ctx: CoordinatorContext) -> None:
    a = await ctx.member("a", protocols=[("sessioned", metadata_bytes(2, "http://a/", 1)),
                                         ("compatible", metadata_bytes(1, "http://a/", 1))])
    b = await ctx.member("b", protocols=[("compatible", metadata_bytes(1, "http://b/", 1))])
    gen = await ctx.join_all([a, b])
    ctx.expect_equal(gen.protocol, "compatible", "selected protocol")
    leader, _ = leader_and_followers([a, b], gen)
    got = {x.member_id: bytes(x.metadata) for x in gen.joins[leader.name].members}
    ctx.expect_equal(got.get(a.member_id), dict(a.protocols)["compatible"],
                     "a's metadata relayed for the selected protocol (compatible)")


@case("CLS-META-03")
async def new_metadata_after_rejoin(ctx: CoordinatorContext) -> None:
    leader, follower, _ = await stable_pair(ctx)
    changed = [("sessioned", metadata_bytes(2, "http://follower/", 42))]
    p = follower.submit_join(protocols=changed)
    await ctx.until_answered([p], 0)
    q = leader.submit_join()
    ctx.check(await ctx.until_answered([p, q], ctx.rebalance_ms), "rejoins", "answered", "parked")
    r = leader.take_join(await q.response())
    follower.take_join(await p.response())
    lead = r if r.members else follower.last_join
    got = {x.member_id: bytes(x.metadata) for x in lead.members}
    ctx.expect_equal(got.get(follower.member_id), changed[0][1], "follower's metadata in the next generation")
