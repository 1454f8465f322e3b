"""Worker suite, Connect's embedded protocol (CONN-PROT-*, CONN-META-*, CONN-ASSIGN-*,
CONN-CFG-02): the protocols the worker offers, its metadata and the assignments it writes."""

from __future__ import annotations

from fakebroker.connect.embedded import PROTOCOL_VERSIONS, units_of

from ...harness.cases import case
from ...harness.worker import WorkerContext
from .steps import (EXPECTED_PROTOCOLS, CONNECT_DEFAULT_PROTOCOL, W, PEER_SESSION_MS, first_join, offered_metadata,
                    decode_assignment, expect_layout, leader_assignment_to, metadata_sent, allocation_of,
                    alone, worker_leads_with_peer, peer_leads, scripted_leader)


@case("CONN-PROT-01", suite=W, timeout_s=60)
async def protocol_type_connect(ctx: WorkerContext) -> None:
    _, join = await first_join(ctx)
    ctx.expect_equal(join.request.protocol_type, "connect", "JoinGroup ProtocolType")


@case("CONN-PROT-02", suite=W, timeout_s=120)
async def protocol_list_by_mode(ctx: WorkerContext) -> None:
    # The runner runs this case once per claimed protocol, the worker started at it.
    mode = ctx.connect_protocol
    _, join = await first_join(ctx)
    ctx.expect_equal([p.name for p in join.request.protocols], EXPECTED_PROTOCOLS[mode],
                     f"JoinGroup protocols with connect.protocol={mode}")


@case("CONN-CFG-02", suite=W, timeout_s=60)
async def default_protocol_list(ctx: WorkerContext) -> None:
    _, join = await first_join(ctx, unset=frozenset({"connect_protocol"}))
    ctx.expect_equal([p.name for p in join.request.protocols], EXPECTED_PROTOCOLS[CONNECT_DEFAULT_PROTOCOL],
                     "JoinGroup protocols with connect.protocol unset")


@case("CONN-PROT-03", suite=W, timeout_s=60)
async def metadata_version_per_protocol(ctx: WorkerContext) -> None:
    _, join = await first_join(ctx)
    for name, version, _ in offered_metadata(ctx, join.request):
        ctx.expect_equal(version, PROTOCOL_VERSIONS.get(name), f"metadata version for protocol {name}")


@case("CONN-META-01", suite=W, timeout_s=60)
async def metadata_strict(ctx: WorkerContext) -> None:
    _, join = await first_join(ctx)
    for name, version, md in offered_metadata(ctx, join.request):
        ctx.check(bool(md.url), f"url in the {name} metadata", "non-empty", md.url)
        if version >= 1 and md.allocation is not None:
            decode_assignment(bytes(md.allocation), f"allocation in the {name} metadata")


@case("CONN-META-02", suite=W, timeout_s=120)
async def allocation_reports_owned(ctx: WorkerContext) -> None:
    w, first = await first_join(ctx)
    for name, v, md in offered_metadata(ctx, first.request):
        if v >= 1:
            ctx.expect_equal(md.allocation, None, f"allocation of a worker owning nothing ({name})")
    sync = await ctx.worker_synced(w)
    v, a = decode_assignment(bytes(sync.response.assignment), "the worker's assignment")
    owned = units_of(a.assignment)
    peer = await ctx.member("peer", session_timeout_ms=PEER_SESSION_MS)
    await peer.obtain_member_id()
    p = peer.submit_join()
    rejoin = await ctx.next_request(w, "JoinGroup", after=sync, within_ms=2 * ctx.target.timing.session_timeout_ms,
                                    answered=False, what="the worker's rejoin after a peer joined")
    await ctx.until_answered([p], ctx.rebalance_ms)
    for name, v, md in offered_metadata(ctx, rejoin.request):
        if v >= 1:
            ctx.expect_equal(allocation_of(md), owned, f"allocation reported in the rejoin ({name})")


@case("CONN-ASSIGN-01", suite=W, timeout_s=60)
async def assignment_strict(ctx: WorkerContext) -> None:
    w, join, sync = await alone(ctx)
    selected = join.response.protocol_name
    for a in sync.request.assignments:
        v, _ = decode_assignment(bytes(a.assignment), f"assignment for {a.member_id}")
        expect_layout(ctx, v, selected, f"assignment for {a.member_id} under protocol {selected}")


@case("CONN-ASSIGN-05", suite=W, timeout_s=60)
async def first_leader_takes_all(ctx: WorkerContext) -> None:
    w, join, sync = await alone(ctx)
    (a,) = sync.request.assignments
    v, asg = decode_assignment(bytes(a.assignment), "the first leader's own assignment")
    ctx.check(bool(units_of(asg.assignment)), "work the first worker assigns itself", "all of it (non-empty)", [])
    if v >= 1:
        ctx.expect_equal(units_of(asg.revoked), set(), "revoked in the first assignment")
        ctx.expect_equal(asg.scheduled_delay, 0, "ScheduledDelay in the first assignment")


@case("CONN-ASSIGN-06", suite=W, timeout_s=60)
async def assignment_header(ctx: WorkerContext) -> None:
    w, join, sync = await alone(ctx)
    md = metadata_sent(ctx, join.request, join.response.protocol_name)
    _, asg = decode_assignment(bytes(sync.response.assignment), "the worker's assignment")
    ctx.expect_equal(asg.leader, join.response.leader, "assignment Leader")
    ctx.expect_equal(asg.leader_url, md.url, "assignment LeaderUrl (the leader's metadata url)")
    ctx.expect_equal(asg.config_offset, md.config_offset, "assignment ConfigOffset")


@case("CONN-ASSIGN-07", suite=W, timeout_s=120)
async def rejoins_on_config_mismatch(ctx: WorkerContext) -> None:
    w, peer, gen = await peer_leads(ctx)
    wid, offer = scripted_leader(gen, peer)
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(assigned={("conn-b", -1)}, error=1)})
    sync = await ctx.worker_synced(w, keep_alive=[peer])
    await ctx.next_request(w, "JoinGroup", after=sync, answered=False, within_ms=10_000, keep_alive=[peer],
                           what="the worker's JoinGroup after an assignment with CONFIG_MISMATCH")


@case("CONN-ASSIGN-02", suite=W, timeout_s=120)
async def no_unit_twice(ctx: WorkerContext) -> None:
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx)
    seen: dict[tuple[str, int], str] = {}
    for a in sync.request.assignments:
        _, asg = decode_assignment(bytes(a.assignment), f"assignment for {a.member_id}")
        for u in units_of(asg.assignment):
            ctx.check(u not in seen, f"unit {u}", "assigned to one member", [seen.get(u), a.member_id])
            seen[u] = a.member_id


@case("CONN-ASSIGN-03", suite=W, timeout_s=120)
async def revoke_before_assign(ctx: WorkerContext) -> None:
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx)
    owned_by_leader = allocation_of(metadata_sent(ctx, join.request, join.response.protocol_name))
    _, pa = decode_assignment(bytes(psync.assignment), "the peer's assignment")
    ctx.expect_equal(units_of(pa.assignment) & owned_by_leader, set(),
                     "work given to the peer that the leader still reported owning")


@case("CONN-ASSIGN-04", suite=W, timeout_s=120)
async def only_new_work(ctx: WorkerContext) -> None:
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx)
    leader_id = join.response.member_id
    owned = allocation_of(metadata_sent(ctx, join.request, join.response.protocol_name))
    _, asg = leader_assignment_to(sync.request, leader_id, "the leader's own assignment")
    ctx.expect_equal(units_of(asg.assignment) & owned, set(), "already-owned work listed again as assigned")
