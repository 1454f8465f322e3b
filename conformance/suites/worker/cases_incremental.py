"""Worker suite, incremental cooperative rebalancing (KIP-415; CONN-INC-*, CONN-CFG-01):
revocations, the scheduled delay and lost work."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fakebroker.connect.embedded import PROTOCOL_VERSIONS, connect_protocols, units_of

from ...harness.cases import case
from ...harness.outcomes import NotApplicable, Violation
from ...harness.worker import WorkerContext, expected_work
from .steps import (CONNECT_DEFAULT_MAX_DELAY_MS, W, PEER_SESSION_MS, decode_assignment,
                    leader_assignment_to, metadata_sent, allocation_of, worker_leads_with_peer,
                    join_and_sync, peer_follows_round, peer_leads, scripted_leader)


@case("CONN-INC-09", suite=W, timeout_s=120)
async def balance_by_revoking(ctx: WorkerContext) -> None:
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx)
    _, asg = leader_assignment_to(sync.request, join.response.member_id, "the leader's own assignment")
    ctx.check(bool(units_of(asg.revoked)), "the leader's assignment to itself when a peer joins",
              "revokes part of its work to balance", "revokes nothing")
    # In the next round the revoked work goes to the peer.
    r = await peer_follows_round(ctx, w, peer, sync)
    _, pa = decode_assignment(bytes(r.assignment), "the peer's next assignment")
    ctx.check(units_of(pa.assignment) >= units_of(asg.revoked), "peer's assignment in the next round",
              sorted(units_of(asg.revoked)), sorted(units_of(pa.assignment)))


@case("CONN-INC-10", suite=W, timeout_s=240)
async def keeps_running_while_rejoining(ctx: WorkerContext) -> None:
    """The worker leads a stable group with a scripted peer ("slow"); a second peer joins, so
    the worker rejoins while "slow" holds the round open; meanwhile (REST) it still runs all
    it ran; after the round it runs all of it but what its own assignment revoked."""
    w, slow, join, sync, psync = await worker_leads_with_peer(ctx)
    last_sync = sync
    _, own = decode_assignment(bytes(next(a.assignment for a in sync.request.assignments
                                          if a.member_id == join.response.member_id)), "the worker's assignment")
    if units_of(own.revoked):  # the balancing round that follows a revocation (CONN-INC-09)
        await peer_follows_round(ctx, w, slow, sync)
        last_sync = await ctx.worker_synced(w, after=sync, keep_alive=[slow])
    ok, before = await ctx.running_when(w, bool, 30_000, keep_alive=[slow])
    ctx.check(ok, "the worker running part of the work once the group is stable (REST status, harness)",
              "some connector or task RUNNING on it", sorted(before))
    # The round: "fresh" joins; the worker rejoins; "slow" does not rejoin yet.
    md = metadata_sent(ctx, join.request, join.response.protocol_name)
    # A truthful newcomer: it has read the config log as far as the worker had.
    fresh = await ctx.member("fresh", session_timeout_ms=PEER_SESSION_MS,
                             protocols=connect_protocols("fresh", config_offset=md.config_offset))
    await fresh.obtain_member_id()
    pf = fresh.submit_join()
    rejoin = await ctx.next_request(w, "JoinGroup", after=last_sync, answered=False,
                                    within_ms=2 * ctx.target.timing.session_timeout_ms,
                                    what="the worker's JoinGroup once a peer joined")
    # While its JoinGroup is parked, it keeps everything running (checked for 4 s).
    end = time.monotonic() + 4.0
    while time.monotonic() < end:
        now = await ctx.running(w)
        ctx.check(now is not None and before <= now, "work the worker runs while it rejoins (REST status)",
                  f"all it ran before: {sorted(before)}",
                  f"{sorted(now)}, {ctx.where_units_are(w, before - now)}" if now is not None else "no REST answer")
        await asyncio.sleep(0.3)  # sampling a real worker's status over the window
    still_parked = not any(s.answered for s in ctx.seen(w, "JoinGroup") if s.index == rejoin.index)
    ctx.check(still_parked, "the round held open by the slow peer (harness)", "the worker's JoinGroup parked",
              "answered already")
    ps = slow.submit_join()
    if not await ctx.until_answered([pf, ps], ctx.rebalance_ms):
        raise Violation("the round (harness)", "both peers' JoinGroups answered", "parked")
    slow.take_join(await ps.response())
    fresh.take_join(await pf.response())
    syncs = [slow.submit_sync(), fresh.submit_sync()]
    mine = await ctx.worker_synced(w, after=last_sync)
    for p in syncs:
        await p.response()
    _, asg = decode_assignment(bytes(mine.response.assignment), "the worker's assignment in the round")
    keep = before - units_of(asg.revoked)
    ok, now = await ctx.running_when(w, lambda r: keep <= r, 15_000, keep_alive=[slow, fresh])
    ctx.check(ok, "work the worker runs after the round (REST status)",
              f"all it ran but what was revoked ({sorted(units_of(asg.revoked))}): {sorted(keep)}", sorted(now))


@case("CONN-INC-01", suite=W, timeout_s=150)
async def revoked_then_rejoin(ctx: WorkerContext) -> None:
    w, peer, gen = await peer_leads(ctx)
    wid, offer = scripted_leader(gen, peer)
    give = {("conn-a", -1), ("conn-a", 0)}
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(assigned=give)})
    sync1 = await ctx.worker_synced(w, keep_alive=[peer])
    if ctx.has_rest:  # what it runs, where it tells: what it was given runs
        ok, now = await ctx.running_when(w, lambda r: give <= r, 30_000, keep_alive=[peer])
        ctx.check(ok, "the worker running the work it was assigned (REST status)",
                  f"{sorted(give)} RUNNING on the worker", sorted(now))
    # Next round: the peer (leader) rejoins and revokes the connector instance from the worker
    # (a connector's REST status follows its stop; a revoked task's keeps saying RUNNING on
    # its old worker until another one starts it, see fixtures/targets/apache-connect.md).
    p = peer.submit_join()
    ok = await ctx.until_answered([p], ctx.rebalance_ms)
    ctx.check(ok, "rebalance started by the leader (harness)", "completes", "parked")
    peer.take_join(await p.response())
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(revoked={("conn-a", -1)})})
    sync2 = await ctx.worker_synced(w, after=sync1, keep_alive=[peer])
    rejoin = await ctx.next_request(w, "JoinGroup", after=sync2, within_ms=3000, answered=False,
                                    what="the worker's JoinGroup right after a revocation")
    reported = allocation_of(metadata_sent(ctx, rejoin.request, gen.protocol))
    ctx.expect_equal(reported, {("conn-a", 0)}, "allocation after releasing the revoked connector")
    if ctx.has_rest:  # (bounded below the round's rebalance timeout: the peer is not rejoining)
        ok, now = await ctx.running_when(w, lambda r: ("conn-a", -1) not in r, 6_000)
        ctx.check(ok, "the revoked connector once the worker rejoined (REST status)",
                  "conn-a no longer RUNNING on the worker", sorted(now))


@case("CONN-INC-14", suite=W, timeout_s=150)
async def single_task_revoked(ctx: WorkerContext) -> None:
    w, peer, gen = await peer_leads(ctx)
    if PROTOCOL_VERSIONS[gen.protocol] == 0:
        raise NotApplicable("the group runs the eager protocol: no revocations")
    wid, offer = scripted_leader(gen, peer)
    give = {("conn-a", -1), ("conn-a", 0), ("conn-a", 1)}
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(assigned=give)})
    sync1 = await ctx.worker_synced(w, keep_alive=[peer])
    p = peer.submit_join()
    if not await ctx.until_answered([p], ctx.rebalance_ms):
        raise Violation("rebalance started by the leader (harness)", "completes", "parked")
    peer.take_join(await p.response())
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(revoked={("conn-a", 0)})})
    sync2 = await ctx.worker_synced(w, after=sync1, keep_alive=[peer])
    rejoin = await ctx.next_request(w, "JoinGroup", after=sync2, within_ms=3000, answered=False,
                                    what="the worker's JoinGroup right after a task was revoked")
    reported = allocation_of(metadata_sent(ctx, rejoin.request, gen.protocol))
    ctx.expect_equal(reported, give - {("conn-a", 0)}, "allocation after releasing the revoked task conn-a/0")


@case("CONN-INC-02", suite=W, timeout_s=120)
async def scheduled_delay_respected(ctx: WorkerContext) -> None:
    w, peer, gen = await peer_leads(ctx)
    wid, offer = scripted_leader(gen, peer)
    delay = 3000
    await peer.sync(assignments={peer.member_id: offer(delay_ms=delay),
                                 wid: offer(assigned={("conn-b", -1)}, delay_ms=delay)})
    sync = await ctx.worker_synced(w, keep_alive=[peer])
    early = await ctx.maybe_next_request(w, "JoinGroup", after=sync, within_ms=int(delay * 0.8), keep_alive=[peer],
                                         scaled=False)
    ctx.check(early is None, f"JoinGroup within {int(delay * 0.8)} ms of a {delay} ms ScheduledDelay", "none",
              f"one after {(early.t_request - sync.t_response) * 1000:.0f} ms" if early else None)
    late = await ctx.maybe_next_request(w, "JoinGroup", after=sync, within_ms=delay + 5000, keep_alive=[peer])
    ctx.check(late is not None, "JoinGroup once the ScheduledDelay passed", f"within {delay + 5000} ms", "none")


@case("CONN-INC-03", suite=W, timeout_s=120)
async def no_rejoin_without_reason(ctx: WorkerContext) -> None:
    w, peer, gen = await peer_leads(ctx)
    wid, offer = scripted_leader(gen, peer)
    await peer.sync(assignments={peer.member_id: offer(), wid: offer(assigned={("conn-b", -1)})})
    sync = await ctx.worker_synced(w, keep_alive=[peer])
    extra = await ctx.maybe_next_request(w, "JoinGroup", after=sync, within_ms=4000, keep_alive=[peer])
    ctx.check(extra is None, "JoinGroup after an assignment with no revocation and no delay", "none within 4 s",
              "a rejoin")


@case("CONN-INC-04", suite=W, timeout_s=150)
async def delay_not_above_max(ctx: WorkerContext) -> None:
    verdict = await _peer_leaves(ctx)
    for d in verdict["delays"]:
        ctx.check(d <= ctx.target.timing.scheduled_rebalance_delay_ms, "ScheduledDelay set by the leader",
                  f"<= {ctx.target.timing.scheduled_rebalance_delay_ms}", d)


@case("CONN-CFG-01", suite=W, timeout_s=150)
async def default_max_delay(ctx: WorkerContext) -> None:
    verdict = await _peer_leaves(ctx, unset=frozenset({"scheduled_rebalance_delay_ms"}))
    first = verdict["delays"][0]
    ctx.check(0 < first <= CONNECT_DEFAULT_MAX_DELAY_MS,
              "the first ScheduledDelay after a peer left, scheduled.rebalance.max.delay.ms unset",
              f"a delay in (0, {CONNECT_DEFAULT_MAX_DELAY_MS}] ms", first)


@case("CONN-INC-05", suite=W, timeout_s=150)
async def lost_work_held_back(ctx: WorkerContext) -> None:
    verdict = await _peer_leaves(ctx)
    ctx.check(verdict["held_back"] and verdict["delays"][0] > 0, "the leader's first assignment after a peer left",
              "lost work unassigned and a ScheduledDelay > 0",
              f"assigned {sorted(verdict['first_assigned'])}, delay {verdict['delays'][0]}")


@case("CONN-INC-06", suite=W, timeout_s=150)
async def lost_work_reassigned(ctx: WorkerContext) -> None:
    verdict = await _peer_leaves(ctx, follow_delay=True)
    ctx.check(verdict["lost"] <= verdict["owned_at_end"], "work of the departed peer once the delay expired",
              f"reassigned: {sorted(verdict['lost'])}", sorted(verdict["owned_at_end"]))


@case("CONN-INC-07", suite=W, timeout_s=150)
async def bounce_within_delay(ctx: WorkerContext) -> None:
    verdict = await _peer_leaves(ctx, bounce=True)
    ctx.check(verdict["bounce_delay"] is not None and 0 < verdict["bounce_delay"] <= verdict["delays"][0],
              "ScheduledDelay when the departed worker returns within the delay",
              f"the remaining delay (0 < d' <= {verdict['delays'][0]})", verdict["bounce_delay"])
    ctx.check(verdict["lost"] <= verdict["returned_owns"], "work of the returning worker once the delay expired",
              sorted(verdict["lost"]), sorted(verdict["returned_owns"]))


async def _peer_leaves(ctx: WorkerContext, *, follow_delay: bool = False, bounce: bool = False,
                       **start: Any) -> dict[str, Any]:
    """The worker leads, a peer gets work over two rounds, then leaves."""
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx, **start)
    # The worker revoked work for the peer; in the next round the peer receives it.
    r = await peer_follows_round(ctx, w, peer, sync)
    sync2 = await ctx.worker_synced(w, after=sync)
    _, pa = decode_assignment(bytes(r.assignment), "the peer's assignment")
    lost = units_of(pa.assignment)
    if not lost:
        raise Violation("work given to the peer in the second round (setup)", "some work", "none")
    ctx.expect_error(await peer.leave(), "NONE", "the peer's LeaveGroup (harness)")
    sync3 = await ctx.worker_synced(w, after=sync2)
    _, asg = decode_assignment(bytes(sync3.response.assignment), "the worker's assignment after the peer left")
    out: dict[str, Any] = {"lost": lost, "first_assigned": units_of(asg.assignment),
                           "held_back": not (units_of(asg.assignment) & lost), "delays": [asg.scheduled_delay]}
    owned = set()
    for s in ctx.seen(w, "SyncGroup"):
        if s.ok:
            _, a = decode_assignment(bytes(s.response.assignment), "assignment")
            owned = (owned - units_of(getattr(a, "revoked", None))) | units_of(a.assignment)
    if bounce:
        offset = metadata_sent(ctx, join.request, join.response.protocol_name).config_offset
        back = await ctx.member("peer-back", session_timeout_ms=PEER_SESSION_MS,
                                protocols=connect_protocols("peer-back", config_offset=offset))
        await back.obtain_member_id()
        r = await join_and_sync(ctx, back)
        _, ba = decode_assignment(bytes(r.assignment), "the returning worker's assignment")
        out["bounce_delay"] = ba.scheduled_delay
        returned = units_of(ba.assignment)
        # After the remaining delay the leader rejoins and hands the held-back work out.
        deadline_ms = ba.scheduled_delay + 15_000
        spent = 0
        while not (lost <= returned) and spent < deadline_ms:
            hb = await back.heartbeat()
            if hb.error_code == 27:
                q = back.submit_join()
                await ctx.until_answered([q], ctx.rebalance_ms)
                back.take_join(await q.response())
                r = await back.submit_sync().response()
                if r.error_code == 0:
                    _, ba = decode_assignment(bytes(r.assignment), "the returning worker's assignment")
                    returned = (returned - units_of(ba.revoked)) | units_of(ba.assignment)
            await ctx.advance(500)
            spent += 500
        out["returned_owns"] = returned
    if follow_delay:
        later = await ctx.worker_synced(w, after=sync3, within_ms=asg.scheduled_delay + 15_000)
        _, a4 = decode_assignment(bytes(later.response.assignment), "the worker's assignment after the delay")
        out["delays"].append(a4.scheduled_delay)
        owned = (owned - units_of(getattr(a4, "revoked", None))) | units_of(a4.assignment)
    out["owned_at_end"] = owned
    return out


@case("CONN-INC-08", suite=W, timeout_s=150)
async def new_leader_assigns_at_once(ctx: WorkerContext) -> None:
    w, peer, gen = await peer_leads(ctx)
    wid, offer = scripted_leader(gen, peer)
    peer_work = {("conn-a", -1), ("conn-a", 0)}
    await peer.sync(assignments={peer.member_id: offer(assigned=peer_work), wid: offer()})
    sync = await ctx.worker_synced(w, keep_alive=[peer])
    ctx.expect_error(await peer.leave(), "NONE", "the leader peer's LeaveGroup (harness)")
    nxt = await ctx.worker_synced(w, after=sync)
    _, asg = decode_assignment(bytes(nxt.response.assignment), "the new leader's own assignment")
    ctx.expect_equal(asg.scheduled_delay, 0, "ScheduledDelay set by a new leader with no delay in progress")
    ctx.check(units_of(asg.assignment) >= (peer_work & set(_all_units(ctx))), "work of the departed leader",
              "assigned at once", sorted(units_of(asg.assignment)))


@case("CONN-INC-15", suite=W, timeout_s=150)
async def new_leader_keeps_running_delay(ctx: WorkerContext) -> None:
    """A scripted leader runs a delay (two units held back) and leaves; the worker, leading
    now, keeps the remaining delay and holds back the work it cannot account for."""
    w, peer, gen = await peer_leads(ctx)
    if PROTOCOL_VERSIONS[gen.protocol] == 0:
        raise NotApplicable("the group runs the eager protocol: no scheduled delay")
    wid, offer = scripted_leader(gen, peer)
    delay = 8000
    mine, theirs = {("conn-a", -1)}, {("conn-a", 0), ("conn-b", -1)}
    await peer.sync(assignments={peer.member_id: offer(assigned=theirs, delay_ms=delay),
                                 wid: offer(assigned=mine, delay_ms=delay)})
    sync = await ctx.worker_synced(w, keep_alive=[peer])
    await asyncio.sleep(1.0)  # a while into the delay
    ctx.expect_error(await peer.leave(), "NONE", "the leader peer's LeaveGroup (harness)")
    nxt = await ctx.worker_synced(w, after=sync)
    _, asg = leader_assignment_to(nxt.request, wid, "the new leader's own assignment")
    elapsed = (nxt.t_request - sync.t_response) * 1000
    expected = delay - elapsed
    tolerance = 500 + 0.1 * delay
    ctx.check(units_of(asg.assignment).isdisjoint(theirs), "work of the departed leader, while its delay runs",
              "held back (not assigned)", sorted(units_of(asg.assignment)))
    ctx.check(abs(asg.scheduled_delay - expected) <= tolerance, "ScheduledDelay set by the new leader",
              f"the remaining delay, about {delay} - {elapsed:.0f} = {expected:.0f} ms (±{tolerance:.0f})",
              asg.scheduled_delay)


def _all_units(ctx: WorkerContext) -> list[tuple[str, int]]:
    """The units the worker's command configures (``--connectors``), if visible: each
    connector instance (task -1) and its tasks."""
    work = expected_work(ctx.target.command or "")
    return sorted((name, task) for name, tasks in work.items() for task in range(-1, tasks))
