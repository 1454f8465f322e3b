"""Worker suite, the steps and decoders its cases share: start the worker alone or
with a scripted peer, decode what it sends strictly, script a peer as the leader."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fakebroker.connect.embedded import ASSIGNMENT, METADATA, PROTOCOL_VERSIONS, assignment_bytes, units_of
from fakebroker.protocol import DecodeError

from ...harness.outcomes import Violation
from ...harness.worker import Seen, WorkerContext, WorkerProcess


EXPECTED_PROTOCOLS = {"eager": ["default"], "compatible": ["compatible", "default"],
                      "sessioned": ["sessioned", "compatible", "default"]}
# Connect's defaults for settings a worker's command leaves unset (CONN-CFG-*): KIP-415's
# scheduled.rebalance.max.delay.ms; connect.protocol as KIP-507 changed it (KIP-415: compatible).
CONNECT_DEFAULT_PROTOCOL = "sessioned"
CONNECT_DEFAULT_MAX_DELAY_MS = 300_000
W = "worker"
PEER_SESSION_MS = 30_000  # scripted peers outlive any scenario without heartbeating


def decode_metadata(ctx: WorkerContext, name: str, data: bytes) -> tuple[int, Any]:
    try:
        return METADATA.decode_versioned(data)
    except DecodeError as e:
        raise Violation(f"worker metadata for protocol {name}", "strictly decodable Connect metadata", str(e)) from None


def offered_metadata(ctx: WorkerContext, join_request: Any) -> list[tuple[str, int, Any]]:
    """Each protocol a JoinGroup request offers: its name, its metadata's version and the
    metadata itself, strictly decoded."""
    return [(p.name, *decode_metadata(ctx, p.name, bytes(p.metadata))) for p in join_request.protocols]


async def first_join(ctx: WorkerContext, **start: Any) -> tuple[WorkerProcess, Seen]:
    """Start the worker (``start``: as ``ctx.start_worker``) and see its first JoinGroup."""
    w = await ctx.start_worker(**start)
    return w, await ctx.next_request(w, "JoinGroup")


def decode_assignment(data: bytes, what: str) -> tuple[int, Any]:
    try:
        return ASSIGNMENT.decode_versioned(data)
    except DecodeError as e:
        raise Violation(what, "a strictly decodable Connect assignment", str(e)) from None


def expect_layout(ctx: WorkerContext, version: int, protocol: str, what: str) -> None:
    """KIP-415 (Public Interfaces; ``connect.protocol``): ``default`` is protocol version 0,
    the incremental cooperative protocols are version 1 or higher. It pins no header version
    per protocol name: Apache's leaders wrote 1 under ``sessioned`` until 3.3.0 and every
    Apache decoder takes any version >= 0, so a sessioned assignment at v1 is correct."""
    if protocol == "default":
        ctx.expect_equal(version, 0, f"header version of the {what} (eager: version 0)")
    else:
        ctx.check(version >= 1, f"header version of the {what}",
                  "1 or higher (the incremental cooperative layout, with Revoked and ScheduledDelay)", version)


def leader_assignment_to(sync_request: Any, member_id: str, what: str) -> tuple[int, Any]:
    """The assignment a leader's SyncGroup request gives ``member_id``, strictly decoded; a
    leader that leaves the member out of its assignments is a violation, not a crash."""
    given = [a.assignment for a in sync_request.assignments if a.member_id == member_id]
    if not given:
        raise Violation(what, f"an entry for {member_id} in the leader's SyncGroup assignments",
                        sorted(a.member_id for a in sync_request.assignments))
    return decode_assignment(bytes(given[0]), what)


def metadata_sent(ctx: WorkerContext, join_request: Any, protocol: str) -> Any:
    """The worker's metadata for ``protocol`` in its JoinGroup request, strictly decoded."""
    data = next(p.metadata for p in join_request.protocols if p.name == protocol)
    return decode_metadata(ctx, protocol, bytes(data))[1]


def allocation_of(md: Any) -> set[tuple[str, int]]:
    """The work a worker's v1/v2 metadata says it owns (none in v0 or when null)."""
    if not getattr(md, "allocation", None):
        return set()
    return units_of(decode_assignment(bytes(md.allocation), "allocation")[1].assignment)


async def alone(ctx: WorkerContext, **kw: Any) -> tuple[WorkerProcess, Seen, Seen]:
    """The worker alone in a new group: it leads generation 1. (its JoinGroup, its SyncGroup)"""
    w = await ctx.start_worker(**kw)
    sync = await ctx.worker_synced(w)
    join = [s for s in ctx.seen(w, "JoinGroup") if s.ok][-1]
    return w, join, sync


async def worker_leads_with_peer(ctx: WorkerContext, *, peer_protocols: list[tuple[str, bytes]] | None = None,
                                 **start: Any):  # type: ignore[no-untyped-def]
    """The worker (started with ``start``, see ``start_worker``) leads; a scripted peer joins;
    returns (worker, peer, the worker's next JoinGroup and SyncGroup as leader of the
    two-member generation, the peer's SyncGroup)."""
    w, _, first_sync = await alone(ctx, **start)
    peer = await ctx.member("peer", session_timeout_ms=PEER_SESSION_MS, protocols=peer_protocols or [
        ("sessioned", METADATA.encode_versioned(METADATA.new(url="http://peer/", config_offset=1, allocation=None), 2)),
        ("compatible", METADATA.encode_versioned(METADATA.new(url="http://peer/", config_offset=1, allocation=None), 1)),
        ("default", METADATA.encode_versioned(METADATA.new(url="http://peer/", config_offset=1), 0))])
    await peer.obtain_member_id()
    ctx.recorder.sync_after_peers(w.worker_id, {peer.name})
    p = peer.submit_join()
    if not await ctx.until_answered([p], ctx.rebalance_ms):
        raise Violation("the worker rejoining after a peer joined", "the join phase completes", "the peer's JoinGroup is still parked")
    peer.take_join(await p.response())
    ps = peer.submit_sync()  # parked until the worker, leading, sends the assignments
    sync = await ctx.worker_synced(w, after=first_sync)
    psync = await ps.response()
    ctx.expect_error(psync, "NONE", "the peer's SyncGroup (setup)")
    join = [s for s in ctx.seen(w, "JoinGroup") if s.index < sync.index and s.ok][-1]
    return w, peer, join, sync, psync


async def join_and_sync(ctx: WorkerContext, peer: Any, attempts: int = 5) -> Any:
    """A scripted peer (re)joins and syncs, rejoining while the worker under test starts
    further rounds (REBALANCE_IN_PROGRESS), as any member must; returns the SyncGroup."""
    for _ in range(attempts):
        p = peer.submit_join()
        if not await ctx.until_answered([p], ctx.rebalance_ms):
            raise Violation("a round with the worker (setup)", "the peer's JoinGroup answered", "parked")
        j = peer.take_join(await p.response())
        if j.error_code != 0:
            continue
        r = await peer.submit_sync().response()
        if r.error_code == 0:
            return r
    raise Violation("a round with the worker (setup)", f"a completed join and sync within {attempts} tries",
                    "the worker kept starting new rounds")


async def peer_follows_round(ctx: WorkerContext, w: WorkerProcess, peer: Any, after: Seen) -> Any:
    """The worker rejoined after ``after`` (e.g. after releasing revoked work): the peer
    rejoins too and syncs; returns the peer's SyncGroup response (checked NONE)."""
    await ctx.next_request(w, "JoinGroup", after=after, answered=False, within_ms=5000,
                           what="the worker's rejoin")
    p = peer.submit_join()
    if not await ctx.until_answered([p], ctx.rebalance_ms):
        raise Violation("the next round (harness)", "the peer's JoinGroup answered", "parked")
    peer.take_join(await p.response())
    r = await peer.submit_sync().response()
    ctx.expect_error(r, "NONE", "the peer's SyncGroup in the next round (harness)")
    return r


async def worker_runs_given_work(ctx: WorkerContext, w: WorkerProcess, peer: Any, gen: Any,
                                 ) -> tuple[str, set[tuple[str, int]], Seen]:
    """The scripted leader of ``peer_leads`` gives the worker two connectors and a task;
    returns (the worker's member id, the connector instances, its SyncGroup) once REST
    shows them RUNNING on it (connector instances: a Connect task's status may lag its
    stop, see fixtures/targets/apache-connect.md)."""
    wid, offer = scripted_leader(gen, peer)
    give = {("conn-a", -1), ("conn-a", 0), ("conn-b", -1)}
    connectors = {u for u in give if u[1] == -1}
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(assigned=give)})
    sync = await ctx.worker_synced(w, keep_alive=[peer])
    ok, before = await ctx.running_when(w, lambda r: connectors <= r, 30_000, keep_alive=[peer])
    ctx.check(ok, "the worker running the connectors it was given (REST status, harness)",
              f"{sorted(connectors)} RUNNING on it", sorted(before))
    return wid, connectors, sync


async def peer_leads(ctx: WorkerContext, *, mode: str | None = None):  # type: ignore[no-untyped-def]
    """A scripted peer leads generation 1 alone; the worker joins; the peer (still leader)
    receives both members. Returns (worker, peer, the generation) before anyone synced."""
    peer = await ctx.member("peer", session_timeout_ms=PEER_SESSION_MS)
    await ctx.form_group([peer])
    w = await ctx.start_worker(connect_protocol=mode)
    await ctx.next_request(w, "JoinGroup", where=lambda s: s.answered and s.response.error_code == 79, within_ms=20_000)
    hb_deadline = 2 * ctx.target.timing.session_timeout_ms
    r = await peer.heartbeat()
    waited = 0
    while r.error_code == 0 and waited < hb_deadline:
        await ctx.advance(200)
        waited += 200
        r = await peer.heartbeat()
    ctx.expect_error(r, "REBALANCE_IN_PROGRESS", "peer heartbeat once the worker joined (harness)")
    gen = await ctx.join_all([peer], new=False)
    if gen.leader != peer.member_id:
        raise Violation("leader after the worker joined (harness setup)", peer.member_id, gen.leader)
    return w, peer, gen


def scripted_leader(gen: Any, peer: Any, version: int | None = None) -> tuple[str, Callable[..., bytes]]:
    """(the worker's member id, ``offer(**kw)``: an assignment from the peer as leader, at
    ``version``, by default the generation's protocol's).

    A truthful leader's assignment carries a config offset the members can reach: the
    peer uses the one the worker reported in its metadata (a real worker whose config log
    is behind the assignment's offset reads to it, and forces a rebalance if it cannot)."""
    worker = next(m for m in gen.joins[peer.name].members if m.member_id != peer.member_id)
    _, md = METADATA.decode_versioned(bytes(worker.metadata))
    version = PROTOCOL_VERSIONS[gen.protocol] if version is None else version
    return worker.member_id, functools.partial(assignment_bytes, version, leader=peer.member_id,
                                               config_offset=md.config_offset)
