"""CPU cost of reconciling a group after one member joins and after one leaves.

A group of N members owning 10 x N units has converged (built from its records, not
timed). Then one member joins (or the member with the smallest id leaves), and every
member heartbeats once per round, honestly (revoking at once, acknowledging in its next
heartbeat), until every member is STABLE at the new target with exactly its units. The
timed part is everything after the join / leave: the engine's work and the scripted
members' (small) share. Time is virtual: a round is one heartbeat interval, or N virtual
ms when that is longer (connect groups' sessions are then lengthened to 3 N ms, so no
member expires between its own heartbeats). The per-heartbeat column is the figure to
compare across N (it should stay flat). Each run starts after a full collection (the
setup's garbage is not charged to the run); a row is the median of at least ``--repeats``
runs and of enough runs to time ``--min-heartbeats`` heartbeats, so that a small group's
figure is not the median of a few 50 ms runs. ``--no-gc`` times with the collector off.

Groups: consumer groups with the ``uniform`` and ``range`` server-side assignors (units are
partitions of one topic), and connect groups (units are connectors and tasks; the selected
worker installs a balanced sticky target computed in the bench, not timed separately).

    python bench/reconcile.py                 # N = 10, 100, 1000
    python bench/reconcile.py --sizes 1000 10000 --repeats 5
    python bench/reconcile.py --sizes 1000 10000 --repeats 5 --no-gc
    python bench/reconcile.py --sizes 10 100 --repeats 9 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
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
from fakebroker.coordinator.reconcile.records import (CurrentAssignmentRecord,  # noqa: E402
                                                      CurrentAssignmentValue,
                                                      GroupMetadataRecord, MemberMetadataRecord,
                                                      MemberMetadataValue, Record,
                                                      TargetAssignmentMemberRecord,
                                                      TargetAssignmentMetadataRecord,
                                                      TargetMemberValue, UnitSetMetadataRecord)
from tests.support.reconcile_sim import Driver, SimMember, round_robin_installer  # noqa: E402
from fakebroker.coordinator.reconcile.units import sorted_units  # noqa: E402

GROUP = "bench"
EPOCH = 100
TOPIC = "t"
ASSIGNORS = (ClientAssignor("cooperative", 0, 2, version=2),)


def member_ids(n: int) -> list[str]:
    return [f"m{i:05d}" for i in range(n)]


def stable_records(assignment: dict[str, frozenset[Any]], md: MemberMetadata,
                   catalog: dict[str, tuple[Any, ...]]) -> list[Record]:
    out: list[Record] = []
    for mid in sorted(assignment):
        out.append(MemberMetadataRecord(GROUP, mid, MemberMetadataValue(
            EPOCH, None, "", "", md.rebalance_timeout_ms,
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


def consumer_setup(n: int, assignor: str) -> Driver[TopicPartition]:
    catalog = topic_catalog({TOPIC: ("T", 10 * n)})
    md = MemberMetadata(rebalance_timeout_ms=60_000, subscription=frozenset({TOPIC}))
    spec = AssignmentSpec(tuple(AssignorMember(m, None, md.subscription, frozenset())
                                for m in member_ids(n)), catalog)
    impl = UniformAssignor() if assignor == "uniform" else RangeAssignor()
    assignment = impl.assign(spec)
    policy: ServerAssigned[TopicPartition] = ServerAssigned(
        resolver=lambda key: catalog.get(key, ()), default=assignor)
    engine: GroupEngine[TopicPartition] = GroupEngine.rebuild(
        stable_records(assignment, md, catalog), EngineConfig(GROUP), policy)
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
        stable_records(frozen, md, catalog), config, connect_policy())
    return _driver(engine, frozen, md, round_robin_installer(units))


def _driver(engine: GroupEngine[Any], assignment: dict[str, frozenset[Any]], md: MemberMetadata,
            installer: Any) -> Driver[Any]:
    driver: Driver[Any] = Driver(engine, installer=installer)
    for mid, units in assignment.items():
        driver.add(SimMember(mid, subscription=md.subscription,
                             client_assignors=md.client_assignors or None, epoch=EPOCH,
                             owned=units, joined=True))
    assert driver.is_stable()
    return driver


@dataclass
class Run:
    cpu_ms: float
    rounds: int
    heartbeats: int
    virtual_ms: int


def measure(driver: Driver[Any], change: str, collector: bool = True) -> Run:
    n = len(driver.members)
    interval = driver.engine.config.heartbeat_interval_ms
    driver.step_ms = max(1, interval // (n + 1))
    start_beats, start_now = driver.heartbeats, driver.now_ms
    gc.collect()  # every run starts with the collector in the same state, not the setup's debt
    if not collector:
        gc.disable()
    t0 = time.process_time()
    if change == "join":
        new = driver.add(SimMember("m99999", subscription=frozenset({TOPIC})
                                   if isinstance(driver.engine.policy, ServerAssigned)
                                   else frozenset(), client_assignors=ASSIGNORS))
        driver.beat(new.member_id)
    else:
        gone = min(driver.members)
        driver.engine.leave(gone, driver.now_ms)
        del driver.members[gone]
    rounds = driver.converge(max_rounds=20)
    cpu = (time.process_time() - t0) * 1000
    gc.enable()
    return Run(cpu, rounds, driver.heartbeats - start_beats, driver.now_ms - start_now)


MAX_RUNS = 200

KINDS: dict[str, Callable[[int], Driver[Any]]] = {
    "consumer/uniform": lambda n: consumer_setup(n, "uniform"),
    "consumer/range": lambda n: consumer_setup(n, "range"),
    "connect": connect_setup,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--repeats", type=int, default=5, help="runs per row, at least")
    ap.add_argument("--min-heartbeats", type=int, default=20_000,
                    help=f"more runs (up to {MAX_RUNS}) until this many heartbeats are timed: "
                         "a small group's run is short, and short runs are noisy")
    ap.add_argument("--no-gc", action="store_true",
                    help="the garbage collector off while timing (its share, by difference)")
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for kind in args.kinds:
        for n in args.sizes:
            for change in ("join", "leave"):
                runs: list[Run] = []
                while len(runs) < args.repeats or (
                        sum(r.heartbeats for r in runs) < args.min_heartbeats
                        and len(runs) < MAX_RUNS):
                    runs.append(measure(KINDS[kind](n), change, collector=not args.no_gc))
                rows.append({"kind": kind, "members": n, "units": 10 * n, "change": change,
                             "cpu_ms_median": statistics.median(r.cpu_ms for r in runs),
                             "cpu_ms_all": [round(r.cpu_ms, 3) for r in runs],
                             "runs": len(runs), "rounds": runs[0].rounds, "heartbeats": runs[0].heartbeats,
                             "virtual_ms": runs[0].virtual_ms})
                if not args.json:
                    r = rows[-1]
                    print(f"{kind:<17} N={n:<5} {change:<5}  median {r['cpu_ms_median']:9.2f} ms CPU"
                          f" = {1000 * r['cpu_ms_median'] / r['heartbeats']:6.1f} us/heartbeat"
                          f"  ({r['runs']} runs; {r['rounds']} rounds, {r['heartbeats']} "
                          f"heartbeats, {r['virtual_ms']} virtual ms)", flush=True)
    if args.json:
        print(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                          "repeats": args.repeats, "min_heartbeats": args.min_heartbeats,
                          "collector": not args.no_gc, "results": rows}, indent=2))
    else:
        print(f"python {platform.python_version()} on {platform.machine()}, median of each "
              f"row's runs (at least {args.repeats}, and {args.min_heartbeats} heartbeats), "
              f"garbage collector {'off' if args.no_gc else 'on'} while timing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
