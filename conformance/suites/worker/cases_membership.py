"""Worker suite, classic group membership (CLS-W-*): the worker's joins, syncs,
heartbeats and leave, and its answers to the coordinator's errors."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter

from fakebroker.connect.embedded import PROTOCOL_VERSIONS, units_of
from fakebroker.protocol.error_codes import ErrorCode

from ...harness.cases import case
from ...harness.outcomes import Broken, Violation
from ...harness.worker import Seen, WorkerContext, WorkerProcess
from .steps import W, decode_metadata, decode_assignment, allocation_of, alone, worker_leads_with_peer


@case("CLS-W-01", suite=W, timeout_s=60)
async def rejoins_with_given_id(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    first = await ctx.next_request(w, "JoinGroup", what="the worker's first JoinGroup")
    if first.version < 4 or first.request.member_id:
        raise Violation("first JoinGroup", "v4+ with an empty member id (so MEMBER_ID_REQUIRED applies)",
                        f"v{first.version}, member id {first.request.member_id!r}")
    ctx.expect_error(first.response, "MEMBER_ID_REQUIRED", "the coordinator's answer (harness check)")
    second = await ctx.next_request(w, "JoinGroup", after=first, what="the JoinGroup after MEMBER_ID_REQUIRED")
    ctx.expect_equal(second.request.member_id, first.response.member_id, "member id of the worker's second JoinGroup")


@case("CLS-W-02", suite=W, timeout_s=90)
async def rejoins_on_rebalance_in_progress(ctx: WorkerContext) -> None:
    w, _, sync1 = await alone(ctx)
    peer = await ctx.member("peer")
    await peer.obtain_member_id()
    p = peer.submit_join()
    hb = await ctx.next_request(w, "Heartbeat", after=sync1, where=lambda s: s.answered and s.response.error_code == 27,
                                within_ms=ctx.target.timing.session_timeout_ms * 2,
                                what="a heartbeat answered REBALANCE_IN_PROGRESS")
    await ctx.next_request(w, "JoinGroup", after=hb, within_ms=ctx.target.timing.session_timeout_ms,
                           answered=False, what="the worker's JoinGroup after REBALANCE_IN_PROGRESS")
    await ctx.until_answered([p], ctx.rebalance_ms)


@case("CLS-W-03", suite=W, timeout_s=60)
async def syncs_after_join(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    join = await ctx.next_request(w, "JoinGroup", where=lambda s: s.ok,
                                  what="a successful JoinGroup")
    sync = await ctx.next_request(w, "SyncGroup", after=join, what="SyncGroup after the JoinGroup")
    ctx.expect_equal(sync.request.generation_id, join.response.generation_id, "SyncGroup generation")
    ctx.expect_equal(sync.request.member_id, join.response.member_id, "SyncGroup member id")


@case("CLS-W-04", suite=W, timeout_s=120)
async def leader_assigns_every_member(ctx: WorkerContext) -> None:
    w, peer, join, sync, psync = await worker_leads_with_peer(ctx)
    ctx.expect_equal(join.response.leader, join.response.member_id, "leader of the two-member generation (the worker)")
    listed = sorted(m.member_id for m in join.response.members)
    given = sorted(a.member_id for a in sync.request.assignments)
    ctx.expect_equal(given, listed, "members the leader's SyncGroup assigns")


@case("CLS-W-05", suite=W, timeout_s=90)
async def heartbeats_in_time(ctx: WorkerContext) -> None:
    w, _, sync = await alone(ctx)
    session = ctx.target.timing.session_timeout_ms
    # Two session timeouts of the worker's own clock, not stretched by the target's
    # wait_scale: the window is what the check is about (nothing is waited for in it), as
    # maybe_next_request(scaled=False) keeps a window in which something must not happen.
    await asyncio.sleep(2 * session / 1000)
    beats = [s.t_request for s in ctx.seen(w, "Heartbeat") if s.index > sync.index]
    points = [sync.t_response] + beats
    gaps = [b - a for a, b in zip(points, points[1:])] or [2 * session / 1000]
    ctx.check(len(beats) >= 2 and max(gaps) * 1000 < session, "heartbeat gaps over two session timeouts",
              f"at least 2 heartbeats, every gap < {session} ms", f"{len(beats)} heartbeats, max gap {max(gaps):.2f}s")


@case("CLS-W-06", suite=W, timeout_s=60)
async def leaves_on_shutdown(ctx: WorkerContext) -> None:
    w, _, sync = await alone(ctx)
    w.proc.terminate()
    # (the worker exits, as asked: no LeaveGroup is a violation, not a broken run)
    leave = await ctx.maybe_next_request(w, "LeaveGroup", after=sync, within_ms=10_000, where=lambda s: True)
    if leave is None:
        raise Violation("LeaveGroup on shutdown", "a LeaveGroup within 10000 ms", f"none (exit code {w.proc.poll()})")
    ids = ([leave.request.member_id] if leave.version < 3 else [m.member_id for m in leave.request.members])
    ctx.expect_equal(ids, [sync.request.member_id], "member id(s) in the worker's LeaveGroup")


async def answer_next_heartbeat(ctx: WorkerContext, w: WorkerProcess, error: str, after: Seen) -> Seen:
    """The worker's next heartbeat after ``after`` is answered ``error`` by the harness (the
    coordinator never sees it); returns that heartbeat."""
    code = ErrorCode[error].value
    response = ctx.recorder.registry["HeartbeatResponse"]
    ctx.recorder.forge(w.worker_id, "Heartbeat", lambda _req: response.new(error_code=code))
    ctx.note(f"answering the worker's next Heartbeat with {error}")
    return await ctx.next_request(w, "Heartbeat", after=after, within_ms=2 * ctx.target.timing.session_timeout_ms,
                                  where=lambda s: s.answered and s.response.error_code == code,
                                  what=f"a heartbeat (to answer {error})")


async def heartbeat_answered(ctx: WorkerContext, error: str) -> tuple[WorkerProcess, Seen, Seen]:
    """The worker alone in its group; its next heartbeat is answered ``error``. Returns
    (worker, that heartbeat, the next JoinGroup)."""
    w, _, sync = await alone(ctx)
    hb = await answer_next_heartbeat(ctx, w, error, sync)
    rejoin = await ctx.next_request(w, "JoinGroup", after=hb, within_ms=ctx.target.timing.session_timeout_ms,
                                    answered=False, what=f"the worker's JoinGroup after {error}")
    return w, hb, rejoin


@case("CLS-W-07", suite=W, timeout_s=90)
async def rejoins_on_illegal_generation(ctx: WorkerContext) -> None:
    await heartbeat_answered(ctx, "ILLEGAL_GENERATION")


@case("CLS-W-08", suite=W, timeout_s=90)
async def rejoins_as_new_on_unknown_member(ctx: WorkerContext) -> None:
    _, _, rejoin = await heartbeat_answered(ctx, "UNKNOWN_MEMBER_ID")
    ctx.expect_equal(rejoin.request.member_id, "", "member id of the JoinGroup after UNKNOWN_MEMBER_ID")


def expect_reports(ctx: WorkerContext, join: Seen, owned: set[tuple[str, int]], when: str) -> None:
    """The worker's JoinGroup reports ``owned`` as its allocation (v1/v2 protocols)."""
    for p in join.request.protocols:
        if PROTOCOL_VERSIONS.get(p.name, 0) >= 1:
            md = decode_metadata(ctx, p.name, bytes(p.metadata))[1]
            ctx.expect_equal(allocation_of(md), owned, f"work the worker reports {when} ({p.name})")


RETRIABLE_COORDINATOR_ERRORS = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")
LOOKUP_AGAIN = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE")  # the coordinator moved or is gone


async def kept_membership(ctx: WorkerContext, w: WorkerProcess, member_id: str, owned: set[tuple[str, int]],
                          error: str, answered: Seen) -> Seen:
    """After ``answered`` (a request of the worker answered ``error``): it looks the coordinator
    up again when the error says so, then its next group request carries its member id and,
    when it is a JoinGroup, reports the work it owned. Returns that request."""
    session = ctx.target.timing.session_timeout_ms
    if error in LOOKUP_AGAIN:
        await ctx.next_request(w, "FindCoordinator", after=answered, within_ms=session, answered=False,
                               what=f"FindCoordinator after {error}")
    nxt = await ctx.maybe_next_request(w, "Heartbeat", after=answered, within_ms=2 * session,
                                       where=lambda s: True)
    joins = [s for s in ctx.seen(w, "JoinGroup") if s.index > answered.index]
    if joins and (nxt is None or joins[0].index < nxt.index):
        nxt = joins[0]
    if nxt is None:
        raise Violation(f"the worker after {error}", "a Heartbeat or JoinGroup", "none")
    ctx.expect_equal(nxt.request.member_id, member_id, f"member id of the worker's {nxt.api} after {error}")
    if nxt.api == "JoinGroup":
        expect_reports(ctx, nxt, owned, f"after {error}")
    return nxt


async def alone_owning(ctx: WorkerContext) -> tuple[WorkerProcess, Seen, set[tuple[str, int]], str]:
    """The worker alone in its group: (worker, its SyncGroup, the work it owns, its member id)."""
    w, _, sync = await alone(ctx)
    _, asg = decode_assignment(bytes(sync.response.assignment), "the worker's assignment")
    return w, sync, units_of(asg.assignment), sync.request.member_id


async def rejoins_as_itself(ctx: WorkerContext, w: WorkerProcess, after: Seen, member_id: str,
                            owned: set[tuple[str, int]], when: str) -> Seen:
    """The worker's next JoinGroup after ``after`` carries its member id and reports ``owned``."""
    rejoin = await ctx.next_request(w, "JoinGroup", after=after, answered=False,
                                    within_ms=ctx.target.timing.session_timeout_ms,
                                    what=f"the worker's rejoin {when}")
    ctx.expect_equal(rejoin.request.member_id, member_id, f"member id of the worker's rejoin {when}")
    expect_reports(ctx, rejoin, owned, when)
    return rejoin


@case("CLS-W-09", suite=W, timeout_s=150)
async def keeps_membership_on_heartbeat_coordinator_errors(ctx: WorkerContext) -> None:
    w, last, owned, member_id = await alone_owning(ctx)
    for error in RETRIABLE_COORDINATOR_ERRORS:
        hb = await answer_next_heartbeat(ctx, w, error, last)
        last = await kept_membership(ctx, w, member_id, owned, error, hb)
    # A rebalance now: the worker rejoins as the member it was, with the work it had.
    hb = await answer_next_heartbeat(ctx, w, "REBALANCE_IN_PROGRESS", last)
    await rejoins_as_itself(ctx, w, hb, member_id, owned, "after the coordinator errors")


@case("CLS-W-10", suite=W, timeout_s=150)
async def rejoins_as_itself_on_sync_coordinator_errors(ctx: WorkerContext) -> None:
    w, last, owned, member_id = await alone_owning(ctx)
    answer = ctx.recorder.registry["SyncGroupResponse"]
    for error in LOOKUP_AGAIN:
        # A rebalance (a heartbeat answered REBALANCE_IN_PROGRESS); the worker's SyncGroup of
        # that round is answered ``error``.
        code = ErrorCode[error].value
        ctx.recorder.forge(w.worker_id, "SyncGroup", lambda req, c=code: answer.new(
            error_code=c, protocol_type=None, protocol_name=None, assignment=b""))
        await answer_next_heartbeat(ctx, w, "REBALANCE_IN_PROGRESS", last)
        bad = await ctx.next_request(w, "SyncGroup", after=last, within_ms=3 * ctx.target.timing.session_timeout_ms,
                                     where=lambda s, c=code: s.answered and s.response.error_code == c,
                                     what=f"a SyncGroup (to answer {error})")
        ctx.note(f"answered the worker's SyncGroup with {error}")
        await ctx.next_request(w, "FindCoordinator", after=bad, within_ms=ctx.target.timing.session_timeout_ms,
                               answered=False, what=f"FindCoordinator after {error} to SyncGroup")
        rejoin = await rejoins_as_itself(ctx, w, bad, member_id, owned, f"after {error} to SyncGroup")
        last = await ctx.worker_synced(w, after=rejoin)


# Refused by authorization (CLS-W-11). Kafka's clients treat GROUP_AUTHORIZATION_FAILED as
# fatal, not retriable, and Connect 4.2.0's herder exits on it after one refused
# FindCoordinator; a worker may retry, but not faster than once per 2 s on average.
GROUP_REQUESTS = frozenset({"FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup",
                            "OffsetCommit", "OffsetFetch"})
REFUSED_WINDOW_MS = 20_000
REFUSED_MAX_REQUESTS = 10
AUTHORIZATION_REPORTED = re.compile(r"authoriz", re.IGNORECASE)  # GroupAuthorizationException, ...


def refused(s: Seen) -> bool:
    """Answered GROUP_AUTHORIZATION_FAILED (FindCoordinator v4+ answers it per key)."""
    code = ErrorCode.GROUP_AUTHORIZATION_FAILED.value
    r = s.response
    return r is not None and (getattr(r, "error_code", 0) == code
                              or any(c.error_code == code for c in getattr(r, "coordinators", None) or []))


@case("CLS-W-11", suite=W, timeout_s=120)
async def reports_refused_group(ctx: WorkerContext) -> None:
    """The coordinator's ACLs refuse the worker's group; from its first refused request on,
    the worker sends at most REFUSED_MAX_REQUESTS group requests in REFUSED_WINDOW_MS (real
    time, unscaled: a slower worker only sends fewer), and its log names the failure."""
    ctx.refuse_group()
    w = await ctx.start_worker()
    first = await ctx.maybe_next_request(w, None, within_ms=30_000,
                                         where=lambda s: s.api in GROUP_REQUESTS and refused(s))
    if first is None:
        if not w.alive():
            raise Broken(f"the worker exited ({w.proc.returncode}) before a group request; log:\n{w.log_tail()}")
        raise Violation("the worker's group requests", "one refused GROUP_AUTHORIZATION_FAILED (harness)",
                        f"none; its requests: {sorted({s.api for s in ctx.seen(w)})}")
    ctx.note(f"first refusal: {first.api} v{first.version}")
    end = first.t_request + REFUSED_WINDOW_MS / 1000

    def sent() -> list[Seen]:
        return [s for s in ctx.seen(w) if s.api in GROUP_REQUESTS and first.t_request <= s.t_request <= end]

    # Until the window ends, the bound is passed, or the worker exited (nothing more can come).
    while time.monotonic() < end and len(sent()) <= REFUSED_MAX_REQUESTS and w.alive():
        await asyncio.sleep(0.2)  # polling the recorder; the bound is the window
    requests = sent()
    exited = "" if w.alive() else f"; the worker exited with status {w.proc.returncode}"
    ctx.note(f"{len(requests)} group request(s) from the first refusal on: "
             f"{dict(Counter(s.api for s in requests))}{exited}")
    ctx.check(len(requests) <= REFUSED_MAX_REQUESTS,
              f"group requests within {REFUSED_WINDOW_MS} ms of the first GROUP_AUTHORIZATION_FAILED",
              f"at most {REFUSED_MAX_REQUESTS} (no tight retry loop)",
              f"{len(requests)} by +{requests[-1].t_request - first.t_request:.1f}s")
    line = w.log_line(AUTHORIZATION_REPORTED)
    ctx.check(line is not None, "the worker's log after its group was refused",
              f"a line naming the authorization failure (/{AUTHORIZATION_REPORTED.pattern}/i)",
              f"none{exited}; log tail:\n{w.log_tail(15)}")
    ctx.note(f"reported: {line}")
