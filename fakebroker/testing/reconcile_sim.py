"""Scripted members for the engine, on the virtual clock: an honest client model (it
applies each response at once: revokes what left its set, takes what joined it, and
acknowledges in its next heartbeat), a trivial installer for connect groups, and a loop
that heartbeats a group until it is stable. Used by the engine's tests and by
bench/reconcile.py.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic

from fakebroker.coordinator.reconcile.engine import GroupEngine, Heartbeat, HeartbeatResult, PrepareResult
from fakebroker.coordinator.reconcile.member import (NO_PAYLOAD, ClientAssignor, MemberState,
                                                     MemberTarget)
from fakebroker.coordinator.reconcile.target import Installed
from fakebroker.coordinator.reconcile.units import U, sorted_units
from fakebroker.protocol.error_codes import ErrorCode

RESTART_ERRORS = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})


class ProtocolViolation(AssertionError):
    """The coordinator told a member to revoke and assign in one response."""


@dataclass
class SimMember(Generic[U]):
    member_id: str
    subscription: frozenset[str] = frozenset()
    client_assignors: tuple[ClientAssignor, ...] | None = None
    rebalance_timeout_ms: int = 60_000
    #: Named in every heartbeat, as Kafka's consumer does (static membership).
    instance_id: str | None = None
    epoch: int = 0
    owned: frozenset[U] = frozenset()
    joined: bool = False
    responses: int = 0

    def heartbeat(self) -> Heartbeat[U]:
        if not self.joined:
            return Heartbeat(member_id=self.member_id, member_epoch=0,
                             instance_id=self.instance_id,
                             rebalance_timeout_ms=self.rebalance_timeout_ms,
                             subscription=self.subscription, owned=frozenset(),
                             client_assignors=self.client_assignors)
        return Heartbeat(member_id=self.member_id, member_epoch=self.epoch,
                         instance_id=self.instance_id, owned=self.owned)

    def receive(self, result: HeartbeatResult[U]) -> None:
        self.responses += 1
        if result.error in RESTART_ERRORS:
            self.abandon()
            return
        if result.error:
            return
        self.joined = True
        self.epoch = result.member_epoch
        if result.assignment is not None:
            new = result.assignment.units
            revoked, added = self.owned - new, new - self.owned
            if revoked and added:
                raise ProtocolViolation(f"{self.member_id}: revoke {sorted_units(revoked)} and "
                                        f"assign {sorted_units(added)} in one response")
            self.owned = new

    def abandon(self) -> None:
        """Fenced or unknown: drop everything, rejoin under the same id at epoch 0."""
        self.owned = frozenset()
        self.epoch = 0
        self.joined = False


#: (prepared group, previous targets) -> the new target of every member
InstallFn = Callable[[PrepareResult[U]], Mapping[str, MemberTarget[U]]]


def round_robin_installer(units: Iterable[U]) -> InstallFn[U]:
    """A sticky, balanced client-side assignor for tests: members keep what their target
    has (up to the quota), the rest is dealt out to the least-loaded member."""
    universe = sorted_units(units)
    valid = frozenset(universe)

    def install(prepared: PrepareResult[U]) -> Mapping[str, MemberTarget[U]]:
        members = [m.member_id for m in prepared.members]
        if not members:
            return {}
        quota, extra = divmod(len(universe), len(members))
        # A member's target units, while they all stay with it: its set object itself (most
        # members keep theirs; nothing is copied or sorted for them).
        out: dict[str, frozenset[U] | set[U]] = {}
        taken: set[U] = set()
        for index, m in enumerate(prepared.members):
            limit = quota + (1 if index < extra else 0)
            units = m.target.units
            if len(units) <= limit and units <= valid and units.isdisjoint(taken):
                out[m.member_id] = units
                taken.update(units)
                continue
            keep = [u for u in sorted_units(units) if u in valid and u not in taken]
            out[m.member_id] = set(keep[:limit])
            taken.update(keep[:limit])
        # The free units in order, each to the least-loaded member (ties: smallest id).
        loads = [(len(out[m]), m) for m in members]
        heapq.heapify(loads)
        for unit in sorted_units(valid - taken):
            load, mid = loads[0]
            out[mid] = {*out[mid], unit}
            heapq.heapreplace(loads, (load + 1, mid))
        return {m.member_id: m.target if out[m.member_id] is m.target.units
                and m.target.payload == NO_PAYLOAD else MemberTarget(frozenset(out[m.member_id]))
                for m in prepared.members}

    return install


@dataclass
class Driver(Generic[U]):
    """Heartbeats every member in turn (sorted by id) on a virtual clock."""

    engine: GroupEngine[U]
    members: dict[str, SimMember[U]] = field(default_factory=dict)
    installer: InstallFn[U] | None = None
    now_ms: int = 0
    step_ms: int = 1
    heartbeats: int = 0

    def add(self, member: SimMember[U]) -> SimMember[U]:
        self.members[member.member_id] = member
        return member

    def beat(self, member_id: str) -> HeartbeatResult[U]:
        member = self.members[member_id]
        self.now_ms += self.step_ms
        result = self.engine.heartbeat(member.heartbeat(), self.now_ms)
        self.heartbeats += 1
        member.receive(result)
        if result.compute_assignment and self.installer is not None:
            self.install(member_id)
        return result

    def install(self, member_id: str) -> None:
        assert self.installer is not None
        member = self.members[member_id]
        prepared = self.engine.prepare_assignment(member_id, member.epoch, self.now_ms)
        if prepared.error:
            return
        targets = self.installer(prepared)
        self.engine.install_assignment(member_id, member.epoch, prepared.group_epoch, targets,
                                       self.now_ms)

    def round(self) -> None:
        for member_id in sorted(self.members):
            self.beat(member_id)

    def is_stable(self) -> bool:
        e = self.engine
        if e.group_epoch != e.assignment_epoch:
            return False
        if set(e.member_ids()) != set(self.members):
            return False
        for member_id in e.member_ids():
            current = e.member(member_id).current
            sim = self.members[member_id]
            if current.state is not MemberState.STABLE or current.member_epoch != e.group_epoch:
                return False
            if current.assigned != e.target(member_id).units or sim.owned != current.assigned:
                return False
            if sim.epoch != current.member_epoch:
                return False
        return True

    def converge(self, max_rounds: int = 50) -> int:
        """Heartbeat rounds until stable; the number of rounds it took."""
        for rounds in range(max_rounds + 1):
            if self.is_stable():
                return rounds
            self.round()
        raise AssertionError(f"not stable after {max_rounds} rounds")


def is_installed(engine: GroupEngine[U]) -> bool:
    return isinstance(engine.policy, Installed)


__all__ = ["SimMember", "ProtocolViolation", "InstallFn", "round_robin_installer", "Driver",
           "RESTART_ERRORS", "is_installed"]
