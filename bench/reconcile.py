"""CPU cost of reconciling a group after one member joins and after one leaves.

A group of N members owning 10 x N units has converged (built from its records, not
timed). Then one member joins, and every member heartbeats once per round, honestly
(revoking at once, acknowledging in its next heartbeat), until every member is STABLE at
the new target with exactly its units; then that member leaves, and the group converges
again. Each of the two is timed alone: the engine's work and the scripted members' (small)
share. Time is virtual: a round is one heartbeat interval, or N virtual ms when that is
longer (connect groups' sessions are then lengthened to 3 N ms, so no member expires
between its own heartbeats). The per-heartbeat column is the figure to compare across N
(it should stay flat).

A pair of rows (join, leave) is one group, through cycles of a join and the newcomer's
leave, so that every run makes the same change to the same group (a row of joins alone
would drift from 10 units a member, and the assignors would move more units run after
run). A row's figure is its runs' CPU over their heartbeats, not a median of runs, with
the full collections of both rows charged to both per heartbeat (the cycle is periodic,
so they tend to fall in the same half of every cycle). With the collector on, cycles go
on until the runs hold ``--full-collections`` of the collector's automatic full
collections, so that every size pays for as many as its changes cause. (CPython runs one
once the objects promoted to the old generation since the last one exceed a quarter of
it: a steady share per promoted object, but one 10,000-member run holds one where one
1000-member run holds none, and its 2000 heartbeats do not even reach a middle-generation
collection.) The count and the CPU of the full collections, and
of all the collector's work, are printed beside each row (timed with ``gc.callbacks``).
Rows also run for at least ``--repeats`` runs and ``--min-heartbeats`` heartbeats, and
for at most 200 cycles (a row that stops short of its full collections says so). The
setup's garbage is collected before the first run. ``--no-gc`` times with the collector
off (its share, by difference).

The engines write to a ``CompactedRecordStore`` (what a compacted log keeps): an
append-only in-memory log would grow with every run, so a row's heap, and what its full
collections walk, would depend on how many runs it took.

Groups: consumer groups with the ``uniform`` and ``range`` server-side assignors (units are
partitions of one topic; ``consumer/static`` is ``uniform`` with static members, each
heartbeat naming its instance id as Kafka's consumer does), and connect groups (units are
connectors and tasks; the selected worker installs a balanced sticky target computed in
the bench, not timed separately).

    python bench/reconcile.py                 # N = 10, 100, 1000
    python bench/reconcile.py --sizes 1000 10000
    python bench/reconcile.py --sizes 1000 10000 --no-gc
    python bench/reconcile.py --sizes 10 100 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakebroker.coordinator.reconcile import (ClientAssignor, ConnectUnit, EngineConfig,  # noqa: E402
                                              GroupEngine, MemberMetadata, MemberState,
                                              ServerAssigned, TopicPartition, UniformAssignor,
                                              RangeAssignor, AssignmentSpec, topic_catalog)
from fakebroker.coordinator.reconcile.assignors import AssignorMember  # noqa: E402
from fakebroker.coordinator.reconcile.connect import connect_policy  # noqa: E402
from fakebroker.coordinator.reconcile.member import NO_PAYLOAD  # noqa: E402
from fakebroker.coordinator.reconcile.records import (CompactedRecordStore,  # noqa: E402
                                                      CurrentAssignmentRecord,
                                                      CurrentAssignmentValue,
                                                      GroupMetadataRecord, MemberMetadataRecord,
                                                      MemberMetadataValue, Record,
                                                      TargetAssignmentMemberRecord,
                                                      TargetAssignmentMetadataRecord,
                                                      TargetMemberValue, UnitSetMetadataRecord)
from fakebroker.testing.reconcile_sim import Driver, SimMember, round_robin_installer  # noqa: E402
from fakebroker.coordinator.reconcile.units import sorted_units  # noqa: E402

GROUP = "bench"
EPOCH = 100
TOPIC = "t"
ASSIGNORS = (ClientAssignor("cooperative", 0, 2, version=2),)


def member_ids(n: int) -> list[str]:
    return [f"m{i:05d}" for i in range(n)]


def instance_of(member_id: str, static: bool) -> str | None:
    """A static member's instance id (static groups: every member has one)."""
    return f"i-{member_id}" if static else None


def stable_records(assignment: dict[str, frozenset[Any]], md: MemberMetadata,
                   catalog: dict[str, tuple[Any, ...]], static: bool = False) -> list[Record]:
    out: list[Record] = []
    for mid in sorted(assignment):
        out.append(MemberMetadataRecord(GROUP, mid, MemberMetadataValue(
            EPOCH, instance_of(mid, static), "", "", md.rebalance_timeout_ms,
            tuple(sorted(md.subscription)), None, md.client_assignors)))
    out.append(UnitSetMetadataRecord(GROUP, EPOCH, tuple(sorted(catalog.items()))))
    out.append(GroupMetadataRecord(GROUP, EPOCH))
    for mid in sorted(assignment):
        out.append(TargetAssignmentMemberRecord(GROUP, mid, TargetMemberValue(
            sorted_units(assignment[mid]), NO_PAYLOAD)))
    out.append(TargetAssignmentMetadataRecord(GROUP, EPOCH))
    for mid in sorted(assignment):
        out.append(CurrentAssignmentRecord(GROUP, mid, CurrentAssignmentValue(
            EPOCH, EPOCH - 1, MemberState.STABLE, sorted_units(assignment[mid]), (), NO_PAYLOAD)))
    return out


def consumer_setup(n: int, assignor: str, static: bool = False) -> Driver[TopicPartition]:
    catalog = topic_catalog({TOPIC: ("T", 10 * n)})
    md = MemberMetadata(rebalance_timeout_ms=60_000, subscription=frozenset({TOPIC}))
    spec = AssignmentSpec(tuple(AssignorMember(m, None, md.subscription, frozenset())
                                for m in member_ids(n)), catalog)
    impl = UniformAssignor() if assignor == "uniform" else RangeAssignor()
    assignment = impl.assign(spec)
    policy: ServerAssigned[TopicPartition] = ServerAssigned(
        resolver=lambda key: catalog.get(key, ()), default=assignor)
    engine: GroupEngine[TopicPartition] = GroupEngine.rebuild(
        stable_records(assignment, md, catalog, static),
        EngineConfig(GROUP, static_membership=static), policy, store=CompactedRecordStore())
    return _driver(engine, assignment, md, None)


def connect_setup(n: int) -> Driver[ConnectUnit]:
    # n connectors with 9 tasks each: 10 units per member.
    units = [ConnectUnit.instance(f"c{i:05d}") for i in range(n)] + \
        [ConnectUnit.of_task(f"c{i:05d}", t) for i in range(n) for t in range(9)]
    ids = member_ids(n)
    assignment: dict[str, set[ConnectUnit]] = {m: set() for m in ids}
    for index, unit in enumerate(sorted_units(units)):
        assignment[ids[index % n]].add(unit)
    frozen = {m: frozenset(us) for m, us in assignment.items()}
    md = MemberMetadata(rebalance_timeout_ms=60_000, client_assignors=ASSIGNORS)
    catalog = {"": sorted_units(units)}
    # Connect's 10 s session, unless a round of N heartbeats (1 virtual ms apart) lasts
    # longer: members would then expire between their own heartbeats.
    config = EngineConfig.connect(GROUP, session_timeout_ms=max(10_000, 3 * n))
    engine: GroupEngine[ConnectUnit] = GroupEngine.rebuild(
        stable_records(frozen, md, catalog), config, connect_policy(), store=CompactedRecordStore())
    return _driver(engine, frozen, md, round_robin_installer(units))


def _driver(engine: GroupEngine[Any], assignment: dict[str, frozenset[Any]], md: MemberMetadata,
            installer: Any) -> Driver[Any]:
    driver: Driver[Any] = Driver(engine, installer=installer)
    for mid, units in assignment.items():
        driver.add(SimMember(mid, subscription=md.subscription,
                             client_assignors=md.client_assignors or None, epoch=EPOCH,
                             owned=units, joined=True,
                             instance_id=instance_of(mid, engine.config.static_membership)))
    assert driver.is_stable()
    return driver


@dataclass
class Run:
    cpu_ms: float
    rounds: int
    heartbeats: int
    virtual_ms: int


class Collector:
    """The collector's automatic collections while a run is timed (a ``gc.callbacks``
    entry): how many full ones, and the CPU they and the younger ones took. With
    ``promotions``, also how many objects middle-generation collections moved to the old
    generation (what brings the next full collection nearer), counted by listing the old
    generation around each: slow, so the times are then not for comparison."""

    def __init__(self, promotions: bool = False) -> None:
        self.timing = False
        self.full = 0
        self.full_ms = 0.0
        self.all_ms = 0.0
        self.promotions = promotions
        self.promoted = 0
        self._start = 0.0
        self._old = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if not self.timing:
            return
        middle = self.promotions and info["generation"] == 1
        if phase == "start":
            if middle:
                self._old = len(gc.get_objects(2))
            self._start = time.process_time()
            return
        ms = (time.process_time() - self._start) * 1000
        self.all_ms += ms
        if middle:
            self.promoted += len(gc.get_objects(2)) - self._old
        if info["generation"] == 2:
            self.full += 1
            self.full_ms += ms


def measure(driver: Driver[Any], change: str, member_id: str, collector: Collector) -> Run:
    """``member_id`` joins (a new member) or leaves, timed until the group is stable."""
    n = len(driver.members)
    interval = driver.engine.config.heartbeat_interval_ms
    driver.step_ms = max(1, interval // (n + 1))
    start_beats, start_now = driver.heartbeats, driver.now_ms
    collector.timing = True
    t0 = time.process_time()
    if change == "join":
        new = driver.add(SimMember(member_id, subscription=frozenset({TOPIC})
                                   if isinstance(driver.engine.policy, ServerAssigned)
                                   else frozenset(), client_assignors=ASSIGNORS,
                                   instance_id=instance_of(
                                       member_id, driver.engine.config.static_membership)))
        driver.beat(new.member_id)
    else:
        driver.engine.leave(member_id, driver.now_ms)
        del driver.members[member_id]
    rounds = driver.converge(max_rounds=20)
    cpu = (time.process_time() - t0) * 1000
    collector.timing = False
    return Run(cpu, rounds, driver.heartbeats - start_beats, driver.now_ms - start_now)


MAX_RUNS = 200

KINDS: dict[str, Callable[[int], Driver[Any]]] = {
    "consumer/uniform": lambda n: consumer_setup(n, "uniform"),
    "consumer/range": lambda n: consumer_setup(n, "range"),
    "consumer/static": lambda n: consumer_setup(n, "uniform", static=True),
    "connect": connect_setup,
}


CHANGES = ("join", "leave")


def measure_rows(kind: str, n: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The join and the leave rows of one group: cycles of a join and the newcomer's leave
    until both rows have enough runs (see the module docstring)."""
    driver = KINDS[kind](n)
    collectors = {change: Collector(promotions=args.promotions) for change in CHANGES}
    runs: dict[str, list[Run]] = {change: [] for change in CHANGES}

    def enough() -> bool:
        full = sum(c.full for c in collectors.values())
        return all(len(rs) >= args.repeats and sum(r.heartbeats for r in rs) >= args.min_heartbeats
                   for rs in runs.values()) and (args.no_gc or full >= args.full_collections)

    gc.collect()  # the setup's garbage is not charged to the first run
    gc.callbacks.extend(collectors.values())
    if args.no_gc:
        gc.disable()
    try:
        cycle = 0
        while cycle < MAX_RUNS and not enough():
            # "n..." sorts after the setup's "m..." ids: the newcomer heartbeats last.
            newcomer = f"n{cycle:05d}"
            for change in CHANGES:
                runs[change].append(measure(driver, change, newcomer, collectors[change]))
            cycle += 1
    finally:
        gc.enable()
        for collector in collectors.values():
            gc.callbacks.remove(collector)
    # The cycle is periodic and so is the collector: its full collections tend to fall in
    # the same half of every cycle. Both rows are charged them per heartbeat.
    full_both = sum(c.full for c in collectors.values())
    full_ms_both = sum(c.full_ms for c in collectors.values())
    beats_both = sum(r.heartbeats for rs in runs.values() for r in rs)
    rows = []
    for change in CHANGES:
        rs, collector = runs[change], collectors[change]
        cpu, beats = sum(r.cpu_ms for r in rs), sum(r.heartbeats for r in rs)
        amortized = cpu - collector.full_ms + full_ms_both * beats / beats_both
        rows.append({
            "kind": kind, "members": n, "units": 10 * n, "change": change,
            "us_per_heartbeat": 1000 * amortized / beats, "cpu_ms": cpu, "heartbeats": beats,
            "runs": len(rs), "cpu_ms_all": [round(r.cpu_ms, 3) for r in rs],
            "full_collections": collector.full, "full_collections_both": full_both,
            "full_collection_ms": collector.full_ms, "full_collection_ms_both": full_ms_both,
            "collector_ms": collector.all_ms,
            "promoted": collector.promoted if args.promotions else None,
            "heartbeats_both": beats_both,
            "rounds": rs[0].rounds, "heartbeats_per_run": rs[0].heartbeats,
            "virtual_ms": rs[0].virtual_ms})
    return rows


def describe(r: dict[str, Any], args: argparse.Namespace) -> str:
    """A row as one line of the table."""
    per_beat = 1000 / r["heartbeats"]
    parts = [f"{r['runs']} runs, {r['heartbeats']} heartbeats, {r['cpu_ms']:.0f} ms CPU",
             f"collector {r['collector_ms'] * per_beat:.1f} us/heartbeat in this row's runs; "
             f"full collections in the cycles {r['full_collections_both']}, charged "
             f"{1000 * r['full_collection_ms_both'] / r['heartbeats_both']:.1f} us/heartbeat"]
    if args.promotions:
        parts.append(f"promoted {r['promoted'] / r['heartbeats']:.2f}/heartbeat")
    parts.append(f"a run: {r['rounds']} rounds, {r['heartbeats_per_run']} heartbeats, "
                 f"{r['virtual_ms']} virtual ms")
    short = "" if args.no_gc or r["full_collections_both"] >= args.full_collections \
        else " (fewer than --full-collections: the run limit came first)"
    return (f"{r['kind']:<17} N={r['members']:<5} {r['change']:<5} "
            f"{r['us_per_heartbeat']:6.1f} us/heartbeat  ({'; '.join(parts)}){short}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--repeats", type=int, default=5, help="runs per row, at least")
    ap.add_argument("--min-heartbeats", type=int, default=20_000,
                    help="more runs until this many heartbeats are timed: a small group's "
                         "run is short, and short runs are noisy")
    ap.add_argument("--full-collections", type=int, default=2,
                    help="with the collector on, more cycles until the timed runs hold this many "
                         "automatic full collections")
    ap.add_argument("--no-gc", action="store_true",
                    help="the garbage collector off while timing (its share, by difference)")
    ap.add_argument("--promotions", action="store_true",
                    help="also count the objects promoted to the old generation (slow: the "
                         "times are then not for comparison)")
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for kind in args.kinds:
        for n in args.sizes:
            for r in measure_rows(kind, n, args):
                rows.append(r)
                if not args.json:
                    print(describe(r, args), flush=True)
    if args.json:
        print(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                          "repeats": args.repeats, "min_heartbeats": args.min_heartbeats,
                          "full_collections": args.full_collections,
                          "collector": not args.no_gc, "results": rows}, indent=2))
    else:
        print(f"python {platform.python_version()} on {platform.machine()}, each row's CPU over its "
              f"heartbeats (at least {args.repeats} runs and {args.min_heartbeats} heartbeats"
              + ("" if args.no_gc else f", and {args.full_collections} full collections")
              + f"), garbage collector {'off' if args.no_gc else 'on'} while timing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
