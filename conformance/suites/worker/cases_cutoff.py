"""Worker suite, a worker cut off from its coordinator (``RecordingBroker.cut_off``) while a
scripted leader and the group go on without it: the zombie rules of KIP-415's fencing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fakebroker.connect.embedded import METADATA, PROTOCOL_VERSIONS, units_of

from ...harness.cases import case
from ...harness.context import REBALANCE_IN_PROGRESS
from ...harness.outcomes import Broken, NotApplicable, Violation
from .steps import decode_assignment, peer_leads, scripted_leader, worker_runs_given_work
from ...harness.worker import WorkerContext

W = "worker"


async def until_round_begins(ctx: WorkerContext, peer: Any, within_ms: int) -> bool:
    """Heartbeat ``peer`` until the coordinator says a round began (REBALANCE_IN_PROGRESS: a
    member expired or joined); False if none within ``within_ms`` (scaled)."""
    deadline = time.monotonic() + within_ms * ctx.target.timing.wait_scale / 1000
    while (await peer.heartbeat()).error_code != REBALANCE_IN_PROGRESS:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.3)  # a heartbeat interval of the peer; the bound is the deadline
    return True


@case("CONN-INC-19", suite=W, timeout_s=240)
async def cut_off_worker_stops_and_forgets(ctx: WorkerContext) -> None:
    """A scripted leader gives the worker work; then each connection of its group member is
    closed on its next group request, past its session timeout: the coordinator expires it
    and the leader goes on alone (another worker could be given its work). The worker must
    stop that work (REST status); let back, it must rejoin reporting no allocation it no
    longer runs, and run the work the leader's first assignment gives it back at once
    (Connect 2.3 kept running: KAFKA-9184; before 2.5.1 it took the work it had stopped for
    still running and never started it again: KAFKA-9851, a case only a leader that gives
    the work back in its first round shows)."""
    if not ctx.has_rest:
        raise NotApplicable("the target has no REST API to read what the worker runs")
    w, peer, gen = await peer_leads(ctx)
    if PROTOCOL_VERSIONS[gen.protocol] == 0:
        raise NotApplicable("the group runs the eager protocol: no allocation to report")
    _, offer = scripted_leader(gen, peer)
    _, connectors, sync = await worker_runs_given_work(ctx, w, peer, gen)
    given = units_of(decode_assignment(bytes(sync.response.assignment), "the worker's assignment")[1].assignment)
    session_ms = ctx.target.timing.session_timeout_ms
    hook = ctx.recorder.cut_off(w.worker_id)
    cut_at = time.monotonic()
    ctx.note(f"cut off from the coordinator (each connection of {w.worker_id} closed on its next group request) "
             f"while running {sorted(given)}")
    try:
        if not await until_round_begins(ctx, peer, 2 * session_ms + 10_000):
            raise Broken("the coordinator never expired the cut-off worker's member (the peer's heartbeats "
                         "never said REBALANCE_IN_PROGRESS)")
        # The group goes on without it: the peer leads a generation of its own.
        alone = await ctx.join_all([peer], new=False)
        ctx.expect_error(await peer.sync(assignments={peer.member_id: offer()}), "NONE",
                         f"the peer's SyncGroup in generation {alone.generation}, without the worker (setup)")
        ctx.note(f"generation {alone.generation}: the peer alone, the worker's member expired")
        # Connector instances are the evidence: a Connect task's REST status may lag its stop
        # (fixtures/targets/apache-connect.md, as in CONN-EAGER-03); the allocation below covers all.
        stopped, now = await ctx.running_when(w, lambda r: not (r & connectors), 2 * session_ms + 10_000,
                                              keep_alive=[peer])
        # Past the session timeout in any case (well past the expiry the peer saw).
        await ctx.advance(max(0, int((cut_at + 1.5 * session_ms / 1000 - time.monotonic()) * 1000)),
                          keep_alive=[peer])
    finally:
        ctx.recorder.hooks.remove(hook)
    back_at = time.monotonic()
    ctx.note(f"let back after {back_at - cut_at:.1f} s")
    ctx.check(stopped, f"connectors the worker runs once cut off from its coordinator past its session timeout "
              f"({session_ms} ms; REST status)", "none", f"{sorted(now & connectors)} RUNNING on it")
    # Back, it joins as a new member (its old one expired): MEMBER_ID_REQUIRED, then a round
    # the peer, still leading, completes with it.
    await ctx.next_request(w, "JoinGroup", within_ms=60_000, keep_alive=[peer],
                           where=lambda s: s.t_request > back_at and s.answered and s.response.error_code == 79,
                           what="the worker's JoinGroup once let back")
    if not await until_round_begins(ctx, peer, 2 * session_ms):
        raise Violation("the round the worker's return starts (setup)", "the peer told REBALANCE_IN_PROGRESS",
                        "its heartbeats kept succeeding")
    back = await ctx.join_all([peer], new=False)
    if back.leader != peer.member_id:
        raise Violation("leader once the worker returned (harness setup)", peer.member_id, back.leader)
    wid, offer = scripted_leader(back, peer)
    worker = next(m for m in back.joins[peer.name].members if m.member_id == wid)
    v, md = METADATA.decode_versioned(bytes(worker.metadata))
    stale = (units_of(decode_assignment(bytes(md.allocation), "allocation")[1].assignment)
             if v >= 1 and md.allocation else set())
    ctx.check(not stale, f"allocation the worker reports as it rejoins ({back.protocol}), having stopped its work",
              "none", sorted(stale))
    # The leader's first assignment gives it all it ran before: it must start it again, not
    # take it for still running.
    ctx.expect_error(await peer.sync(assignments={peer.member_id: offer(), wid: offer(assigned=given)}), "NONE",
                     f"the peer's SyncGroup in generation {back.generation} (setup)")
    await ctx.worker_synced(w, after=sync, keep_alive=[peer])
    ok, now = await ctx.running_when(w, lambda r: connectors <= r, 30_000, keep_alive=[peer])
    ctx.check(ok, f"connectors the worker runs once the first assignment after the cut-off (generation "
              f"{back.generation}) gives back all it ran (REST status)", f"{sorted(connectors)} RUNNING on it",
              f"{sorted(now & connectors)} RUNNING; {ctx.where_units_are(w, connectors - now)}")
