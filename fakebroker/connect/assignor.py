"""Connect's leader-side incremental cooperative assignor (KIP-415), sans-IO on virtual time.

The classic ``compatible`` (v1) and ``sessioned`` (v2) Connect protocols run their assignor
on the group leader. Each worker holds one ``IncrementalCooperativeAssignor``: while the
worker leads, the assignor remembers the assignment it last handed out; while it follows,
it remembers the scheduled delay it last received (``on_assignment``). ``assign`` is one
rebalance round: the members and what each reports it runs (the Allocation of its join
metadata), the configured connectors and tasks, and the virtual time.

KIP-415's deferred resolution of imbalance, as this module decides it (the KIP states the
policy and five worked scenarios, not an algorithm; each rule below is needed by one of
them and reproduces all five, see ``fixtures/scenarios/kip415-*.yaml``):

1. Work a member reports that is no longer configured is revoked from it.
2. *Lost* work: units the leader handed out last round that no member reports any more,
   while a member of that round is gone. Lost work is held back for
   ``scheduled.rebalance.max.delay.ms`` from when it was first noticed; every assignment
   made meanwhile carries the remaining delay. Missing work while every member of the last
   round is still there (one missed its assignment) is no departure: it is new work
   (rule 5), given out at once (Connect fixed holding it back in 2.5.1: KAFKA-9848). Members that
   report no work while a delay runs are *candidates* (a bounced worker comes back empty),
   remembered in the order the leader first saw them (ties by member id).
3. When the delay has run out, lost work goes to the candidates still present: the lost
   units, in their natural order, are cut into contiguous blocks, one per candidate in
   candidate order, the first ones one unit larger when they do not divide evenly.
   Without candidates it is dealt like new work (rule 5).
4. A *new leader* (no assignment of its own to compare with) cannot tell lost work from
   new work: unaccounted units are new, unless the leader itself received a scheduled
   delay that is still running - then they are lost and the delay is honoured (KIP-415,
   "Leader leaves the group").
5. New (and unheld, e.g. revoked last round) work is dealt tasks first, then connector
   instances, each in natural order, to the member holding the fewest units (connectors
   plus tasks, counting what this round has given), ties by member id.
6. Balance: when no delay is running, a member holding more than ceil(C / members)
   connector instances or ceil(T / members) tasks (C, T: configured counts) gives up the
   excess, its last units in natural order, in every round that needs it, the one after a
   revoking round included (KIP-415: the steps repeat until the group converges; Connect
   before 3.4.0 skipped it then and left a worker joining in that round idle, KAFKA-12495).
   Revoked work is not reassigned in the same round: the member releases it and rejoins,
   and the next round deals it as new work.

Units are ``ConnectUnit``s (connector instance: task -1; tasks from 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..coordinator.reconcile.units import ConnectUnit, sorted_units

U = TypeVar("U", bound=tuple[str, int])  # a unit: ConnectUnit or a plain (connector, task)

#: Connect's scheduled.rebalance.max.delay.ms default (5 minutes).
DEFAULT_MAX_DELAY_MS = 300_000


@dataclass(frozen=True)
class MemberAssignment:
    """One member's part of a round: everything it should run after it (``assigned``, the
    KIP's notation), what it must stop (``revoked``) and the scheduled delay."""

    assigned: frozenset[ConnectUnit]
    revoked: frozenset[ConnectUnit]
    delay_ms: int
    #: What the member did not report: the v1/v2 wire Assignment (new work only).
    added: frozenset[ConnectUnit] = frozenset()


@dataclass
class IncrementalCooperativeAssignor:
    max_delay_ms: int = DEFAULT_MAX_DELAY_MS
    # --- as leader
    previous: dict[str, frozenset[ConnectUnit]] | None = None
    delay_deadline_ms: int | None = None
    lost: set[ConnectUnit] = field(default_factory=set)
    candidates: list[str] = field(default_factory=list)
    balance: bool = True  # rule 6; off only in a worker mutant (no-revocation-on-join)
    # --- as member
    received_deadline_ms: int | None = None

    def on_assignment(self, now_ms: int, delay_ms: int) -> None:
        """The worker received an assignment with this scheduled delay."""
        self.received_deadline_ms = now_ms + delay_ms if delay_ms > 0 else None

    def assign(self, now_ms: int, configured: Iterable[tuple[str, int]],
               members: Mapping[str, Iterable[tuple[str, int]]]) -> dict[str, MemberAssignment]:
        """One rebalance round led by this worker. Units are ``(connector, task)`` pairs as
        the worker holds them (task -1: the connector instance), ``ConnectUnit``s or not."""
        universe = frozenset(map(ConnectUnit._make, configured))
        reported = {m: frozenset(map(ConnectUnit._make, members[m])) for m in sorted(members)}
        holdings: dict[str, set[ConnectUnit]] = {}
        revoked: dict[str, set[ConnectUnit]] = {m: set() for m in reported}
        seen: set[ConnectUnit] = set()
        for m, units in reported.items():
            keep = set()
            for u in sorted_units(units):
                if u in universe and u not in seen:   # rule 1 (and one holder per unit)
                    keep.add(u)
                    seen.add(u)
                else:
                    revoked[m].add(u)
            holdings[m] = keep
        active = frozenset(seen)

        # Rules 2 and 4: what is lost, and whether a delay runs.
        if self.previous is None:
            unaccounted = universe - active
            if self.received_deadline_ms is not None and now_ms < self.received_deadline_ms:
                self.lost |= unaccounted
                self.delay_deadline_ms = self.received_deadline_ms
        elif not (self.delay_deadline_ms is None and set(self.previous) <= set(reported)):
            expected = frozenset(u for us in self.previous.values() for u in us) & universe
            self.lost |= expected - active
        self.lost = {u for u in self.lost if u in universe and u not in active}
        if self.lost and self.delay_deadline_ms is None and self.max_delay_ms > 0:
            self.delay_deadline_ms = now_ms + self.max_delay_ms

        delaying = (bool(self.lost) and self.delay_deadline_ms is not None
                    and now_ms < self.delay_deadline_ms)
        if delaying:
            fresh = sorted(m for m in reported if not holdings[m] and m not in self.candidates)
            self.candidates = [m for m in self.candidates if m in reported] + fresh
        given: dict[str, set[ConnectUnit]] = {m: set() for m in reported}

        # Rule 6: balance what members hold, before anything is handed out.
        if not delaying and self.balance and reported:
            n = len(reported)
            c_quota = math.ceil(sum(1 for u in universe if u.is_connector) / n)
            t_quota = math.ceil(sum(1 for u in universe if not u.is_connector) / n)
            for m, units in holdings.items():
                for kind_is_connector, quota in ((True, c_quota), (False, t_quota)):
                    mine = [u for u in sorted_units(units) if u.is_connector == kind_is_connector]
                    for u in mine[quota:]:
                        units.discard(u)
                        revoked[m].add(u)
        released = frozenset(u for m in reported for u in revoked[m] if u in universe)

        # Rule 3: lost work after the delay.
        if self.lost and not delaying:
            lost = list(sorted_units(self.lost))
            present = [m for m in self.candidates if m in reported]
            if present:
                size, extra = divmod(len(lost), len(present))
                start = 0
                for i, m in enumerate(present):
                    end = start + size + (1 if i < extra else 0)
                    given[m].update(lost[start:end])
                    start = end
                lost = []
            self._deal(lost, holdings, given)
            self.lost = set()
            self.candidates = []
            self.delay_deadline_ms = None
        if not self.lost:
            self.delay_deadline_ms = None
            self.candidates = []

        # Rule 5: new work (never handed out, or released by a revocation last round).
        placed = active | released | frozenset(self.lost) | frozenset(
            u for us in given.values() for u in us)
        self._deal(list(sorted_units(universe - placed)), holdings, given)

        delay = self.delay_deadline_ms - now_ms if self.delay_deadline_ms is not None else 0
        out: dict[str, MemberAssignment] = {}
        for m in reported:
            assigned = frozenset(holdings[m] | given[m])
            out[m] = MemberAssignment(assigned=assigned, revoked=frozenset(revoked[m]),
                                      delay_ms=delay, added=assigned - reported[m])
        self.previous = {m: a.assigned for m, a in out.items()}
        return out

    @staticmethod
    def _deal(units: list[ConnectUnit], holdings: Mapping[str, set[ConnectUnit]],
              given: dict[str, set[ConnectUnit]]) -> None:
        """Rule 5: tasks first, then connector instances, to the least-loaded member."""
        if not given:
            return
        ordered = [u for u in units if not u.is_connector] + [u for u in units if u.is_connector]
        for u in ordered:
            m = min(given, key=lambda x: (len(holdings[x]) + len(given[x]), x))
            given[m].add(u)


def round_robin(units: Iterable[U], members: Iterable[str]) -> dict[str, set[U]]:
    """The eager (v0) protocol's share, all of it handed out each round: unit i in natural
    order goes to the i-th member (mod n), members sorted by id."""
    ordered = sorted(members)
    share: dict[str, set[U]] = {m: set() for m in ordered}
    for i, unit in enumerate(sorted(units)):
        share[ordered[i % len(ordered)]].add(unit)
    return share


__all__ = ["DEFAULT_MAX_DELAY_MS", "MemberAssignment", "IncrementalCooperativeAssignor", "round_robin"]
