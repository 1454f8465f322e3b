"""The draft's records (C848-REC-*), checked from outside: a coordinator claiming
``group-log`` writes its connect groups' records to the topic its target declares
(``[group_log]``) on a real Kafka; the cases drive a group with scripted workers, read the
topic back (Fetch, partition 0, from its start) and decode every record of the case's
group with the record specs (``schemas/records/``), independently of any coordinator's
own code: key = int16 type + key struct (version 0), value = int16 version + value
struct, a null value a tombstone.

A coordinator may write after it answers; reading polls the topic until the state a case
waits for is there, within a bound.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakebroker.client import ClientError, KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.realkafka.records import Record, fetch_all

from ...harness.cases import case
from ...harness.connect848 import DraftWorker, Work, work_of
from ...harness.context import CoordinatorContext
from ...harness.outcomes import Broken, Violation
from .draft_connect import established, expect, halves, next_compute, ok_or_compute

GROUP, UNITS, MEMBER, TARGET, CURRENT, CONFIG, TARGET_MEMBER = 1003, 1004, 1005, 1006, 1007, 1008, 1009
MEMBER_KEYED = (MEMBER, CURRENT, TARGET_MEMBER)


def record_specs() -> dict[int, tuple[Any, Any]]:
    """Record type -> (key spec, value spec), from the registry's coordinator-key specs."""
    reg = default_registry()
    out = {}
    for mt in reg.types.values():
        if mt.spec.type == "coordinator-key" and mt.name.startswith("ConnectWorkerGroup"):
            out[mt.spec.api_key] = (mt, reg[mt.name.removesuffix("Key") + "Value"])
    return out


SPECS = record_specs()


@dataclass(frozen=True)
class Decoded:
    offset: int
    type: int
    key: Any
    value: Any          # None: a tombstone
    value_version: int | None

    @property
    def member_id(self) -> str | None:
        return self.key.member_id if self.type in MEMBER_KEYED else None


def decode(r: Record) -> Decoded:
    """One record by the record specs; a Violation naming the offset and the rule otherwise."""
    where = f"record at offset {r.offset}"
    if r.key is None or len(r.key) < 2:
        raise Violation(f"{where}: key", "int16 record type + key struct", r.key)
    (rtype,) = struct.unpack_from(">h", r.key)
    if rtype not in SPECS:
        raise Violation(f"{where}: record type", f"one of {sorted(SPECS)}", rtype)
    key_mt, value_mt = SPECS[rtype]
    try:
        key = key_mt.decode(r.key[2:], 0, base=2)
    except Exception as e:  # noqa: BLE001 - the decoding error is the finding
        raise Violation(f"{where}: key of type {rtype} at key version 0", "decodes exactly", str(e)) from None
    if r.value is None:
        return Decoded(r.offset, rtype, key, None, None)
    if len(r.value) < 2:
        raise Violation(f"{where}: value", "int16 version + value struct", r.value)
    (version,) = struct.unpack_from(">h", r.value)
    if not value_mt.supports(version):
        raise Violation(f"{where}: value version of type {rtype}", f"one of {value_mt.spec.valid_versions}", version)
    try:
        value = value_mt.decode(r.value[2:], version, base=2)
    except Exception as e:  # noqa: BLE001
        raise Violation(f"{where}: value of type {rtype} at version {version}", "decodes exactly", str(e)) from None
    return Decoded(r.offset, rtype, key, value, version)


async def group_records(ctx: CoordinatorContext) -> list[Decoded]:
    """Every record of the case's group on the declared topic, decoded, in log order."""
    gl = ctx.target.group_log
    if gl is None or ctx.group_log_bootstrap is None:
        raise Broken("the target declares no [group_log] to read")
    try:
        async with await KafkaConnection.open(ctx.group_log_bootstrap, client_id="conformance-group-log") as conn:
            raw = await fetch_all(conn, gl.topic, 0)
    except (ClientError, OSError) as e:
        raise Broken(f"cannot read {gl.topic} at {ctx.group_log_bootstrap}: {e}") from None
    out = []
    for r in raw:
        d = decode(r)
        if d.key.group_id == ctx.group_id:
            out.append(d)
    return out


def latest(records: list[Decoded]) -> dict[tuple[int, str | None], Decoded]:
    """The compacted view: the last record of every key (tombstones included)."""
    return {(d.type, d.member_id): d for d in records}


async def log_until(ctx: CoordinatorContext, ok: Callable[[list[Decoded]], bool], what: str,
                    within_s: float = 15.0) -> list[Decoded]:
    """The group's records once ``ok`` holds of them (a coordinator may write after it
    answers); a Violation with the last view if it never does."""
    deadline = time.monotonic() + within_s
    while True:
        records = await group_records(ctx)
        if ok(records):
            return records
        if time.monotonic() >= deadline:
            view = {f"{t}/{m}": (None if d.value is None else str(d.value)[:120]) for (t, m), d in latest(records).items()}
            raise Violation(what, "written to the group log", view)
        await asyncio.sleep(0.2)  # polling the topic; the bound is the deadline


async def converged(ctx: CoordinatorContext) -> tuple[list[DraftWorker], int, list[Decoded]]:
    """Two workers at their installed target (A* and B*), and the log once it shows it."""
    ws, epoch = await established(ctx, 2, halves)

    def shown(records: list[Decoded]) -> bool:
        view = latest(records)   # (a group record is written before its members reach its epoch)
        return all(
            (CURRENT, w.member_id) in view and view[(CURRENT, w.member_id)].value is not None
            and view[(CURRENT, w.member_id)].value.member_epoch == epoch for w in ws)
    return ws, epoch, await log_until(ctx, shown, f"both workers' current assignments at epoch {epoch}")


@case("C848-REC-04")
async def records_well_formed(ctx: CoordinatorContext) -> None:
    ws, epoch, records = await converged(ctx)   # decoding every record is the check
    ctx.check(bool(records), "records of the group on the log", "some", len(records))
    types = sorted({d.type for d in records})
    for t in (GROUP, UNITS, MEMBER, TARGET, CURRENT):
        ctx.check(t in types, f"record type {t} among the group's records", "present", types)
    ctx.note(f"{len(records)} records of the group decoded, types {types}")


@case("C848-REC-01")
async def group_as_records(ctx: CoordinatorContext) -> None:
    ws, epoch, records = await converged(ctx)
    view = latest(records)
    live_members = sorted(m for (t, m), d in view.items() if t == MEMBER and d.value is not None)
    ctx.expect_equal(live_members, sorted(w.member_id for w in ws), "member metadata records (one per member)")
    for t, what in ((UNITS, "connectors/tasks record"), (GROUP, "group record")):
        ctx.check((t, None) in view and view[(t, None)].value is not None, f"the group's {what}", "one, live", None)
    ctx.expect_equal(view[(GROUP, None)].value.epoch, epoch, "Epoch of the group record (the group epoch)")
    target = view.get((TARGET, None))
    ctx.check(target is not None and target.value is not None and target.value.assignment_epoch == epoch,
              "AssignmentEpoch of the target assignment record", epoch,
              None if target is None or target.value is None else target.value.assignment_epoch)
    everything = Work()
    for w in ws:
        cur = view[(CURRENT, w.member_id)].value
        ctx.expect_equal(cur.member_epoch, w.epoch, f"MemberEpoch of {w.name}'s current assignment record")
        ctx.expect_equal(work_of(cur.connectors_and_tasks), w.owned, f"work in {w.name}'s current assignment record")
        everything = everything | w.owned
    ctx.expect_equal(work_of(view[(UNITS, None)].value.connectors_and_tasks), everything,
                     "the connectors/tasks record (the union of the installed target, ERRATA 20)")
    epochs_in_order(ctx, records)


def epochs_in_order(ctx: CoordinatorContext, records: list[Decoded]) -> None:
    """Over the whole log: each group record a new, higher epoch; each target written for
    a group epoch already recorded (a target is computed from the group's metadata)."""
    group_epoch = None
    for d in records:
        if d.value is None:
            continue
        if d.type == GROUP:
            ctx.check(group_epoch is None or d.value.epoch > group_epoch, f"group record at offset {d.offset}",
                      f"an epoch above the previous one ({group_epoch})", d.value.epoch)
            group_epoch = d.value.epoch
        elif d.type == TARGET:
            ctx.check(group_epoch is not None and d.value.assignment_epoch <= group_epoch,
                      f"target assignment record at offset {d.offset}",
                      f"an AssignmentEpoch the group record already reached ({group_epoch})",
                      d.value.assignment_epoch)


async def _leave_and_read(ctx: CoordinatorContext) -> tuple[DraftWorker, list[Decoded]]:
    ws, epoch, _ = await converged(ctx)
    stay, gone = ws
    expect(ctx, await gone.leave(), "NONE", f"{gone.name} leaving")
    for _ in range(5):
        ok_or_compute(ctx, await stay.heartbeat(), f"{stay.name}'s heartbeat after {gone.name} left")
        await ctx.advance(100)

    def tombstoned(records: list[Decoded]) -> bool:
        view = latest(records)
        return all((t, gone.member_id) in view and view[(t, gone.member_id)].value is None for t in (MEMBER, CURRENT))
    records = await log_until(ctx, tombstoned, f"tombstones for {gone.name}'s records after it left")
    return gone, records


async def _last_is_tombstone(ctx: CoordinatorContext, record_type: int, what: str) -> None:
    gone, records = await _leave_and_read(ctx)
    last = latest(records)[(record_type, gone.member_id)]
    ctx.check(last.value is None, f"the last {what} record of {gone.name} (it left)", "a tombstone",
              str(last.value))


@case("C848-REC-02")
async def member_tombstone(ctx: CoordinatorContext) -> None:
    await _last_is_tombstone(ctx, MEMBER, "member metadata")


@case("C848-REC-03")
async def current_assignment_tombstone(ctx: CoordinatorContext) -> None:
    await _last_is_tombstone(ctx, CURRENT, "current assignment")


@case("C848-REC-05")
async def unchanged_member_not_rewritten(ctx: CoordinatorContext) -> None:
    ws, epoch, before = await converged(ctx)
    mark = max(d.offset for d in before)
    still, changer = ws
    changer.assignors[0].reason += 1   # a new group epoch that changes nothing of ``still``
    ok_or_compute(ctx, await changer.heartbeat(full=True), f"{changer.name}'s heartbeat with a new Reason")
    chosen, p = await next_compute(ctx, ws)
    expect(ctx, await chosen.install(p.group_epoch, {w.member_id: w.owned for w in ws}), "NONE", "install (same work)")
    for _ in range(4):
        for w in ws:
            ok_or_compute(ctx, await w.heartbeat(), f"{w.name}'s heartbeat")
        await ctx.advance(100)
    records = await log_until(ctx, lambda rs: any(d.type == GROUP and d.value is not None
                                                  and d.value.epoch == p.group_epoch for d in rs),
                              f"the group record at epoch {p.group_epoch}")
    rewritten = [d.offset for d in records if d.offset > mark and d.type == MEMBER and d.member_id == still.member_id]
    ctx.check(not rewritten, f"member metadata records of {still.name} (unchanged) after the new epoch",
              "none rewritten", f"rewritten at offsets {rewritten}")
