"""Worker suite, classic group behaviour and Connect's embedded protocol: what the worker
sends, observed at the fake broker, with scripted peers as the other members."""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from fakebroker.protocol import DecodeError
from fakebroker.protocol.error_codes import ErrorCode

from ...harness.cases import case
from fakebroker.connect.embedded import (ASSIGNMENT, METADATA, PROTOCOL_VERSIONS, assignment_bytes,
                                      connect_protocols, units_of)
from ...harness.outcomes import Broken, NotApplicable, Violation
from ...harness.worker import Seen, WorkerContext, WorkerProcess, expected_work

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


# ---------------------------------------------------------------- classic membership

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


# ---------------------------------------------------------------- embedded protocol

@case("CONN-PROT-01", suite=W, timeout_s=60)
async def protocol_type_connect(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    join = await ctx.next_request(w, "JoinGroup")
    ctx.expect_equal(join.request.protocol_type, "connect", "JoinGroup ProtocolType")


@case("CONN-PROT-02", suite=W, timeout_s=120)
async def protocol_list_by_mode(ctx: WorkerContext) -> None:
    # The runner runs this case once per claimed protocol, the worker started at it.
    mode = ctx.connect_protocol
    w = await ctx.start_worker()
    join = await ctx.next_request(w, "JoinGroup")
    ctx.expect_equal([p.name for p in join.request.protocols], EXPECTED_PROTOCOLS[mode],
                     f"JoinGroup protocols with connect.protocol={mode}")


@case("CONN-CFG-02", suite=W, timeout_s=60)
async def default_protocol_list(ctx: WorkerContext) -> None:
    w = await ctx.start_worker(unset=frozenset({"connect_protocol"}))
    join = await ctx.next_request(w, "JoinGroup")
    ctx.expect_equal([p.name for p in join.request.protocols], EXPECTED_PROTOCOLS[CONNECT_DEFAULT_PROTOCOL],
                     "JoinGroup protocols with connect.protocol unset")


@case("CONN-PROT-03", suite=W, timeout_s=60)
async def metadata_version_per_protocol(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    join = await ctx.next_request(w, "JoinGroup")
    for p in join.request.protocols:
        version, _ = decode_metadata(ctx, p.name, bytes(p.metadata))
        ctx.expect_equal(version, PROTOCOL_VERSIONS.get(p.name), f"metadata version for protocol {p.name}")


@case("CONN-META-01", suite=W, timeout_s=60)
async def metadata_strict(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    join = await ctx.next_request(w, "JoinGroup")
    for p in join.request.protocols:
        version, md = decode_metadata(ctx, p.name, bytes(p.metadata))
        ctx.check(bool(md.url), f"url in the {p.name} metadata", "non-empty", md.url)
        if version >= 1 and md.allocation is not None:
            decode_assignment(bytes(md.allocation), f"allocation in the {p.name} metadata")


@case("CONN-META-02", suite=W, timeout_s=120)
async def allocation_reports_owned(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    first = await ctx.next_request(w, "JoinGroup")
    for p in first.request.protocols:
        v, md = decode_metadata(ctx, p.name, bytes(p.metadata))
        if v >= 1:
            ctx.expect_equal(md.allocation, None, f"allocation of a worker owning nothing ({p.name})")
    sync = await ctx.worker_synced(w)
    v, a = decode_assignment(bytes(sync.response.assignment), "the worker's assignment")
    owned = units_of(a.assignment)
    peer = await ctx.member("peer", session_timeout_ms=PEER_SESSION_MS)
    await peer.obtain_member_id()
    p = peer.submit_join()
    rejoin = await ctx.next_request(w, "JoinGroup", after=sync, within_ms=2 * ctx.target.timing.session_timeout_ms,
                                    answered=False, what="the worker's rejoin after a peer joined")
    await ctx.until_answered([p], ctx.rebalance_ms)
    for proto in rejoin.request.protocols:
        v, md = decode_metadata(ctx, proto.name, bytes(proto.metadata))
        if v >= 1:
            reported = units_of(decode_assignment(bytes(md.allocation), "allocation")[1].assignment) if md.allocation else set()
            ctx.expect_equal(reported, owned, f"allocation reported in the rejoin ({proto.name})")


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
