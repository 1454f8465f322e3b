"""Judging a chaos history: the group invariants (each under its catalogue id), safety (no
unit running on two workers at once for longer than a grace, from REST snapshots) and
liveness (after the last fault, every configured unit runs on exactly one worker within a
bound, and the group stops rebalancing). Pure: a history in, findings out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import invariants
from .schedule import Schedule

Unit = tuple[str, int]  # (connector, task); task -1 is the connector itself


@dataclass(frozen=True)
class Snapshot:
    """What one worker's REST API said it runs (RUNNING with its own worker id) at t_ms
    since the campaign started; ``alive`` False when it could not answer (stopped, paused)."""

    t_ms: int
    worker: str
    running: frozenset[Unit]
    alive: bool = True


@dataclass
class History:
    schedule: Schedule
    rows: list[dict[str, Any]]          # group exchanges (the exchanges table's rows); req_time/resp_time
                                        # in seconds since the campaign started
    snapshots: list[Snapshot]
    expected: frozenset[Unit]           # the units configured when the schedule ended
    end_ms: int                         # when recording stopped
    op_times: dict[int, int] = field(default_factory=dict)  # op index -> when the driver did it


def history_to_json(h: History) -> dict[str, Any]:
    """The history as a file keeps it (``conformance chaos`` writes one per run): judged again later."""
    from .schedule import dumps
    return {"schedule": dumps(h.schedule, ""), "rows": h.rows, "end_ms": h.end_ms,
            "expected": sorted(list(u) for u in h.expected), "op_times": {str(k): v for k, v in h.op_times.items()},
            "snapshots": [[s.t_ms, s.worker, sorted(list(u) for u in s.running), s.alive] for s in h.snapshots]}


def history_from_json(data: dict[str, Any]) -> History:
    from .schedule import loads
    return History(loads(data["schedule"])[1], data["rows"],
                   [Snapshot(t, w, frozenset((c, int(n)) for c, n in units), alive)
                    for t, w, units, alive in data["snapshots"]],
                   frozenset((c, int(n)) for c, n in data["expected"]), data["end_ms"],
                   {int(k): v for k, v in data["op_times"].items()})


@dataclass(frozen=True)
class Bounds:
    """The target's timing, from which safety's grace and liveness' bound are derived."""

    session_timeout_ms: int
    scheduled_delay_ms: int
    rebalance_ms: int        # one rebalance round, all told (join + sync + starting the work)
    grace_ms: int            # how long two workers may both report a unit (status is eventually consistent)

    @property
    def liveness_ms(self) -> int:
        return self.session_timeout_ms + self.scheduled_delay_ms + self.rebalance_ms


@dataclass(frozen=True)
class Finding:
    rule: str           # a catalogue id (CONN-INV-..) or "safety" / "liveness"
    t_ms: int
    detail: str
    evidence: tuple[str, ...] = ()


def judge(h: History, b: Bounds) -> list[Finding]:
    return [*_invariants(h), *safety(h.snapshots, b.grace_ms), *liveness(h, b)]


def _invariants(h: History) -> list[Finding]:
    """Over the exchanges up to end_ms: the harness stopping the workers after it (leaves, lost
    work nobody is left to take) is no part of the campaign."""
    out = []
    rows = [r for r in h.rows if _ms(r) <= h.end_ms]
    for rid, found in invariants.violations(invariants.group(rows)).items():
        for v in found[:1]:  # the first is the evidence; the rest repeat the pattern
            t = next((_ms(r) for r in h.rows if v.get("ref") in (r["ref"], r.get("resp_ref"))), 0)
            out.append(Finding(rid, t, v["detail"], (f"at exchange ref {v.get('ref')} (the recording's order)",)))
    return out


def safety(snapshots: list[Snapshot], grace_ms: int) -> list[Finding]:
    """A unit that two live workers both report running, continuously longer than grace_ms."""
    latest: dict[str, Snapshot] = {}
    since: dict[Unit, int] = {}
    out, reported = [], set()
    for s in sorted(snapshots, key=lambda s: (s.t_ms, s.worker)):
        latest[s.worker] = s
        owners: dict[Unit, list[str]] = {}
        for w, snap in latest.items():
            if snap.alive:
                for u in snap.running:
                    owners.setdefault(u, []).append(w)
        doubled = {u for u, ws in owners.items() if len(ws) > 1}
        for u in list(since):
            if u not in doubled:
                del since[u]
        for u in doubled:
            start = since.setdefault(u, s.t_ms)
            if s.t_ms - start > grace_ms and u not in reported:
                reported.add(u)
                out.append(Finding("safety", start, f"{_unit(u)} running on {' and '.join(sorted(owners[u]))} "
                                   f"for {s.t_ms - start} ms (grace {grace_ms} ms)",
                                   tuple(f"t={latest[w].t_ms}ms {w}: {_units(latest[w].running)}"
                                         for w in sorted(owners[u]))))
    return out


def liveness(h: History, b: Bounds) -> list[Finding]:
    """After the last fault ends: by its end + the bound, every expected unit runs on exactly
    one worker, and no JoinGroup after that (the group stopped rebalancing)."""
    start = h.schedule.last_fault_end_ms
    deadline = start + b.liveness_ms
    if h.end_ms < deadline:
        return [Finding("liveness", deadline, f"recording ended at {h.end_ms} ms, before the liveness deadline "
                        f"{deadline} ms: the campaign's duration is too short to judge liveness")]
    latest: dict[str, Snapshot] = {}
    settled_at = None
    for s in sorted(h.snapshots, key=lambda s: (s.t_ms, s.worker)):
        latest[s.worker] = s
        if s.t_ms < start:
            continue
        counts: dict[Unit, int] = {}
        for snap in latest.values():
            if snap.alive:
                for u in snap.running:
                    counts[u] = counts.get(u, 0) + 1
        if all(counts.get(u) == 1 for u in h.expected):
            settled_at = s.t_ms
            break
    if settled_at is None or settled_at > deadline:
        missing = sorted(u for u in h.expected if sum(u in s.running for s in latest.values() if s.alive) != 1)
        return [Finding("liveness", deadline,
                        f"{len(missing)} units not running on exactly one worker {b.liveness_ms} ms after the last "
                        f"fault ended (at {start} ms): {', '.join(_unit(u) for u in missing[:6])}",
                        tuple(f"t={s.t_ms}ms {w}: {_units(s.running) if s.alive else 'not answering'}"
                              for w, s in sorted(latest.items())))]
    # Up to end_ms: the workers' own shutdown after it (leaves, and the rejoins they cause) is not chaos.
    joins = [r for r in h.rows if r["api"] == "JoinGroup" and deadline < _ms(r) <= h.end_ms]
    if joins:
        return [Finding("liveness", _ms(joins[0]),
                        f"the group still rebalances after the deadline ({deadline} ms): {len(joins)} JoinGroups, "
                        f"the first from {joins[0]['client_id']} at {_ms(joins[0])} ms")]
    return []


def _ms(row: dict[str, Any]) -> int:
    return int(row["req_time"] * 1000)


def _unit(u: Unit) -> str:
    return u[0] if u[1] < 0 else f"{u[0]}-{u[1]}"


def _units(us: frozenset[Unit]) -> str:
    return ", ".join(_unit(u) for u in sorted(us)) or "nothing"


def evidence(h: History, f: Finding, window_ms: int = 5000) -> list[str]:
    """What a person reads under a finding: the operations and exchanges around it."""
    lo, hi = f.t_ms - window_ms, f.t_ms + window_ms
    ops = [f"op  {o.describe()}" for o in h.schedule.ops if lo <= o.at_ms <= hi or lo <= o.ends_ms <= hi]
    exs = [f"ex  t={_ms(r)}ms {r['client_id']} {r['api']} gen={r.get('generation')} "
           f"error={r.get('error_code')}" for r in h.rows if lo <= _ms(r) <= hi
           and r["api"] != "Heartbeat"]
    return [*ops, *list(f.evidence), *exs[:30]]
