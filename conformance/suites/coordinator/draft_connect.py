"""The draft's ``connect`` group type (KIP-848 for Connect), coordinator side: request
validation, request handling, epochs, reconciliation, assignor and worker selection,
assignment validation, migration. Run only against targets that claim ``connect``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fakebroker.protocol.error_codes import ErrorCode, error_text

from ...harness.cases import case
from ...harness.connect848 import Assignor, DraftWorker, Work, registry_for, work_of
from fakebroker.connect.embedded import assignment_bytes
from ...harness.context import CoordinatorContext
from ...harness.outcomes import Violation

ALL = Work.of(["A", "B"], [("A", 0), ("A", 1), ("B", 0)])
SPLIT_A = Work.of(["A"], [("A", 0), ("A", 1)])
SPLIT_B = Work.of(["B"], [("B", 0)])
Plan = Callable[[Any], dict[str, Work]]


def expect(ctx: CoordinatorContext, r: Any, name: str, what: str) -> None:
    ctx.expect_error(r, ctx.target.error_code(name), what)


async def worker(ctx: CoordinatorContext, name: str, **kw: Any) -> DraftWorker:
    kw.setdefault("rebalance_timeout_ms", ctx.rebalance_ms)
    w = DraftWorker(await ctx.client(name), kw.pop("group_id", ctx.group_id),
                    registry_for(ctx.target.api_keys), **kw)
    w._compute_code = ctx.target.error_code("COMPUTE_ASSIGNMENT")
    return w


def everything_to_first(p: Any) -> dict[str, Work]:
    ids = [m.member_id for m in p.members]
    return {mid: (ALL if i == 0 else Work()) for i, mid in enumerate(sorted(ids))}


def ok_or_compute(ctx: CoordinatorContext, r: Any, what: str) -> None:
    if r.error_code not in (0, ctx.target.error_code("COMPUTE_ASSIGNMENT")):
        raise Violation(what, "NONE or COMPUTE_ASSIGNMENT", error_text(r.error_code, ctx.target.error_codes))


async def drive(ctx: CoordinatorContext, workers: list[DraftWorker], plan: Plan, *,
                rounds: int = 12) -> int:
    """Heartbeat until a target is installed (by whoever is told COMPUTE_ASSIGNMENT, with
    ``plan``) and every worker runs its share at the target epoch. Returns that epoch."""
    installed: int | None = None
    targets: dict[str, Work] = {}
    for _ in range(rounds):
        for w in workers:
            r = await w.heartbeat()
            ok_or_compute(ctx, r, f"{w.name}'s heartbeat")
            if r.error_code == ctx.target.error_code("COMPUTE_ASSIGNMENT"):
                p = await w.prepare()
                expect(ctx, p, "NONE", f"{w.name}'s PrepareAssignment after COMPUTE_ASSIGNMENT")
                targets = plan(p)
                ir = await w.install(p.group_epoch, targets)
                expect(ctx, ir, "NONE", f"{w.name}'s InstallAssignment")
                installed = p.group_epoch
        if installed is not None and all(
                w.epoch == installed and w.owned == targets.get(w.member_id, Work()) for w in workers):
            return installed
        await ctx.advance(100)
    raise Violation("convergence", "every worker at the installed epoch with its target",
                    {w.name: (w.epoch, w.owned.show()) for w in workers} | {"installed": installed})


async def established(ctx: CoordinatorContext, n: int = 1, plan: Plan = everything_to_first,
                      group_id: str | None = None):
    ws = [await worker(ctx, f"w{i}", group_id=group_id or ctx.group_id) for i in range(1, n + 1)]
    for w in ws:
        ok_or_compute(ctx, await w.join(), f"{w.name}'s first heartbeat")
    epoch = await drive(ctx, ws, plan)
    return ws, epoch


async def next_compute(ctx: CoordinatorContext, workers: list[DraftWorker], rounds: int = 8) -> tuple[DraftWorker, Any]:
    """Heartbeat until someone is told COMPUTE_ASSIGNMENT; returns it and its Prepare."""
    for _ in range(rounds):
        for w in workers:
            r = await w.heartbeat()
            if r.error_code == ctx.target.error_code("COMPUTE_ASSIGNMENT"):
                p = await w.prepare()
                expect(ctx, p, "NONE", f"{w.name}'s PrepareAssignment")
                return w, p
        await ctx.advance(100)
    raise Violation("COMPUTE_ASSIGNMENT after a change of the group", "sent to one worker", "never sent")


# ---------------------------------------------------------------- request validation

HB_INVALID: dict[str, tuple[str, dict[str, Any], str]] = {
    "C848-HB-VAL-01": ("INVALID_REQUEST", {"group_id": ""}, "empty GroupId"),
    "C848-HB-VAL-02": ("INVALID_REQUEST", {"member_id": ""}, "empty MemberId"),
    "C848-HB-VAL-03": ("INVALID_REQUEST", {"member_epoch": -3}, "MemberEpoch -3"),
    "C848-HB-VAL-04": ("INVALID_REQUEST", {"instance_id": ""}, "empty InstanceId"),
    "C848-HB-VAL-05": ("INVALID_REQUEST", {"rebalance_timeout_ms": 0}, "RebalanceTimeoutMs 0 on the first heartbeat"),
    "C848-HB-VAL-06": ("INVALID_REQUEST", {"server_assignor": "uniform"}, "ServerAssignor together with ClientAssignors"),
    "C848-HB-VAL-11": ("UNSUPPORTED_ASSIGNOR", {"server_assignor": "uniform", "client_assignors": None},
                       "a ServerAssignor (a connect coordinator offers none)"),
}
ASSIGNOR_INVALID: dict[str, tuple[Assignor, str]] = {
    "C848-HB-VAL-07": (Assignor(name=""), "an assignor with an empty Name"),
    "C848-HB-VAL-08": (Assignor(minimum=-2, version=0), "MinimumVersion -2"),
    "C848-HB-VAL-09": (Assignor(minimum=2, maximum=1, version=1), "MaximumVersion below MinimumVersion"),
    "C848-HB-VAL-10": (Assignor(minimum=0, maximum=1, version=2), "Version outside [MinimumVersion, MaximumVersion]"),
}


def _hb_invalid(req_id: str) -> None:
    error, over, what = HB_INVALID[req_id]

    async def run(ctx: CoordinatorContext) -> None:
        w = await worker(ctx, "w1")
        expect(ctx, await w.heartbeat(full=True, apply=False, **over), error, f"ConnectGroupHeartbeat with {what}")
    run.__name__ = f"heartbeat_{req_id.lower().replace('-', '_')}"
    case(req_id)(run)


def _assignor_invalid(req_id: str) -> None:
    bad, what = ASSIGNOR_INVALID[req_id]

    async def run(ctx: CoordinatorContext) -> None:
        w = await worker(ctx, "w1", assignors=[bad])
        expect(ctx, await w.join(apply=False), "INVALID_REQUEST", f"ConnectGroupHeartbeat with {what}")
    run.__name__ = f"heartbeat_{req_id.lower().replace('-', '_')}"
    case(req_id)(run)


for _id in HB_INVALID:
    _hb_invalid(_id)
for _id in ASSIGNOR_INVALID:
    _assignor_invalid(_id)


@case("C848-HB-VAL-12")
async def ranges_must_overlap(ctx: CoordinatorContext) -> None:
    a = await worker(ctx, "a", assignors=[Assignor(minimum=0, maximum=1, version=1)])
    ok_or_compute(ctx, await a.join(), "a's first heartbeat")
    b = await worker(ctx, "b", assignors=[Assignor(minimum=2, maximum=2, version=2)])
    expect(ctx, await b.join(apply=False), "UNSUPPORTED_ASSIGNOR", "a worker whose range [2, 2] does not overlap [0, 1]")


@case("C848-HB-VAL-13")
async def negative_owned_task(ctx: CoordinatorContext) -> None:
    w = await worker(ctx, "w1")
    expect(ctx, await w.heartbeat(full=True, apply=False, owned=Work.of(["A"], [("A", -1)])),
           "INVALID_REQUEST", "owned work with TaskId -1")


def _simple_invalid(req_id: str, api: str, over: dict[str, Any], what: str) -> None:
    async def run(ctx: CoordinatorContext) -> None:
        (w,), _ = await established(ctx)
        if api == "prepare":
            r = await w.prepare(**over)
        else:
            r = await w.install(1, {w.member_id: ALL}, **over)
        expect(ctx, r, "INVALID_REQUEST", f"{api} with {what}")
    run.__name__ = f"{api}_{req_id.lower().replace('-', '_')}"
    case(req_id)(run)


for _api, _prefix in (("prepare", "PREP"), ("install", "INST")):
    _simple_invalid(f"C848-{_prefix}-VAL-01", _api, {"group_id": ""}, "an empty GroupId")
    _simple_invalid(f"C848-{_prefix}-VAL-02", _api, {"member_id": ""}, "an empty MemberId")
    _simple_invalid(f"C848-{_prefix}-VAL-03", _api, {"member_epoch": -1}, "MemberEpoch -1")


# ---------------------------------------------------------------- prepare / install handling

def _handling(req_id: str, api: str, kind: str) -> None:
    async def run(ctx: CoordinatorContext) -> None:
        (a, b), epoch = await established(ctx, 2)
        a_ = await worker(ctx, "late")
        ok_or_compute(ctx, await a_.join(), "late worker's first heartbeat")
        chosen, p = await next_compute(ctx, [a, b, a_])
        others = [w for w in (a, b, a_) if w is not chosen]

        async def call(w: DraftWorker, **over: Any) -> Any:
            if api == "prepare":
                return await w.prepare(**over)
            return await w.install(p.group_epoch, {x.member_id: Work() for x in (a, b, a_)}, **over)

        if kind == "group":
            expect(ctx, await call(chosen, group_id=ctx.group_id + "-missing"), "GROUP_ID_NOT_FOUND",
                   f"{api} for a group that does not exist")
        elif kind == "member":
            expect(ctx, await call(chosen, member_id="worker-not-a-member"), "UNKNOWN_MEMBER_ID",
                   f"{api} from an unknown member")
        elif kind == "epoch":
            expect(ctx, await call(chosen, member_epoch=chosen.epoch + 5), "FENCED_MEMBER_EPOCH",
                   f"{api} with a stale member epoch")
        elif kind == "selected":
            expect(ctx, await call(others[0]), "UNKNOWN_MEMBER_ID", f"{api} from a worker that was not selected")
    run.__name__ = f"{api}_{kind}"
    case(req_id)(run)


for _api, _prefix in (("prepare", "PREP"), ("install", "INST")):
    for _n, _kind in ((1, "group"), (2, "member"), (3, "epoch"), (4, "selected")):
        _handling(f"C848-{_prefix}-HND-0{_n}", _api, _kind)


@case("C848-PREP-HND-05")
async def prepare_returns_group_state(ctx: CoordinatorContext) -> None:
    (a,), epoch = await established(ctx)
    b = await worker(ctx, "b")
    ok_or_compute(ctx, await b.join(), "b's first heartbeat")
    chosen, p = await next_compute(ctx, [a, b])
    ctx.check(p.group_epoch > epoch, "GroupEpoch in PrepareAssignment after a join", f"> {epoch}", p.group_epoch)
    ctx.expect_equal(p.assignor_name, "connect", "AssignorName")
    by_id = {m.member_id: m for m in p.members}
    ctx.expect_equal(sorted(by_id), sorted([a.member_id, b.member_id]), "members listed")
    for w in (a, b):
        ctx.expect_equal(bytes(by_id[w.member_id].assignor.metadata), w.assignors[0].metadata,
                         f"{w.name}'s assignor metadata (byte for byte)")
    ctx.expect_equal(work_of(by_id[a.member_id].connectors_and_tasks), ALL, "a's current target")
    ctx.expect_equal(work_of(by_id[b.member_id].connectors_and_tasks), Work(), "b's current target (none)")


def halves(p: Any) -> dict[str, Work]:
    """A's connector and tasks to the smaller member id, B's to the other (two members)."""
    ids = sorted(m.member_id for m in p.members)
    return {ids[0]: SPLIT_A, ids[1]: SPLIT_B} if len(ids) == 2 else everything_to_first(p)


@case("C848-INST-HND-05")
async def installed_target_reached(ctx: CoordinatorContext) -> None:
    ws, epoch = await established(ctx, 2, halves)
    ctx.expect_equal(sorted(tuple(w.owned.show()) for w in ws),
                     sorted([tuple(Work.of(["A"], [("A", 0), ("A", 1)]).show()), tuple(Work.of(["B"], [("B", 0)]).show())]),
                     "work of the two workers after the install")


# ---------------------------------------------------------------- heartbeat handling

@case("C848-HB-HND-01")
async def first_heartbeat_creates_group(ctx: CoordinatorContext) -> None:
    w = await worker(ctx, "w1")
    r = await w.join()
    ok_or_compute(ctx, r, "first heartbeat (epoch 0) of a new group")
    ctx.check(r.member_epoch >= 0, "MemberEpoch of the admitted worker", ">= 0", r.member_epoch)


@case("C848-HB-HND-02")
async def unknown_member(ctx: CoordinatorContext) -> None:
    await established(ctx)
    stranger = await worker(ctx, "stranger")
    stranger.epoch = 3
    expect(ctx, await stranger.heartbeat(full=True, apply=False), "UNKNOWN_MEMBER_ID",
           "a heartbeat with epoch 3 from an unknown member")


@case("C848-HB-HND-03")
async def wrong_epoch_fenced(ctx: CoordinatorContext) -> None:
    (a, b), epoch = await established(ctx, 2)
    expect(ctx, await b.heartbeat(apply=False, member_epoch=b.epoch + 7), "FENCED_MEMBER_EPOCH",
           "a heartbeat with a member epoch the worker never had")
    expect(ctx, await b.heartbeat(apply=False), "UNKNOWN_MEMBER_ID",
           "the fenced worker's next heartbeat with its former epoch (it was removed)")


@case("C848-HB-HND-04")
async def lost_transition_tolerated(ctx: CoordinatorContext) -> None:
    (a,), e1 = await established(ctx)
    b = await worker(ctx, "b")
    ok_or_compute(ctx, await b.join(), "b's first heartbeat")
    chosen, p = await next_compute(ctx, [a, b])
    ir = await chosen.install(p.group_epoch, {a.member_id: ALL, b.member_id: Work()})
    expect(ctx, ir, "NONE", "InstallAssignment (same work for a)")
    before = a.epoch
    r = await a.heartbeat(apply=False)
    ok_or_compute(ctx, r, "a's heartbeat after the install")
    if r.member_epoch == before:
        raise Violation("setup: a's transition", f"an epoch above {before}", r.member_epoch)
    again = await a.heartbeat(apply=False)  # as if the transition's response had been lost
    if again.error_code != 0 and again.error_code != ctx.target.error_code("COMPUTE_ASSIGNMENT"):
        raise Violation("a heartbeat repeating the epoch before a lost transition", "accepted", error_text(again.error_code, ctx.target.error_codes))
    ctx.expect_equal(again.member_epoch, r.member_epoch, "epoch in the answer to the repeated heartbeat")


@case("C848-HB-HND-05")
async def leave_with_minus_one(ctx: CoordinatorContext) -> None:
    (a, b), epoch = await established(ctx, 2)
    r = await b.leave()
    expect(ctx, r, "NONE", "a heartbeat with epoch -1")
    ctx.expect_equal(r.member_epoch, -1, "MemberEpoch in the answer to a leave")


@case("C848-HB-HND-06")
async def interval_positive(ctx: CoordinatorContext) -> None:
    (a,), epoch = await established(ctx)
    r = await a.heartbeat()
    ctx.check(r.heartbeat_interval_ms > 0, "HeartbeatIntervalMs", "> 0", r.heartbeat_interval_ms)


@case("C848-HB-HND-07")
async def fenced_rejoins_at_zero(ctx: CoordinatorContext) -> None:
    (a, b), epoch = await established(ctx, 2)
    expect(ctx, await b.heartbeat(apply=False, member_epoch=b.epoch + 7), "FENCED_MEMBER_EPOCH", "setup: fencing b")
    b.owned = Work()
    r = await b.join()
    ok_or_compute(ctx, r, "the fenced worker rejoining with the same member id and epoch 0")


@case("C848-HB-HND-08")
async def session_expiry(ctx: CoordinatorContext) -> None:
    (a, b), epoch = await established(ctx, 2)
    waited = 0
    while waited <= ctx.session_ms + 1000:
        await ctx.advance(1000)
        waited += 1000
        await a.heartbeat()
    r = await b.heartbeat(apply=False)
    if r.error_code not in (ctx.target.error_code("UNKNOWN_MEMBER_ID"), ctx.target.error_code("FENCED_MEMBER_EPOCH")):
        raise Violation("a heartbeat after the session timeout passed in silence",
                        "UNKNOWN_MEMBER_ID (or FENCED_MEMBER_EPOCH)", error_text(r.error_code, ctx.target.error_codes))


# ---------------------------------------------------------------- epochs and targets

async def _epoch_bump(ctx: CoordinatorContext, change: Callable[[list[DraftWorker]], Any], what: str) -> None:
    ws, epoch = await established(ctx, 2)
    await change(ws)
    chosen, p = await next_compute(ctx, [w for w in ws if w.epoch >= 0])
    ctx.check(p.group_epoch > epoch, f"group epoch after {what}", f"> {epoch}", p.group_epoch)


@case("C848-EPOCH-01")
async def epoch_on_join(ctx: CoordinatorContext) -> None:
    async def change(ws: list[DraftWorker]) -> None:
        c = await worker(ctx, "c")
        ok_or_compute(ctx, await c.join(), "c's first heartbeat")
        ws.append(c)
    await _epoch_bump(ctx, change, "a worker joined")


@case("C848-EPOCH-02")
async def epoch_on_assignor_list(ctx: CoordinatorContext) -> None:
    async def change(ws: list[DraftWorker]) -> None:
        ws[1].assignors = ws[1].assignors + [Assignor(name="other", minimum=0, maximum=2, version=2,
                                                      metadata=ws[1].assignors[0].metadata)]
        ok_or_compute(ctx, await ws[1].heartbeat(full=True), "heartbeat with a new assignor list")
    await _epoch_bump(ctx, change, "a worker changed its assignors")


async def _one_assignor_field(ctx: CoordinatorContext, field: str) -> None:
    """Change one field of a worker's assignor, every other field the same."""
    async def change(ws: list[DraftWorker]) -> None:
        a = ws[1].assignors[0]
        if field == "metadata":
            a.metadata = a.metadata[:-1] + bytes([(a.metadata[-1] + 1) % 256])  # e.g. a new config offset
        else:
            a.reason = (a.reason + 1) % 100   # e.g. a scheduled delay ended (Triggering Rebalances)
        ok_or_compute(ctx, await ws[1].heartbeat(full=True), f"heartbeat with a new assignor {field} alone")
    await _epoch_bump(ctx, change, f"a worker changed its assignor {field} alone")


@case("C848-EPOCH-03")
async def epoch_on_metadata(ctx: CoordinatorContext) -> None:
    await _one_assignor_field(ctx, "metadata")


@case("C848-EPOCH-07")
async def epoch_on_reason(ctx: CoordinatorContext) -> None:
    await _one_assignor_field(ctx, "reason")


@case("C848-EPOCH-04")
async def epoch_on_leave(ctx: CoordinatorContext) -> None:
    async def change(ws: list[DraftWorker]) -> None:
        expect(ctx, await ws[1].leave(), "NONE", "leave")
        ws[1].epoch = -1
        ws.pop()
    await _epoch_bump(ctx, change, "a worker left")


@case("C848-EPOCH-06")
async def no_change_no_bump(ctx: CoordinatorContext) -> None:
    ws, epoch = await established(ctx, 2)
    for _ in range(3):
        for w in ws:
            r = await w.heartbeat()
            ctx.check(r.error_code == 0, "heartbeats that change nothing", "answered NONE (no new assignment asked)",
                      error_text(r.error_code, ctx.target.error_codes))


@case("C848-TGT-01")
async def compute_asked(ctx: CoordinatorContext) -> None:
    w = await worker(ctx, "w1")
    ok_or_compute(ctx, await w.join(), "first heartbeat")
    await next_compute(ctx, [w])


@case("C848-ASSIGN-01")
async def compute_in_heartbeat(ctx: CoordinatorContext) -> None:
    (a,), epoch = await established(ctx)
    b = await worker(ctx, "b")
    ok_or_compute(ctx, await b.join(), "b's first heartbeat")
    chosen, p = await next_compute(ctx, [a, b])
    ctx.check(chosen.last.error_code == ctx.target.error_code("COMPUTE_ASSIGNMENT"), "the selected worker's heartbeat answer",
              "COMPUTE_ASSIGNMENT", error_text(chosen.last.error_code, ctx.target.error_codes))


@case("C848-ASSIGN-02")
async def compute_response_valid(ctx: CoordinatorContext) -> None:
    w = await worker(ctx, "w1")
    ok_or_compute(ctx, await w.join(), "first heartbeat")
    chosen, p = await next_compute(ctx, [w])
    r = chosen.last
    ctx.check(r.member_epoch >= 0 and r.heartbeat_interval_ms > 0, "MemberEpoch and HeartbeatIntervalMs of a COMPUTE_ASSIGNMENT answer",
              "epoch >= 0, interval > 0", (r.member_epoch, r.heartbeat_interval_ms))


@case("C848-TGT-02")
async def epoch_of_target(ctx: CoordinatorContext) -> None:
    ws, epoch = await established(ctx, 2)
    for w in ws:
        ctx.expect_equal(w.epoch, epoch, f"{w.name}'s member epoch after converging to the target installed at {epoch}")


# ---------------------------------------------------------------- reconciliation (the worker-joins case study)

async def _w2_joins(ctx: CoordinatorContext) -> tuple[DraftWorker, DraftWorker, DraftWorker, Any]:
    """W1 runs everything; W2 joins; returns (w1, w2, the worker asked to compute, its Prepare)."""
    (w1,), e1 = await established(ctx)
    w2 = await worker(ctx, "w2")
    ok_or_compute(ctx, await w2.join(), "w2's first heartbeat")
    chosen, p = await next_compute(ctx, [w1, w2])
    return w1, w2, chosen, p


async def _split_installed(ctx: CoordinatorContext, **kw: Any) -> tuple[DraftWorker, DraftWorker, Any]:
    """W1 runs everything; W2 joins; W1: A*, W2: B* installed (nothing acknowledged yet)."""
    w1, w2, chosen, p = await _w2_joins(ctx)
    expect(ctx, await chosen.install(p.group_epoch, {w1.member_id: SPLIT_A, w2.member_id: SPLIT_B}, **kw),
           "NONE", "install")
    return w1, w2, p


async def _second_joins(ctx: CoordinatorContext) -> dict[str, Any]:
    """W1 runs everything; W2 joins; the selected worker installs W1: A*, W2: B*. Observes the
    reconciliation step by step without acknowledging anything automatically."""
    w1, w2, p = await _split_installed(ctx)
    e2 = p.group_epoch
    out: dict[str, Any] = {"w1": w1, "w2": w2, "e1": w1.epoch, "e2": e2}
    r1 = await w1.heartbeat(apply=False)
    out["w1_first"] = r1
    r2 = await w2.heartbeat(apply=False)
    out["w2_first"] = r2
    w2.epoch = r2.member_epoch
    if r2.assignment is not None:
        w2.owned = work_of(r2.assignment.connectors_and_tasks)
    # W1 releases what it was asked to and acknowledges.
    if r1.assignment is not None:
        w1.owned = work_of(r1.assignment.connectors_and_tasks)
    w1.epoch = r1.member_epoch
    out["w1_ack"] = await w1.heartbeat()
    out["w2_after"] = await w2.heartbeat()
    return out


@case("C848-RECON-01")
async def revoke_first(ctx: CoordinatorContext) -> None:
    s = await _second_joins(ctx)
    r = s["w1_first"]
    ctx.check(r.assignment is not None, "w1's heartbeat after the new target", "an Assignment (the revocation)", None)
    ctx.expect_equal(work_of(r.assignment.connectors_and_tasks), SPLIT_A, "w1's assignment: its work minus B's")
    ctx.expect_equal(r.member_epoch, s["e1"], "w1's epoch until it acknowledges the revocation")


@case("C848-RECON-02")
async def ack_moves_to_target(ctx: CoordinatorContext) -> None:
    s = await _second_joins(ctx)
    ctx.expect_equal(s["w1_ack"].member_epoch, s["e2"], "w1's epoch once it reported releasing B")


@case("C848-RECON-03")
async def withheld_until_released(ctx: CoordinatorContext) -> None:
    s = await _second_joins(ctx)
    first = s["w2_first"]
    got = work_of(first.assignment.connectors_and_tasks) if first.assignment is not None else Work()
    ctx.check(not (got.tasks & SPLIT_B.tasks or got.connectors & SPLIT_B.connectors),
              "w2's work while w1 still owns B", "nothing of B", got.show())
    ctx.expect_equal(s["w2"].owned, SPLIT_B, "w2's work once w1 released B")


@case("C848-RECON-04")
async def nothing_to_revoke(ctx: CoordinatorContext) -> None:
    s = await _second_joins(ctx)
    ctx.expect_equal(s["w2_first"].member_epoch, s["e2"], "epoch of w2 (nothing to revoke) at its next heartbeat")


@case("C848-RECON-05")
async def revocation_timeout(ctx: CoordinatorContext) -> None:
    w1, w2, p = await _split_installed(ctx)
    waited = 0
    while waited <= ctx.rebalance_ms + 1000:  # w1 heartbeats but keeps reporting all the work
        r = await w1.heartbeat(apply=False, owned=ALL)
        if r.error_code not in (0, ctx.target.error_code("COMPUTE_ASSIGNMENT")):
            return
        await w2.heartbeat()
        await ctx.advance(1000)
        waited += 1000
    raise Violation("a worker keeping revoked work past its rebalance timeout", "removed (fenced or unknown)",
                    "still accepted")


def only_one_way(ctx: CoordinatorContext, what: str, before: Work, new: Work) -> None:
    ctx.check(new <= before or before <= new, what, "only a revocation or only an addition",
              {"before": before.show(), "after": new.show()})


@case("C848-RECON-06")
async def never_both(ctx: CoordinatorContext) -> None:
    s = await _second_joins(ctx)
    for name, key, before in (("w1", "w1_first", ALL), ("w2", "w2_first", Work())):
        r = s[key]
        if r.assignment is not None:
            only_one_way(ctx, f"{name}'s Assignment (w2 joins)", before, work_of(r.assignment.connectors_and_tasks))
    await _swap(ctx)


async def _swap(ctx: CoordinatorContext) -> None:
    """The swap: x owns A and is given B, y owns B and is given A. Each must first be told
    to release its work (nothing added), and gets the other's only once it was released."""
    ws, e = await established(ctx, 2, halves, group_id=ctx.group_id + "-swap")
    x = next(w for w in ws if w.owned == SPLIT_A)
    y = next(w for w in ws if w is not x)
    x.assignors[0].reason += 1   # a new group epoch, so that someone computes again
    ok_or_compute(ctx, await x.heartbeat(full=True), "x's heartbeat with a new Reason")
    chosen, p = await next_compute(ctx, [x, y])
    expect(ctx, await chosen.install(p.group_epoch, {x.member_id: SPLIT_B, y.member_id: SPLIT_A}), "NONE",
           "install of the swap")
    want = {x.name: SPLIT_B, y.name: SPLIT_A}
    for _ in range(10):
        for w in (x, y):
            r = await w.heartbeat(apply=False)
            ok_or_compute(ctx, r, f"{w.name}'s heartbeat during the swap")
            if r.assignment is not None:
                new = work_of(r.assignment.connectors_and_tasks)
                only_one_way(ctx, f"{w.name}'s Assignment during the swap", w.owned, new)
                other = y if w is x else x
                ctx.check(not (new - w.owned) or not ((new - w.owned).tasks & other.owned.tasks
                                                      or (new - w.owned).connectors & other.owned.connectors),
                          f"work given to {w.name} during the swap", "none still owned by the other worker",
                          {"given": (new - w.owned).show(), "other owns": other.owned.show()})
                w.owned = new
            w.epoch = r.member_epoch
        if all(w.owned == want[w.name] and w.epoch == p.group_epoch for w in (x, y)):
            return
        await ctx.advance(100)
    raise Violation("the swap", "each worker at the new epoch with the other's work",
                    {w.name: (w.epoch, w.owned.show()) for w in (x, y)})


@case("C848-RECON-09")
async def null_tasks_not_an_ack(ctx: CoordinatorContext) -> None:
    w1, w2, p = await _split_installed(ctx)
    e1 = w1.epoch
    r = await w1.heartbeat(apply=False)
    if r.assignment is None or work_of(r.assignment.connectors_and_tasks) != SPLIT_A:
        raise Violation("setup: w1 asked to release B", SPLIT_A.show(), r.assignment)
    for _ in range(3):   # w1 keeps B and says so with a null ConnectorsAndTasks ("unchanged")
        r = await w1.heartbeat(apply=False, connectors_and_tasks=None)
        ok_or_compute(ctx, r, "w1's heartbeat with ConnectorsAndTasks null")
        ctx.expect_equal(r.member_epoch, e1, "w1's epoch while its heartbeats leave ConnectorsAndTasks null "
                                             "(the revocation is not acknowledged)")
        await w2.heartbeat()
        ctx.check(not (w2.owned.tasks & SPLIT_B.tasks or w2.owned.connectors & SPLIT_B.connectors),
                  "w2's work while w1 has not reported releasing B", "nothing of B", w2.owned.show())
        await ctx.advance(100)


@case("C848-RECON-10")
async def payload_relayed(ctx: CoordinatorContext) -> None:
    w1, w2, chosen, p = await _w2_joins(ctx)
    units = {w1.member_id: [("A", -1), ("A", 0), ("A", 1)], w2.member_id: [("B", -1), ("B", 0)]}
    payloads = {w.member_id: (v, assignment_bytes(v, leader=chosen.member_id, assigned=units[w.member_id]))
                for w, v in ((w1, 1), (w2, 2))}
    expect(ctx, await chosen.install(p.group_epoch, {w1.member_id: SPLIT_A, w2.member_id: SPLIT_B},
                                     payloads=payloads), "NONE", "install with per-member Version and Metadata")
    seen: dict[str, int] = {w1.name: 0, w2.name: 0}
    for _ in range(8):
        for w in (w1, w2):
            r = await w.heartbeat()
            if r.assignment is not None and r.member_epoch == p.group_epoch:
                version, metadata = payloads[w.member_id]
                ctx.expect_equal(r.assignment.version, version, f"Version in {w.name}'s Assignment (as installed)")
                ctx.expect_equal(bytes(r.assignment.metadata), metadata,
                                 f"Metadata in {w.name}'s Assignment (as installed, byte for byte)")
                seen[w.name] += 1
        await ctx.advance(100)
    ctx.check(all(seen.values()), "Assignments at the installed epoch", "one for each worker", seen)


@case("C848-RECON-07")
async def assignment_only_on_change(ctx: CoordinatorContext) -> None:
    ws, epoch = await established(ctx, 2)
    for w in ws:
        r = await w.heartbeat()
        ctx.check(r.assignment is None, f"{w.name}'s steady-state heartbeat", "Assignment null", r.assignment)


@case("C848-RECON-08")
async def complete_sets(ctx: CoordinatorContext) -> None:
    s = await _second_joins(ctx)
    r = s["w2_after"]
    if r.assignment is not None:
        ctx.expect_equal(work_of(r.assignment.connectors_and_tasks), SPLIT_B, "w2's Assignment (its whole set)")
    ctx.expect_equal(s["w2"].owned, SPLIT_B, "w2's work")


# ---------------------------------------------------------------- assignor and worker selection

@case("C848-ASSIGNOR-01")
async def common_assignor(ctx: CoordinatorContext) -> None:
    a = await worker(ctx, "a", assignors=[Assignor(name="incremental"), Assignor(name="eager", maximum=0, version=0)])
    b = await worker(ctx, "b", assignors=[Assignor(name="eager", maximum=0, version=0)])
    for w in (a, b):
        ok_or_compute(ctx, await w.join(), f"{w.name}'s first heartbeat")
    chosen, p = await next_compute(ctx, [a, b])
    ctx.expect_equal(p.assignor_name, "eager", "assignor selected (the only one both support)")


@case("C848-ASSIGNOR-02")
async def covering_worker_selected(ctx: CoordinatorContext) -> None:
    ws = [await worker(ctx, n, assignors=[Assignor(minimum=lo, maximum=hi, version=lo)])
          for n, lo, hi in (("b", 3, 4), ("c", 2, 4), ("a", 1, 5))]
    for w in ws:
        ok_or_compute(ctx, await w.join(), f"{w.name}'s first heartbeat")
    chosen, p = await next_compute(ctx, ws, rounds=12)
    ctx.expect_equal(chosen.name, "a", "worker asked to compute (the only one covering [1-5], [3-4], [2-4])")


@case("C848-ASSIGNOR-03")
async def no_covering_worker(ctx: CoordinatorContext) -> None:
    a = await worker(ctx, "a", assignors=[Assignor(minimum=1, maximum=2, version=1)])
    ok_or_compute(ctx, await a.join(), "a's first heartbeat")
    b = await worker(ctx, "b", assignors=[Assignor(minimum=2, maximum=3, version=2)])
    expect(ctx, await b.join(apply=False), "UNSUPPORTED_ASSIGNOR",
           "a worker [2-3] joining [1-2]: no member would cover every range")


# ---------------------------------------------------------------- assignment validation and errors

async def _install_attempt(ctx: CoordinatorContext, build: Callable[[DraftWorker, DraftWorker, Any], dict[str, Any]]) -> Any:
    (a,), e = await established(ctx)
    b = await worker(ctx, "b")
    ok_or_compute(ctx, await b.join(), "b's first heartbeat")
    chosen, p = await next_compute(ctx, [a, b])
    kw = build(a, b, p)
    return await chosen.install(p.group_epoch, **kw)


@case("C848-VALID-01")
async def duplicate_unit(ctx: CoordinatorContext) -> None:
    r = await _install_attempt(ctx, lambda a, b, p: {"assignment": {a.member_id: ALL, b.member_id: Work.of([], [("A", 0)])}})
    expect(ctx, r, "INVALID_ASSIGNMENT", "an assignment giving task A/0 to two workers")


@case("C848-VALID-02")
async def unknown_member_in_assignment(ctx: CoordinatorContext) -> None:
    r = await _install_attempt(ctx, lambda a, b, p: {"assignment": {a.member_id: ALL, b.member_id: Work(),
                                                                    "worker-ghost": Work.of(["C"])}})
    expect(ctx, r, "INVALID_ASSIGNMENT", "an assignment naming a worker that is not a member")


@case("C848-VALID-04")
async def validated_against_its_epoch(ctx: CoordinatorContext) -> None:
    (a, b), e = await established(ctx, 2)
    c = await worker(ctx, "c")
    ok_or_compute(ctx, await c.join(), "c's first heartbeat")
    chosen, p = await next_compute(ctx, [a, b, c])
    leaver = next(w for w in (a, b, c) if w is not chosen)
    expect(ctx, await leaver.leave(), "NONE", "a worker leaving while the assignment is computed")
    r = await chosen.install(p.group_epoch, {w.member_id: (ALL if w is chosen else Work()) for w in (a, b, c)})
    expect(ctx, r, "NONE", "an assignment computed for the membership before the worker left")


@case("C848-VALID-05")
async def negative_task_in_install(ctx: CoordinatorContext) -> None:
    r = await _install_attempt(ctx, lambda a, b, p: {"assignment": {a.member_id: ALL, b.member_id: Work()},
                                                     "raw_tasks": {b.member_id: [("C", -1)]}})
    expect(ctx, r, "INVALID_ASSIGNMENT", "an assignment with TaskId -1")


@case("C848-ERR-01")
async def assignor_error_keeps_work(ctx: CoordinatorContext) -> None:
    (a,), e = await established(ctx)
    b = await worker(ctx, "b")
    ok_or_compute(ctx, await b.join(), "b's first heartbeat")
    chosen, p = await next_compute(ctx, [a, b])
    expect(ctx, await chosen.install(p.group_epoch, {a.member_id: Work(), b.member_id: ALL}, error=1), "NONE",
           "an install carrying assignor error 1")
    errors = set()
    for _ in range(4):
        for w in (a, b):
            r = await w.heartbeat()
            if r.assignment is not None:
                errors.add(r.assignment.error)
    ctx.expect_equal(a.owned, ALL, "a's work after an install with an error (kept)")
    ctx.expect_equal(b.owned, Work(), "b's work after an install with an error (unchanged)")
    ctx.check(1 in errors, "Assignment.Error seen by the workers", "1", sorted(errors))


# ---------------------------------------------------------------- migration from the classic protocol

async def _classic_group(ctx: CoordinatorContext) -> tuple[list[Any], Any]:
    members = [await ctx.member(f"classic{i}") for i in (1, 2)]
    gen = await ctx.form_group(members)
    return members, gen


@case("C848-MIG-01")
async def conversion_keeps_generation(ctx: CoordinatorContext) -> None:
    members, gen = await _classic_group(ctx)
    w = await worker(ctx, "new")
    ok_or_compute(ctx, await w.join(), "the first worker of the new protocol joining a classic group")
    chosen, p = await next_compute(ctx, [w])
    ctx.check(p.group_epoch > gen.generation, "group epoch after the conversion",
              f"> the classic generation {gen.generation}", p.group_epoch)


@case("C848-MIG-02")
async def reverts_to_classic(ctx: CoordinatorContext) -> None:
    members, gen = await _classic_group(ctx)
    w = await worker(ctx, "new")
    ok_or_compute(ctx, await w.join(), "the new-protocol worker joining")
    expect(ctx, await w.leave(), "NONE", "the only new-protocol worker leaving")
    d = await members[0].describe()
    ctx.expect_equal(d.protocol_type, "connect", "protocol type of the group after the revert (classic connect group)")


@case("C848-MIG-03")
async def classic_members_told_to_rejoin(ctx: CoordinatorContext) -> None:
    members, gen = await _classic_group(ctx)
    w = await worker(ctx, "new")
    ok_or_compute(ctx, await w.join(), "the new-protocol worker joining")
    errors = set()
    for _ in range(5):
        for m in members:
            errors.add((await m.heartbeat()).error_code)
        await w.heartbeat()
        await ctx.advance(500)
    ctx.check(int(ErrorCode.REBALANCE_IN_PROGRESS) in errors, "classic members' heartbeats after the conversion",
              "REBALANCE_IN_PROGRESS (rejoin to get a new assignment)", [error_text(e, ctx.target.error_codes) for e in sorted(errors)])

