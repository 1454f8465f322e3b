"""Worker suite, the KIP-848 connect draft (C848-W-*): a worker claiming ``connect`` runs
against the fake broker serving ConnectGroupHeartbeat / PrepareAssignment /
InstallAssignment; the cases observe what it sends, and forge single answers (a fenced
heartbeat, a failed prepare or install) where the rule is about handling an error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fakebroker.protocol.error_codes import error_text

from ...harness.cases import case
from ...harness.connect848 import DraftWorker, Work, registry_for, work_of
from fakebroker.connect.embedded import ASSIGNMENT, METADATA
from ...harness.outcomes import Broken, NotApplicable, Violation
from ...harness.worker import Seen, WorkerContext, WorkerProcess

W = "worker"
HB, PREP, INST = "ConnectGroupHeartbeat", "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment"


def forged(ctx: WorkerContext, api: str, error: int) -> Any:
    mt = ctx.recorder.registry[api + "Response"]

    def answer(_req: Any) -> Any:
        if api == HB:
            return mt.new(error_code=error, member_epoch=-1, heartbeat_interval_ms=0)
        return mt.new(error_code=error)
    return answer


def forge(ctx: WorkerContext, w: WorkerProcess, api: str, error: int, where: Any = None) -> None:
    ctx.recorder.forge(w.worker_id, api, forged(ctx, api, error), where)
    ctx.note(f"forging the worker's next {api} answer: error {error}")


def after_of(ctx: WorkerContext, w: WorkerProcess, after: Seen, apis: tuple[str, ...]) -> list[Seen]:
    return [s for s in ctx.seen(w) if s.index > after.index and s.api in apis]


async def installed(ctx: WorkerContext, w: WorkerProcess, *, after: Seen | None = None) -> Seen:
    """The worker's next successful InstallAssignment."""
    return await ctx.next_request(w, INST, after=after, where=lambda s: s.ok, within_ms=15_000,
                                  what="a successful ConnectGroupInstallAssignment from the worker")


async def running(ctx: WorkerContext, w: WorkerProcess, *, after: Seen | None = None) -> Seen:
    """The worker's first heartbeat that reports work it was given (after ``after``)."""
    return await ctx.next_request(
        w, HB, after=after, within_ms=15_000, what="a heartbeat reporting the worker's assigned work",
        where=lambda s: s.request.connectors_and_tasks is not None and bool(work_of(s.request.connectors_and_tasks)))


async def established(ctx: WorkerContext, **kw: Any) -> tuple[WorkerProcess, Seen]:
    w = await ctx.start_worker(**kw)
    inst = await installed(ctx, w)
    return w, await running(ctx, w, after=inst)


async def peer(ctx: WorkerContext, name: str = "peer") -> DraftWorker:
    p = DraftWorker(await ctx.client(name), ctx.group_id, registry_for(ctx.target.api_keys),
                    rebalance_timeout_ms=ctx.target.timing.rebalance_timeout_ms)
    p._compute_code = ctx.target.error_code("COMPUTE_ASSIGNMENT")
    return p


async def beat(p: DraftWorker, seconds: float, until: Any = None) -> None:
    """Heartbeat a scripted peer every 200 ms for ``seconds`` (or until ``until()``)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and until()):
        await p.heartbeat()
        await asyncio.sleep(0.2)


def interval_ms(ctx: WorkerContext) -> int:
    return int(ctx.recorder.coordinator_config.connect_heartbeat_interval_ms)


@asynccontextmanager
async def selected_again(ctx: WorkerContext, w: WorkerProcess, api: str, error: str, *, after: Seen,
                         what: str) -> AsyncIterator[Seen]:
    """A peer joins, so the worker is selected to compute again; its next ``api`` request after
    ``after`` is answered ``error`` (forged). Yields that request two heartbeat intervals
    later, so what the worker sent next is in view; the peer heartbeats until the body ends."""
    forge(ctx, w, api, ctx.target.error_code(error))
    p = await peer(ctx)
    await p.join()
    task = asyncio.ensure_future(beat(p, 20.0))
    try:
        seen = await ctx.next_request(w, api, after=after, what=what)
        await ctx.advance(2 * interval_ms(ctx))
        yield seen
    finally:
        task.cancel()


# ---------------------------------------------------------------- the heartbeat

@case("C848-W-06", suite=W, timeout_s=60)
async def member_id_kept(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    forge(ctx, w, HB, ctx.target.error_code("FENCED_MEMBER_EPOCH"))
    await ctx.next_request(w, HB, after=run, where=lambda s: s.request.member_epoch == 0 and s.index > run.index,
                           what="the worker's rejoin after FENCED_MEMBER_EPOCH")
    await ctx.advance(1000)
    ids = {s.request.member_id for s in ctx.seen(w) if hasattr(s.request, "member_id")}
    ctx.check(len(ids) == 1 and "" not in ids, "member ids the worker used over its life (join, fence, rejoin)",
              "one non-empty member id", sorted(ids))


@case("C848-W-04", suite=W, timeout_s=60)
async def first_heartbeat_full(ctx: WorkerContext) -> None:
    def full(s: Seen, what: str) -> None:
        r = s.request
        missing = [n for n, bad in (("GroupId", not r.group_id), ("MemberId", not r.member_id),
                                    ("RebalanceTimeoutMs", r.rebalance_timeout_ms <= 0),
                                    ("ClientAssignors or ServerAssignor", r.client_assignors is None and r.server_assignor is None),
                                    ("ConnectorsAndTasks", r.connectors_and_tasks is None)) if bad]
        ctx.check(not missing, what, "every top-level field set", f"unset: {missing}")

    w = await ctx.start_worker()
    first = await ctx.next_request(w, HB, what="the worker's first ConnectGroupHeartbeat")
    ctx.expect_equal(first.request.member_epoch, 0, "MemberEpoch of the first heartbeat")
    full(first, "the worker's first heartbeat")
    run = await running(ctx, w, after=await installed(ctx, w))
    forge(ctx, w, HB, ctx.target.error_code("UNKNOWN_MEMBER_ID"), where=lambda b: b.member_epoch > 0)
    err = await ctx.next_request(w, HB, after=run, where=lambda s: s.response.error_code == ctx.target.error_code("UNKNOWN_MEMBER_ID"),
                                 what="the heartbeat answered UNKNOWN_MEMBER_ID (forged)")
    nxt = await ctx.next_request(w, HB, after=err, what="the heartbeat after the error")
    full(nxt, "the worker's first heartbeat after an error")


@case("C848-W-05", suite=W, timeout_s=60)
async def later_heartbeats_delta(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    await ctx.advance(4 * interval_ms(ctx))
    hbs = [s for s in ctx.seen(w, HB) if s.answered]
    sent = []
    for a, b in zip(hbs, hbs[1:]):
        if a.response.error_code == 0 and a.response.assignment is None and b.request.member_epoch > 0:
            r = b.request
            extra = [n for n, v in (("RebalanceTimeoutMs", r.rebalance_timeout_ms != -1),
                                    ("ClientAssignors", r.client_assignors is not None),
                                    ("InstanceId", r.instance_id is not None),
                                    ("ServerAssignor", r.server_assignor is not None),
                                    ("ConnectorsAndTasks", r.connectors_and_tasks is not None
                                     and a.request.connectors_and_tasks is not None
                                     and work_of(r.connectors_and_tasks) == work_of(a.request.connectors_and_tasks)))
                     if v]
            sent.append(extra)
    ctx.check(bool(sent), "steady heartbeats observed", "at least one", "none")
    bad = [e for e in sent if e]
    ctx.check(not bad, f"fields of {len(sent)} steady heartbeats (nothing changed since the previous one)",
              "only GroupId, MemberId, MemberEpoch", f"unchanged fields re-sent: {bad[:3]}")


@case("C848-W-03", suite=W, timeout_s=60)
async def adopts_epoch(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    p = await peer(ctx)
    await p.join()
    await beat(p, 3.0)   # the group moves to new epochs; the worker must follow each
    hbs = [s for s in ctx.seen(w, HB) if s.answered]
    pairs = [(a, b) for a, b in zip(hbs, hbs[1:])
             if a.response.error_code in (0, ctx.target.error_code("COMPUTE_ASSIGNMENT")) and b.request.member_epoch != -1]
    ctx.check(len({a.response.member_epoch for a, _ in pairs}) >= 2, "epochs the worker was given",
              "at least two", sorted({a.response.member_epoch for a, _ in pairs}))
    bad = [(a.response.member_epoch, b.request.member_epoch) for a, b in pairs
           if b.request.member_epoch != a.response.member_epoch]
    ctx.check(not bad, "MemberEpoch of each heartbeat after a successful one", "the epoch last given",
              f"(given, sent): {bad[:5]}")


@case("C848-W-01", suite=W, timeout_s=90)
async def fenced_or_unknown_rejoins(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    mid = run.request.member_id
    after = run
    for name in ("FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"):
        forge(ctx, w, HB, ctx.target.error_code(name), where=lambda b: b.member_epoch > 0)
        err = await ctx.next_request(w, HB, after=after, where=lambda s: s.response.error_code == ctx.target.error_code(name),
                                     what=f"the heartbeat answered {name} (forged)")
        nxt = await ctx.next_request(w, HB, after=err, what=f"the heartbeat after {name}")
        ctx.expect_equal(nxt.request.member_id, mid, f"MemberId of the rejoin after {name}")
        ctx.expect_equal(nxt.request.member_epoch, 0, f"MemberEpoch of the rejoin after {name}")
        owned = work_of(nxt.request.connectors_and_tasks).show()
        ctx.expect_equal(owned, [], f"work reported in the rejoin after {name} (all given up)")
        after = await running(ctx, w, after=nxt)


@case("C848-W-02", suite=W, timeout_s=90)
async def acknowledges_revocation(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    before = work_of(run.request.connectors_and_tasks)
    p = await peer(ctx)
    await p.join()

    def revoked() -> Seen | None:
        return next((s for s in ctx.seen(w, HB) if s.index > run.index and s.answered and s.response.error_code == 0
                     and s.response.assignment is not None
                     and not before <= work_of(s.response.assignment.connectors_and_tasks)), None)
    await beat(p, 8.0, until=revoked)
    rev = revoked()
    if rev is None:
        raise Violation("a revocation (setup)", "the worker told to give work to the joining peer", "none")
    ack = await ctx.next_request(w, HB, after=rev, what="the heartbeat acknowledging the revocation")
    gap_ms = (ack.t_request - rev.t_response) * 1000
    kept = work_of(rev.response.assignment.connectors_and_tasks)
    reported = work_of(ack.request.connectors_and_tasks) if ack.request.connectors_and_tasks is not None else None
    ctx.check(reported is not None and reported <= kept, "work reported by the next heartbeat",
              f"at most {kept.show()} (revoked work released)", reported.show() if reported else "not reported")
    interval = interval_ms(ctx)
    lag = cadence_lag_ms(ctx, w, before=rev, interval=interval)
    bound = interval / 2 + min(lag, interval / 2)
    ctx.check(gap_ms < bound, "delay between the revoking answer and the acknowledging heartbeat",
              f"at once (< {bound:.0f} ms: half the interval {interval} ms, plus the worker's own lag "
              f"behind its interval, {lag:.0f} ms)", f"{gap_ms:.0f} ms")


def cadence_lag_ms(ctx: WorkerContext, w: WorkerProcess, *, before: Seen, interval: int) -> float:
    """How late the worker's heartbeats came behind its interval before ``before`` (the median
    gap between them less the interval; 0 when on time). On a starved CPU every heartbeat comes
    late by about as much (session 8: an acknowledgement 377 ms after the revoking answer
    beside three Connect JVMs, against a 250 ms bound); a worker that waits for its interval
    instead of answering at once is still late by about half an interval more than that.
    Heartbeats sent at once (after an assignment) only shorten the median: a stricter bound."""
    sent = [s.t_request for s in ctx.seen(w, HB) if s.index < before.index]
    gaps = sorted(b - a for a, b in zip(sent, sent[1:]))
    return max(0.0, gaps[len(gaps) // 2] * 1000 - interval) if gaps else 0.0


# ---------------------------------------------------------------- the assignment

async def computed(ctx: WorkerContext, w: WorkerProcess, after: Seen | None = None) -> Seen:
    return await ctx.next_request(w, HB, after=after, within_ms=15_000,
                                  where=lambda s: s.response.error_code == ctx.target.error_code("COMPUTE_ASSIGNMENT"),
                                  what="a heartbeat answered COMPUTE_ASSIGNMENT")


@case("C848-W-07", suite=W, timeout_s=60)
async def computes_assignment(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    c = await computed(ctx, w)
    prep = await ctx.next_request(w, PREP, after=c, what="ConnectGroupPrepareAssignment after COMPUTE_ASSIGNMENT")
    ctx.expect_equal(prep.request.member_id, c.request.member_id, "MemberId of the PrepareAssignment")
    ctx.expect_error(prep.response, "NONE", "the coordinator's PrepareAssignment answer (harness check)")
    inst = await ctx.next_request(w, INST, after=prep, what="ConnectGroupInstallAssignment after PrepareAssignment")
    ctx.expect_equal(inst.request.group_epoch, prep.response.group_epoch, "GroupEpoch of the install")
    given = Work()
    for m in inst.request.members:
        given = given | work_of(m.connectors_and_tasks)
    ctx.check(bool(given) and {m.member_id for m in inst.request.members} == {m.member_id for m in prep.response.members},
              "the installed assignment", "work for every prepared member", [m.member_id for m in inst.request.members])
    ctx.expect_error(inst.response, "NONE", "the coordinator's answer to the install")


@case("C848-W-08", suite=W, timeout_s=60)
async def assignment_in_time(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    c = await computed(ctx, w)
    rt = c.request.rebalance_timeout_ms
    inst = await ctx.maybe_next_request(w, INST, after=c, within_ms=rt, where=lambda s: s.answered)
    took = f"{(inst.t_request - c.t_response) * 1000:.0f} ms" if inst else "no install"
    ctx.check(inst is not None and (inst.t_request - c.t_response) * 1000 < rt,
              "time from COMPUTE_ASSIGNMENT to the install", f"< the rebalance timeout {rt} ms", took)


@case("C848-W-09", suite=W, timeout_s=90)
async def prepare_errors(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    forge(ctx, w, PREP, ctx.target.error_code("FENCED_MEMBER_EPOCH"))
    c = await computed(ctx, w)
    prep = await ctx.next_request(w, PREP, after=c, what="the PrepareAssignment (answered FENCED_MEMBER_EPOCH, forged)")
    retry = await ctx.next_request(w, PREP, after=prep, within_ms=10_000, what="the retried PrepareAssignment")
    between = [s.api for s in after_of(ctx, w, prep, (HB, INST)) if s.index < retry.index]
    ctx.check(between[:1] == [HB], "what the worker sent after a PrepareAssignment answered FENCED_MEMBER_EPOCH",
              "a heartbeat, then the retried PrepareAssignment", between + [PREP])
    done = await installed(ctx, w, after=retry)
    async with selected_again(ctx, w, PREP, "UNKNOWN_MEMBER_ID", after=done,
                              what="the PrepareAssignment after a peer joined") as prep2:
        nxt = after_of(ctx, w, prep2, (PREP, INST))
        ctx.check(not nxt or nxt[0].api == PREP, "what the worker sent after a PrepareAssignment answered UNKNOWN_MEMBER_ID",
                  "no InstallAssignment (the assignment abandoned)", [s.api for s in nxt[:3]])
        if prep2.response.error_code != ctx.target.error_code("UNKNOWN_MEMBER_ID"):
            raise Violation("the forged answer (harness)", "UNKNOWN_MEMBER_ID",
                            error_text(prep2.response.error_code, ctx.target.error_codes))


@case("C848-W-10", suite=W, timeout_s=90)
async def install_errors(ctx: WorkerContext) -> None:
    w = await ctx.start_worker()
    forge(ctx, w, INST, ctx.target.error_code("FENCED_MEMBER_EPOCH"))
    inst = await ctx.next_request(w, INST, what="the InstallAssignment (answered FENCED_MEMBER_EPOCH, forged)")
    retry = await ctx.next_request(w, INST, after=inst, within_ms=10_000, what="the retried InstallAssignment")
    sent = [s.api for s in after_of(ctx, w, inst, (HB, PREP, INST)) if s.index <= retry.index]
    ctx.check(sent[:1] == [HB], "what the worker sent after an InstallAssignment answered FENCED_MEMBER_EPOCH",
              "a heartbeat, then the retry", sent)
    done = await installed(ctx, w, after=inst)
    async with selected_again(ctx, w, INST, "INVALID_ASSIGNMENT", after=done,
                              what="the InstallAssignment after a peer joined (answered INVALID_ASSIGNMENT, forged)") as bad:
        compute = ctx.target.error_code("COMPUTE_ASSIGNMENT")
        later = after_of(ctx, w, bad, (HB, PREP, INST))
        # a new attempt is legitimate only after a new COMPUTE_ASSIGNMENT
        first_new = next((i for i, s in enumerate(later) if s.api == HB and s.answered
                          and s.response.error_code == compute), len(later))
        retried = [s.api for s in later[:first_new] if s.api in (PREP, INST)]
        ctx.check(not retried, "what the worker sent after an InstallAssignment answered INVALID_ASSIGNMENT",
                  "no retry of the abandoned attempt", retried)


async def peer_leaves(ctx: WorkerContext) -> tuple[WorkerProcess, DraftWorker, Work, Seen, Work]:
    """The worker runs; a peer joins, gets a share and leaves. Returns the worker, the peer,
    the peer's share, the worker's install after the departure and the work that install
    gives (the share held back is what it leaves out)."""
    w, run = await established(ctx)
    p = await peer(ctx)
    await p.join()
    await beat(p, 10.0, until=lambda: bool(p.owned))
    if not p.owned:
        raise Violation("the peer's share (setup)", "work for the joining peer", "none")
    gave = p.owned
    await p.leave()
    ctx.note(f"peer left holding {gave.show()}")
    t_left = time.monotonic()
    held = await ctx.next_request(
        w, INST, after=run, what="the install after the peer left",
        where=lambda s: s.t_request >= t_left and s.ok and p.member_id not in {m.member_id for m in s.request.members})
    given = Work()
    for m in held.request.members:
        given = given | work_of(m.connectors_and_tasks)
    return w, p, gave, held, given


def reason(s: Seen) -> Any:
    """The Reasons of a heartbeat's ClientAssignors (None when it sent none)."""
    return None if s.request.client_assignors is None else [a.reason for a in s.request.client_assignors]


def last_reasoned(ctx: WorkerContext, w: WorkerProcess, before: Seen) -> Seen:
    """The worker's last heartbeat before ``before`` that carried its ClientAssignors."""
    return next(s for s in reversed(ctx.seen(w, HB)) if s.index < before.index and reason(s) is not None)


@case("C848-W-11", suite=W, timeout_s=120)
async def delay_ends_with_reason(ctx: WorkerContext) -> None:
    delay = ctx.target.timing.scheduled_rebalance_delay_ms
    w, p, gave, held, given = await peer_leaves(ctx)
    if not (gave - given):
        raise Violation("work held back for the scheduled delay", f"{gave.show()} not reassigned at once",
                        f"reassigned: {given.show()}")  # a SHOULD: the worker holds nothing back

    before = reason(last_reasoned(ctx, w, held))
    bump = await ctx.next_request(w, HB, after=held, within_ms=delay + 5000,
                                  where=lambda s: reason(s) is not None and reason(s) != before,
                                  what="a heartbeat changing the assignor Reason when the delay ends")
    waited = (bump.t_request - held.t_request) * 1000
    ctx.check(waited >= delay * 0.8, "when the Reason changed", f"after the delay ({delay} ms)", f"{waited:.0f} ms")
    final = await installed(ctx, w, after=bump)
    everything = Work()
    for m in final.request.members:
        everything = everything | work_of(m.connectors_and_tasks)
    ctx.check(gave <= everything, "the assignment after the delay", f"includes {gave.show()}", everything.show())


# ---------------------------------------------------------------- the install's content

async def install_for_peer(ctx: WorkerContext) -> tuple[WorkerProcess, Seen, Seen, Seen, DraftWorker]:
    """The worker alone installs its first target; a peer joins and the worker installs
    again. Returns the worker, its first install, the install naming the peer (accepted
    or not), that install's PrepareAssignment, and the peer (heartbeating meanwhile)."""
    w = await ctx.start_worker()
    first = await installed(ctx, w)
    await running(ctx, w, after=first)
    p = await peer(ctx)
    await p.join()
    task = asyncio.ensure_future(beat(p, 30.0))
    try:
        second = await ctx.next_request(w, INST, after=first, what="the install after a peer joined",
                                        where=lambda s: p.member_id in {m.member_id for m in s.request.members})
    finally:
        task.cancel()
    prep = next(s for s in reversed(ctx.seen(w, PREP)) if s.index < second.index)
    return w, first, second, prep, p


def installed_units(s: Seen) -> dict[str, Work]:
    return {m.member_id: work_of(m.connectors_and_tasks) for m in s.request.members}


@case("C848-W-12", suite=W, timeout_s=90)
async def install_complete(ctx: WorkerContext) -> None:
    w, first, second, prep, p = await install_for_peer(ctx)
    given = installed_units(second)
    owners: dict[str, list[str]] = {}
    for mid, work in given.items():
        for u in work.show():
            owners.setdefault(u, []).append(mid)
    twice = {u: ms for u, ms in owners.items() if len(ms) > 1}
    ctx.check(not twice, "units of the install after the peer joined", "each given to one member only",
              f"given to several: {twice}")
    before = Work()
    for work in installed_units(first).values():
        before = before | work
    ctx.check(bool(before), "the worker's first install (setup)", "some work", before.show())
    lost = sorted(set(before.show()) - set(owners))
    ctx.check(not lost, "units of the install after the peer joined (no member left, no delay pending)",
              f"every unit of the previous target {before.show()}", f"left out: {lost}")


def chosen_range(ctx: WorkerContext, w: WorkerProcess, prep: Seen) -> tuple[int, int]:
    """[MinimumVersion, MaximumVersion] of the assignor PrepareAssignment named, as the
    worker last declared it."""
    name = prep.response.assignor_name
    for s in reversed(ctx.seen(w, HB)):
        if s.index < prep.index and s.request.client_assignors is not None:
            for a in s.request.client_assignors:
                if a.name == name:
                    return a.minimum_version, a.maximum_version
            break
    raise Violation("the assignor chosen by the coordinator", f"{name!r} among the worker's ClientAssignors", "absent")


@case("C848-W-13", suite=W, timeout_s=90)
async def install_versions(ctx: WorkerContext) -> None:
    w, first, second, prep, p = await install_for_peer(ctx)
    lo, hi = chosen_range(ctx, w, prep)
    encoded = {m.member_id: m.assignor.version for m in prep.response.members if m.assignor is not None}
    for s in (first, second):
        for m in s.request.members:
            ctx.check(lo <= m.version <= hi, f"Version installed for {m.member_id}",
                      f"within the chosen assignor's range [{lo}, {hi}]", m.version)
            if m.member_id in encoded:
                ctx.check(m.version <= encoded[m.member_id], f"Version installed for {m.member_id}",
                          f"at most {encoded[m.member_id]}, the version that member encodes with", m.version)


@case("C848-W-14", suite=W, timeout_s=90)
async def install_metadata(ctx: WorkerContext) -> None:
    w, first, second, prep, p = await install_for_peer(ctx)
    for s in (first, second):
        for m in s.request.members:
            try:
                version = ASSIGNMENT.decode_versioned(bytes(m.metadata))[0]
            except Exception as e:  # noqa: BLE001 - any decoding failure is the finding
                raise Violation(f"Metadata installed for {m.member_id}", "a Connect assignment (ERRATA 24)",
                                f"undecodable: {e}") from None
            ctx.expect_equal(version, m.version, f"version prefix of the Metadata installed for {m.member_id} "
                                                 "(the member's Version)")


# ---------------------------------------------------------------- ClientAssignors

async def first_assignors(ctx: WorkerContext) -> list[Any]:
    w = await ctx.start_worker()
    first = await ctx.next_request(w, HB, what="the worker's first ConnectGroupHeartbeat")
    if not first.request.client_assignors:
        raise Violation("ClientAssignors of the first heartbeat", "at least one assignor",
                        first.request.client_assignors)
    return list(first.request.client_assignors)


@case("C848-W-15", suite=W, timeout_s=60)
async def assignors_valid(ctx: WorkerContext) -> None:
    workers = set()
    for a in await first_assignors(ctx):
        ctx.check(a.minimum_version <= a.version <= a.maximum_version, f"Version of assignor {a.name!r}",
                  f"within [{a.minimum_version}, {a.maximum_version}]", a.version)
        try:
            prefix, md = METADATA.decode_versioned(bytes(a.metadata))
        except Exception as e:  # noqa: BLE001 - any decoding failure is the finding
            raise Violation(f"Metadata of assignor {a.name!r}", "Connect worker metadata (ERRATA 24)",
                            f"undecodable: {e}") from None
        ctx.expect_equal(prefix, a.version, f"version prefix of assignor {a.name!r}'s Metadata (its Version)")
        workers.add((md.url, md.config_offset))
    ctx.check(len(workers) == 1, "worker URL and config offset in the assignors' Metadata",
              "the same worker metadata in every assignor", sorted(workers))


@case("C848-W-16", suite=W, timeout_s=60)
async def assignors_in_priority_order(ctx: WorkerContext) -> None:
    assignors = await first_assignors(ctx)
    maxima = [a.maximum_version for a in assignors]
    ctx.check(maxima == sorted(maxima, reverse=True), "order of ClientAssignors",
              "most preferred first: the newest protocol (highest MaximumVersion) first",
              [(a.name, a.maximum_version) for a in assignors])


# ---------------------------------------------------------------- heartbeat interval, leaving

@case("C848-W-17", suite=W, timeout_s=60)
async def heartbeat_interval(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    given = interval_ms(ctx)
    await ctx.advance(8 * given)
    hbs = [s for s in ctx.seen(w, HB) if s.index >= run.index]
    gaps = sorted((b.t_request - a.t_response) * 1000 for a, b in zip(hbs, hbs[1:])
                  if a.answered and a.response.error_code == 0 and a.response.assignment is None)
    ctx.check(len(gaps) >= 2, "steady heartbeats observed", f"at least two in {8 * given} ms", len(gaps))
    ctx.check(gaps[0] >= given / 2, "shortest gap between steady heartbeats",
              f"at least half the HeartbeatIntervalMs given ({given} ms)", f"{gaps[0]:.0f} ms")
    median = gaps[len(gaps) // 2]
    ctx.check(median <= 2 * given, "median gap between steady heartbeats",
              f"about the HeartbeatIntervalMs given (<= {2 * given} ms)", f"{median:.0f} ms")
    # The interval is the last response's, not a constant: one answer with a longer one.
    longer = 4 * given
    mt = ctx.recorder.registry[HB + "Response"]
    ctx.recorder.forge(w.worker_id, HB, lambda req: mt.new(error_code=0, member_epoch=req.member_epoch,
                                                           heartbeat_interval_ms=longer),
                       where=lambda b: b.member_epoch > 0)
    ctx.note(f"forging the worker's next heartbeat answer: HeartbeatIntervalMs {longer}")
    slow = await ctx.next_request(w, HB, after=hbs[-1], what="the heartbeat answered with the longer interval",
                                  where=lambda s: s.response.heartbeat_interval_ms == longer)
    nxt = await ctx.next_request(w, HB, after=slow, answered=False, within_ms=3 * longer,
                                 what="the heartbeat after the longer interval")
    gap = (nxt.t_request - slow.t_response) * 1000
    ctx.check(longer / 2 <= gap <= 2 * longer, "gap after an answer with a longer HeartbeatIntervalMs",
              f"about {longer} ms", f"{gap:.0f} ms")


@case("C848-W-18", suite=W, timeout_s=60)
async def leaves_on_shutdown(ctx: WorkerContext) -> None:
    w, run = await established(ctx)
    ctx.note("stopping the worker (SIGTERM)")
    await asyncio.to_thread(w.terminate)
    left = await ctx.maybe_next_request(w, HB, after=run, within_ms=2000, where=lambda s: s.request.member_epoch == -1)
    ctx.check(left is not None, "the worker's last heartbeat before it stopped", "MemberEpoch -1 (leaving the group)",
              [s.request.member_epoch for s in ctx.seen(w, HB)][-3:])
    ctx.expect_equal(left.request.member_id, run.request.member_id, "MemberId of the leaving heartbeat")


# ---------------------------------------------------------------- case study: a worker bounces

@case("C848-W-19", suite=W, timeout_s=120)
async def bounce_gets_work_back(ctx: WorkerContext) -> None:
    w, p, gave, held, given = await peer_leaves(ctx)
    if not gave - given:
        raise NotApplicable(f"the worker holds nothing back for a scheduled delay (C848-W-11): {gave.show()} "
                            "was reassigned at once, so there is no held work to give back")
    ctx.note("the peer returns under the same member id")
    t_back = time.monotonic()
    await p.join()
    before = reason(last_reasoned(ctx, w, held))
    if any(reason(s) not in (None, before) for s in ctx.seen(w, HB) if s.index > held.index and s.t_request < t_back):
        raise Broken("the worker's delay ended before the peer could return (a machine too slow for the "
                     f"{ctx.target.timing.scheduled_rebalance_delay_ms} ms delay): nothing to check")
    task = asyncio.ensure_future(beat(p, 30.0))
    try:
        back = await ctx.next_request(
            w, INST, after=held, what="the install after the peer returned",
            where=lambda s: s.t_request >= t_back and p.member_id in {m.member_id for m in s.request.members})
    finally:
        task.cancel()
    # The first install naming the returned peer is the one its return triggered (the
    # case study's epoch 37); no timing bound, so a loaded machine cannot fail it.
    ctx.expect_equal(installed_units(back)[p.member_id].show(), gave.show(),
                     "the returning worker's work in the first install after its return (what it had before)")
