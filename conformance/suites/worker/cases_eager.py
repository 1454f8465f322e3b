"""Worker suite, the eager protocol (CONN-EAGER-*) and the switches between it and the
incremental ones (CONN-DOWN-*, CONN-UP-*)."""

from __future__ import annotations

from fakebroker.connect.embedded import METADATA, units_of

from ...harness.cases import case
from ...harness.outcomes import Violation
from ...harness.worker import WorkerContext
from .steps import (EXPECTED_PROTOCOLS, W, PEER_SESSION_MS, decode_metadata, decode_assignment,
                    expect_layout, metadata_sent, alone, worker_leads_with_peer, join_and_sync,
                    peer_follows_round, worker_runs_given_work, peer_leads, scripted_leader)


@case("CONN-EAGER-01", suite=W, timeout_s=60)
async def eager_full_assignment(ctx: WorkerContext) -> None:
    w, join, sync = await alone(ctx, connect_protocol="eager")
    ctx.expect_equal([p.name for p in join.request.protocols], ["default"], "protocols of an eager worker")
    v, md = decode_metadata(ctx, "default", bytes(join.request.protocols[0].metadata))
    ctx.expect_equal(v, 0, "metadata version of an eager worker")
    av, asg = decode_assignment(bytes(sync.response.assignment), "eager assignment")
    ctx.expect_equal(av, 0, "assignment version under default")
    ctx.check(bool(units_of(asg.assignment)), "eager leader's own assignment", "every unit it runs", [])


@case("CONN-EAGER-02", suite=W, timeout_s=150)
async def eager_full_assignments_for_two(ctx: WorkerContext) -> None:
    w, join, sync = await alone(ctx, connect_protocol="eager")
    (a,) = sync.request.assignments
    every = units_of(decode_assignment(bytes(a.assignment), "the first leader's own assignment")[1].assignment)
    md = metadata_sent(ctx, join.request, "default")
    def eager_peer(url: str) -> list[tuple[str, bytes]]:
        return [("default", METADATA.encode_versioned(METADATA.new(url=url, config_offset=md.config_offset), 0))]
    peer = await ctx.member("peer", session_timeout_ms=PEER_SESSION_MS, protocols=eager_peer("http://peer/"))
    await peer.obtain_member_id()
    last = sync
    for rnd in (1, 2):  # the peer's join, then a round it starts again (new metadata: a new url)
        peer.protocols = eager_peer(f"http://peer-{rnd}/")
        r = await join_and_sync(ctx, peer)
        mine = await ctx.worker_synced(w, after=last, keep_alive=[peer])
        lead = [s for s in ctx.seen(w, "JoinGroup") if s.ok and s.index < mine.index][-1]
        if lead.response.leader != lead.response.member_id:
            raise Violation("leader of the two-member group (setup)", "the worker", lead.response.leader)
        shares = {x.member_id: units_of(decode_assignment(bytes(x.assignment), f"assignment for {x.member_id}")[1].assignment)
                  for x in mine.request.assignments}
        listed = sorted(u for units in shares.values() for u in units)
        ctx.expect_equal(listed, sorted(every), f"units in the eager leader's assignments, round {rnd} of two members")
        _, own = decode_assignment(bytes(mine.response.assignment), "the worker's own assignment")
        ctx.expect_equal(units_of(own.assignment), shares[lead.response.member_id],
                         f"the worker's own assignment in round {rnd} (its full work)")
        last = mine
        ctx.note(f"round {rnd}: {shares}; peer got {r.error_code}")


@case("CONN-EAGER-03", suite=W, timeout_s=180)
async def eager_stops_all_before_rejoining(ctx: WorkerContext) -> None:
    """A scripted leader ("peer") gives the worker work; a newcomer joins, so the worker
    rejoins while the peer holds the round open; before the round ends the worker runs
    none of its connectors (REST status; a Connect task's status may lag its stop, see
    fixtures/targets/apache-connect.md, so connector instances are the evidence)."""
    w, peer, gen = await peer_leads(ctx, mode="eager")
    ctx.expect_equal(gen.protocol, "default", "protocol of the group with the eager worker (harness)")
    _, connectors, sync = await worker_runs_given_work(ctx, w, peer, gen)
    fresh = await ctx.member("fresh", session_timeout_ms=PEER_SESSION_MS)
    await fresh.obtain_member_id()
    fresh.submit_join()
    rejoin = await ctx.next_request(w, "JoinGroup", after=sync, answered=False,
                                    within_ms=2 * ctx.target.timing.session_timeout_ms,
                                    what="the worker's JoinGroup once a member joined")
    ok, now = await ctx.running_when(w, lambda r: not (r & connectors), 10_000)
    ctx.check(ok, "connectors the eager worker runs while it rejoins (REST status)", "none", sorted(now & connectors))
    answered = next(s for s in ctx.seen(w, "JoinGroup") if s.index == rejoin.index).answered
    ctx.check(not answered, "the round held open by the scripted leader (harness)", "the worker's JoinGroup parked",
              "answered already")


EAGER_ONLY = [("default", METADATA.encode_versioned(METADATA.new(url="http://peer/", config_offset=1), 0))]


@case("CONN-DOWN-01", suite=W, timeout_s=120)
async def downgrade_to_v0(ctx: WorkerContext) -> None:
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx, peer_protocols=EAGER_ONLY)
    ctx.expect_equal(join.response.protocol_name, "default", "protocol once an eager peer joined (harness)")
    for a in sync.request.assignments:
        v, _ = decode_assignment(bytes(a.assignment), f"assignment for {a.member_id}")
        ctx.expect_equal(v, 0, f"version of the assignment for {a.member_id} after the downgrade")


@case("CONN-DOWN-02", suite=W, timeout_s=150)
async def downgrade_double_rebalance(ctx: WorkerContext) -> None:
    """The worker leads alone at its v1/v2 protocol (every unit its own); an eager-only peer
    joins, so the group falls back to `default`. KIP-415's one-time double rebalance: the
    leader's first v0 assignments list nothing for anyone (every member releases what it
    ran), it starts one more round itself, and that round's assignments are the regular
    eager ones, every unit once. SHOULD: the KIP describes the process, Connect 4.2.0's
    leader assigns in full at once (fixtures/targets/apache-connect.md)."""
    w, peer, join, sync, _ = await worker_leads_with_peer(ctx, peer_protocols=EAGER_ONLY)
    first = next(s for s in ctx.seen(w, "SyncGroup") if s.ok)
    every = units_of(decode_assignment(bytes(first.response.assignment), "the worker's assignment alone")[1].assignment)
    ctx.check(bool(every) and first.index < sync.index, "the worker's own v1+ assignment before the downgrade (harness)",
              "every unit, in an earlier generation", sorted(every))
    ctx.expect_equal(join.response.protocol_name, "default", "protocol once an eager peer joined (harness)")
    listed = {a.member_id: sorted(units_of(decode_assignment(bytes(a.assignment), f"assignment for {a.member_id}")[1].assignment))
              for a in sync.request.assignments}
    ctx.check(not any(listed.values()), "the leader's first assignments after the downgrade",
              "no connectors and no tasks for any member (the one-time empty round)", listed)
    await peer_follows_round(ctx, w, peer, after=sync)
    second = await ctx.worker_synced(w, after=sync, keep_alive=[peer])
    shares = {}
    for a in second.request.assignments:
        v, asg = decode_assignment(bytes(a.assignment), f"assignment for {a.member_id} in the second round")
        ctx.expect_equal(v, 0, f"version of the assignment for {a.member_id} in the second round")
        shares[a.member_id] = sorted(units_of(asg.assignment))
    ctx.check(len(second.request.assignments) == 2, "the leader's second round (harness)",
              "assignments for both members", shares)
    units = sorted(u for us in shares.values() for u in us)
    ctx.expect_equal(units, sorted(every), "units in the leader's assignments of the second round (every unit once)")


@case("CONN-DOWN-03", suite=W, timeout_s=180)
async def follower_releases_on_downgrade(ctx: WorkerContext) -> None:
    """A scripted leader ("peer") gives the worker work at its v1/v2 protocol; an eager-only
    member joins, so the group falls back to `default`, and the leader's first v0
    assignments list nothing (KIP-415's one-time empty round). The worker releases
    everything it ran: the group downgrades "with immediately release of resources upon
    joining". Connector instances are the evidence (REST status), as in CONN-EAGER-03."""
    w, peer, gen = await peer_leads(ctx)
    wid, connectors, sync = await worker_runs_given_work(ctx, w, peer, gen)
    eager = await ctx.member("eager", session_timeout_ms=PEER_SESSION_MS, protocols=EAGER_ONLY)
    await eager.obtain_member_id()
    pe = eager.submit_join()
    await ctx.next_request(w, "JoinGroup", after=sync, answered=False, within_ms=2 * ctx.target.timing.session_timeout_ms,
                           what="the worker's JoinGroup once an eager member joined")
    pp = peer.submit_join()
    if not await ctx.until_answered([pe, pp], ctx.rebalance_ms):
        raise Violation("the downgraded round (harness)", "every JoinGroup answered", "parked")
    j = peer.take_join(await pp.response())
    eager.take_join(await pe.response())
    ctx.check(j.error_code == 0 and j.protocol_name == "default" and j.leader == peer.member_id,
              "the round once the eager member joined (harness)", "protocol default, led by the scripted peer",
              f"error {j.error_code}, protocol {j.protocol_name!r}, leader {j.leader!r}")
    _, empty = scripted_leader(gen, peer, version=0)
    pes = eager.submit_sync()  # every member syncs: a missing one would start another round
    await peer.sync(assignments={m: empty() for m in (peer.member_id, wid, eager.member_id)})
    ctx.expect_error(await pes.response(), "NONE", "the eager member's SyncGroup (harness)")
    await ctx.worker_synced(w, after=sync, keep_alive=[peer, eager])
    ok, now = await ctx.running_when(w, lambda r: not (r & connectors), 10_000, keep_alive=[peer, eager])
    ctx.check(ok, "connectors the worker runs once its first v0 assignment listed none (REST status)",
              "none: all it ran under the incremental protocol released", sorted(now & connectors))


@case("CONN-UP-01", suite=W, timeout_s=150)
async def upgrade_after_eager_member_left(ctx: WorkerContext) -> None:
    """The worker leads a group that fell back to `default` (an eager-only peer); the peer
    leaves; the worker, alone, offers its full list again and leads at its preferred
    protocol with assignments of that version."""
    w, peer, join, last, psync = await worker_leads_with_peer(ctx, peer_protocols=EAGER_ONLY)
    ctx.expect_equal(join.response.protocol_name, "default", "protocol once an eager peer joined (harness)")
    ctx.expect_error(await peer.leave(), "NONE", "the eager peer's LeaveGroup (harness)")
    for _ in range(3):  # the first round the worker leads alone
        last = await ctx.worker_synced(w, after=last)
        lead = [s for s in ctx.seen(w, "JoinGroup") if s.ok and s.index < last.index][-1]
        if len(lead.response.members) == 1:
            break
    else:
        raise Violation("a round of the worker alone after the eager peer left", "within 3 rounds", "none")
    offered = [p.name for p in lead.request.protocols]
    ctx.expect_equal(offered, EXPECTED_PROTOCOLS[ctx.connect_protocol], "protocols the worker offers once the eager peer left")
    selected = lead.response.protocol_name
    ctx.expect_equal(selected, offered[0], "protocol of the group once the eager peer left (harness)")
    for a in last.request.assignments:
        v, _ = decode_assignment(bytes(a.assignment), f"assignment for {a.member_id}")
        expect_layout(ctx, v, selected, f"assignment for {a.member_id} after the upgrade")
