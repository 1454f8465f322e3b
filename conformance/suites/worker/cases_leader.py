"""Worker suite, the worker as KIP-415 leader among truthful scripted workers (``peers.py``):
who owns what, the scheduled delay when a worker leaves or returns, and balancing."""

from __future__ import annotations

import asyncio
import time

from ...harness.cases import case
from fakebroker.connect.embedded import PROTOCOL_VERSIONS, units_of
from ...harness.outcomes import Broken, NotApplicable, Violation
from ...harness.worker import WorkerContext, WorkerProcess
from ...invariants.balanced import spreads
from .peers import (Lead, Peer, Round, decode_assignment, lead_alone, play_round, second_owners, settle, unit_names,
                    until_settled)

W = "worker"


# ---------------------------------------------------------------- ownership

@case("CONN-ASSIGN-08", suite=W, timeout_s=120)
async def no_second_owner(ctx: WorkerContext) -> None:
    """The worker leads but owns nothing (its first assignment is answered empty); peers
    report work, two of them the same task; the leader runs with no scheduled delay, so
    work it wrongly thinks is free is handed out at once."""
    w, lead = await lead_alone(ctx, owning_nothing=True, scheduled_rebalance_delay_ms=0)
    if PROTOCOL_VERSIONS[lead.protocol] == 0:
        raise NotApplicable("the group runs the eager protocol: members report no allocations")
    one = {("conn-a", -1), ("conn-a", 0)}
    two = {("conn-a", 0), ("conn-b", -1), ("conn-b", 0)}
    peers = [await Peer.join(ctx, "p1", lead, one), await Peer.join(ctx, "p2", lead, two)]
    r = await play_round(ctx, w, peers, lead.sync, wait_for_worker=False)
    bad = second_owners(r)
    ctx.check(not bad, "the leader's assignments when peers report work (conn-a task 0 by two of them)",
              "no unit assigned while another member owns it, none left with two members", bad)


@case("CONN-ASSIGN-09", suite=W, timeout_s=120)
async def leader_behind_sends_config_mismatch(ctx: WorkerContext) -> None:
    w, lead = await lead_alone(ctx)
    ahead = Peer(await ctx.member("ahead", session_timeout_ms=30_000), lead.protocol, lead.config_offset + 1000)
    await ahead.member.obtain_member_id(protocols=ahead.protocols())
    ctx.note(f"the peer reports config offset {ahead.config_offset}; the worker reported {lead.config_offset}")
    p = ahead.submit_join()
    if not await ctx.until_answered([p], ctx.rebalance_ms):
        raise Violation("the round with a peer ahead (setup)", "the peer's JoinGroup answered", "parked")
    ctx.expect_error(ahead.member.take_join(await p.response()), "NONE", "the peer's JoinGroup (setup)")
    s = ahead.member.submit_sync()
    sync = await ctx.worker_synced(w, after=lead.sync)
    await s.response()
    errors = {a.member_id: decode_assignment(bytes(a.assignment), f"the assignment for {a.member_id}")[1].error
              for a in sync.request.assignments}
    ctx.check(errors and all(e == 1 for e in errors.values()),
              "the leader's assignments when a member's config offset is ahead of its own",
              "error 1 (CONFIG_MISMATCH) for every member", errors)


# ---------------------------------------------------------------- balancing

async def grown_group(ctx: WorkerContext, names: tuple[str, ...] = ("p1", "p2"), **kw: object,
                      ) -> tuple[WorkerProcess, Lead, list[Peer], list[Round]]:
    """The worker leads alone, then peers join together; rounds until it revokes nothing."""
    w, lead = await lead_alone(ctx, **kw)
    if PROTOCOL_VERSIONS[lead.protocol] == 0:
        raise NotApplicable("the group runs the eager protocol (the case needs v1/v2)")
    peers = [await Peer.join(ctx, n, lead) for n in names]
    return w, lead, peers, await settle(ctx, w, peers, lead.sync)


@case("CONN-INC-13", suite=W, timeout_s=180)
async def balances_several_joiners(ctx: WorkerContext) -> None:
    w, lead, peers, rounds = await grown_group(ctx)
    n, total = len(peers) + 1, len(lead.all_units)
    first = len(rounds[0].revoked)
    low, high = (n - 1) * (total // n), total - total // n
    ctx.check(low <= first <= high, f"units the leader revokes when {n - 1} workers join a worker owning all {total}",
              f"just enough to balance: between {low} and {high}", first)
    for i, r in enumerate(rounds):
        ctx.check(set(r.delays.values()) == {0}, f"ScheduledDelay in balancing round {i + 1}", "0 for every member",
                  r.delays)
    final = rounds[-1].after
    held = [u for units in final.values() for u in units]
    ctx.check(sorted(held) == sorted(lead.all_units), "work once the group converged (no delay pending)",
              f"every unit exactly once: {sorted(lead.all_units)}", sorted(held))
    sizes = sorted(len(u) for u in final.values())
    ctx.check(sizes[-1] - sizes[0] <= 2, "work per member once the group converged",
              "balanced (connectors and tasks each within one)", {m: sorted(u) for m, u in final.items()})


# ---------------------------------------------------------------- a worker leaves

async def peer_left(ctx: WorkerContext, delay_ms: int) -> tuple[WorkerProcess, Lead, list[Peer], Peer, Round, float]:
    """A converged group of the worker and two peers; the peer with the most work leaves;
    the round that follows. Returns (worker, lead, remaining peers, the one that left,
    that round, when it left)."""
    w, lead, peers, rounds = await grown_group(ctx, scheduled_rebalance_delay_ms=delay_ms)
    gone = max(peers, key=lambda p: (len(p.owned), p.name))
    rest = [p for p in peers if p is not gone]
    left_at = time.monotonic()
    ctx.expect_error(await gone.member.leave(), "NONE", f"{gone.name}'s LeaveGroup (setup)")
    ctx.note(f"{gone.name} left owning {sorted(gone.owned)}")
    r = await play_round(ctx, w, rest, rounds[-1].sync)
    lost = gone.owned
    ctx.check(not (lost & {u for a in r.given.values() for u in units_of(a.assignment)}) and
              min(r.delays.values()) > 0,
              "the round after a worker left (setup: a delay starts)",
              f"its work {sorted(lost)} held back with a ScheduledDelay > 0", r.delays)
    return w, lead, rest, gone, r, left_at


@case("CONN-INC-12", suite=W, timeout_s=180)
async def delay_expiry_spreads_lost_work(ctx: WorkerContext) -> None:
    delay = ctx.target.timing.scheduled_rebalance_delay_ms
    w, lead, rest, gone, r1, left_at = await peer_left(ctx, delay)
    d = max(r1.delays.values())
    r2 = await play_round(ctx, w, rest, r1.sync, within_ms=d + 20_000)
    waited = (r2.t - r1.t) * 1000
    slack = 3000 * ctx.target.timing.wait_scale
    ctx.check(0.9 * d - 200 <= waited <= d + slack, "time from the delay's start to the next round",
              f"about the delay {d} ms (within [{0.9 * d - 200:.0f}, {d + slack:.0f}])", f"{waited:.0f} ms")
    ctx.check(set(r2.delays.values()) == {0}, "ScheduledDelay once the delay expired", "0 for every member", r2.delays)
    given = {u for a in r2.given.values() for u in units_of(a.assignment)}
    ctx.check(gone.owned <= given, "work of the departed worker once the delay expired",
              f"assigned: {sorted(gone.owned)}", sorted(given))
    sizes = {m: len(u) for m, u in r2.after.items()}
    ctx.check(max(sizes.values()) - min(sizes.values()) <= 2, "work per remaining worker after the reassignment",
              "spread (balanced within one connector and one task)", {m: sorted(u) for m, u in r2.after.items()})


@case("CONN-INC-11", suite=W, timeout_s=180)
async def remaining_delay_on_return(ctx: WorkerContext) -> None:
    delay = max(8000, ctx.target.timing.scheduled_rebalance_delay_ms)
    w, lead, rest, gone, r1, _ = await peer_left(ctx, delay)
    d = max(r1.delays.values())
    await asyncio.sleep(0.35 * d / 1000)  # the returning worker comes back well within the delay
    back = await Peer.join(ctx, "back", lead)
    r2 = await play_round(ctx, w, rest + [back], r1.sync, wait_for_worker=False)
    elapsed = (r2.t - r1.t) * 1000
    if elapsed >= d:
        raise Broken(f"the return round came {elapsed:.0f} ms after the delay began, past the delay {d} ms")
    expected = d - elapsed
    tolerance = 500 + 0.1 * d
    ctx.check(len(set(r2.delays.values())) == 1, "ScheduledDelay of each member when a worker returns",
              "the same for every member", r2.delays)
    got = next(iter(r2.delays.values()))
    ctx.check(abs(got - expected) <= tolerance, "ScheduledDelay when a worker returns within the delay",
              f"the remaining delay, about {d} - {elapsed:.0f} = {expected:.0f} ms (±{tolerance:.0f})", got)
    given = r2.given.get(back.member.member_id)
    if given is None:  # a leader that leaves a member out: a violation, not a harness crash
        raise Violation("the leader's assignments in the round the returning worker joined",
                        f"an entry for {back.member.member_id}", sorted(r2.given))
    early = units_of(given.assignment)
    ctx.check(not early, "work given to the returning worker before the remaining delay ends", "none",
              sorted(early))


# ---------------------------------------------------------------- rounds Connect got wrong

def _settled_work(ctx: WorkerContext, final: Round, what: str) -> None:
    """The settled assignment is balanced (conformance.invariants.balanced, the one definition)."""
    work = {m: unit_names(u) for m, u in final.after.items()}
    spread = spreads(work)
    ctx.check(spread is None, what, "balanced: work within one per member, or connectors and tasks each within one",
              spread)


async def peer_joined(ctx: WorkerContext, **kw: object) -> tuple[WorkerProcess, Lead, Peer, Round]:
    """The worker leads alone, p1 joins: the round in which the worker revokes work for p1."""
    w, lead = await lead_alone(ctx, **kw)
    if PROTOCOL_VERSIONS[lead.protocol] == 0:
        raise NotApplicable("the group runs the eager protocol (the case needs v1/v2)")
    p1 = await Peer.join(ctx, "p1", lead)
    r1 = await play_round(ctx, w, [p1], lead.sync, wait_for_worker=False)
    if not r1.revoked:
        raise Violation("the round p1 joined (setup)", "the leader revokes work for p1", "nothing revoked")
    return w, lead, p1, r1


@case("CONN-INC-16", suite=W, timeout_s=240)
async def join_after_revoking_round(ctx: WorkerContext) -> None:
    """p1 joins and the worker revokes work for it; p2 joins before the follow-up round. The
    leader must go on balancing (Connect before 3.4.0 never revoked in two rounds in a row and
    left p2 idle or the group unbalanced: KAFKA-12495)."""
    w, lead, p1, r1 = await peer_joined(ctx)
    p2 = await Peer.join(ctx, "p2", lead)  # its join opens the follow-up round before p1 rejoins
    rounds = await until_settled(ctx, w, [p2, p1], [r1, await play_round(ctx, w, [p2, p1], r1.sync,
                                                                          wait_for_worker=False)])
    final = rounds[-1]
    ctx.check(bool(p2.owned), "work of p2, which joined in the round right after a revoking round, once the group "
              "settled", "some", {p.name: sorted(p.owned) for p in (p1, p2)})
    _settled_work(ctx, final, "work per member once the group settled after p2's join")


@case("CONN-INC-17", suite=W, timeout_s=240)
async def no_delay_departure(ctx: WorkerContext) -> None:
    """scheduled.rebalance.max.delay.ms 0; the peer with the most work leaves. Its work must be
    given out by the round its departure starts (or that round's follow-ups), never left
    unassigned under ScheduledDelay 0, which starts no later round (Connect 3.3-3.5.1, 3.6.0:
    KAFKA-15693)."""
    w, lead, peers, rounds = await grown_group(ctx, scheduled_rebalance_delay_ms=0)
    gone = max(peers, key=lambda p: (len(p.owned), p.name))
    rest = [p for p in peers if p is not gone]
    ctx.expect_error(await gone.member.leave(), "NONE", f"{gone.name}'s LeaveGroup (setup)")
    ctx.note(f"{gone.name} left owning {sorted(gone.owned)}")
    after = await until_settled(ctx, w, rest, [await play_round(ctx, w, rest, rounds[-1].sync)])
    held = set().union(*after[-1].after.values())
    ctx.check(gone.owned <= held, f"work of {gone.name} once the group settled (no delay configured)",
              f"given out: {sorted(gone.owned)}", f"{sorted(gone.owned - held)} unassigned, ScheduledDelay "
              f"{after[-1].delays}")


@case("CONN-INC-18", suite=W, timeout_s=240)
async def missed_assignment_reassigned(ctx: WorkerContext) -> None:
    """p1 joins and, in the follow-up round, never syncs: the work the leader gave it never
    reached it. p2's join starts the next round, p1 rejoins reporting what it really owns. No
    member left, so the leader gives the missing work out at once: no ScheduledDelay (Connect
    before 2.5.1 held it back for scheduled.rebalance.max.delay.ms, for ever with 0: KAFKA-9848)."""
    w, lead, p1, r1 = await peer_joined(ctx, scheduled_rebalance_delay_ms=max(
        10_000, ctx.target.timing.scheduled_rebalance_delay_ms))
    # The follow-up round (p1 rejoins once the worker has: the round is open), but p1 never
    # sends its SyncGroup.
    await ctx.next_request(w, "JoinGroup", after=r1.sync, answered=False, what="the worker's rejoin after revoking",
                           keep_alive=[p1.member])
    j = p1.submit_join()
    if not await ctx.until_answered([j], ctx.rebalance_ms):
        raise Violation("the follow-up round (setup)", "p1's JoinGroup answered", "parked")
    ctx.expect_error(p1.member.take_join(await j.response()), "NONE", "p1's JoinGroup (setup)")
    missed_sync = await ctx.worker_synced(w, after=r1.sync)
    given = {a.member_id: decode_assignment(bytes(a.assignment), f"the assignment for {a.member_id}")[1]
             for a in missed_sync.request.assignments}
    missed = units_of(given[p1.member.member_id].assignment) if p1.member.member_id in given else set()
    if not missed:
        raise Violation("the follow-up round (setup)", "work given to p1", "none")
    ctx.note(f"p1 never syncs the round that gave it {sorted(missed)}")
    p2 = await Peer.join(ctx, "p2", lead)
    r = await play_round(ctx, w, [p2, p1], missed_sync, wait_for_worker=False)
    ctx.check(set(r.delays.values()) == {0}, "ScheduledDelay when work is missing but no member left",
              "0 for every member: the missing work is given out at once", r.delays)
    rounds = await until_settled(ctx, w, [p2, p1], [r])
    held = set().union(*rounds[-1].after.values())
    ctx.check(missed <= held, "the work p1 missed once the group settled", f"given out: {sorted(missed)}",
              f"{sorted(missed - held)} unassigned")
