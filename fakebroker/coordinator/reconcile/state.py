"""The durable state of one heartbeat-driven group, and how records change it.

Durable state (the group epoch, the members' metadata, the unit set, the target assignment
and its epoch, every member's current assignment) changes only by replaying records
(``_commit`` writes them to the store and replays them), so ``GroupEngine.rebuild(records)``
restores it. Beside it: the indexes derived from it (unit -> holder, instance id ->
members), kept as records are replayed, and the transient state Kafka rebuilds on load
(timers, the member selected to compute a connect target, the membership of recent epochs).
``GroupState`` reads and writes; ``engine.GroupEngine`` decides what to write.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

from ..errors import InvariantBroken
from .api import EngineConfig, GroupSnapshot
from .member import NO_PAYLOAD, CurrentAssignment, Member, MemberMetadata, MemberTarget
from .records import (CurrentAssignmentRecord, CurrentAssignmentValue, GroupMetadataRecord,
                      InMemoryRecordStore, MemberMetadataRecord, MemberMetadataValue, Record,
                      RecordStore, TargetAssignmentMemberRecord, TargetAssignmentMetadataRecord,
                      TargetMemberValue, UnitSetMetadataRecord)
from .target import Installed, TargetPolicy
from ..timers import Timers
from .units import EMPTY, U, frozen, sorted_units

T = TypeVar("T")

SESSION = "session"
REBALANCE = "rebalance"


class GroupState(Generic[U]):
    def __init__(self, config: EngineConfig, policy: TargetPolicy,
                 store: RecordStore | None = None) -> None:
        self.config = config
        self.policy = policy
        self.store: RecordStore = store if store is not None else InMemoryRecordStore()
        # durable (records only)
        self._created = False
        self._group_epoch = 0
        self._assignment_epoch = 0
        self._catalog_epoch = 0
        self._catalog: dict[str, tuple[U, ...]] = {}
        self._metadata: dict[str, tuple[MemberMetadata, int]] = {}
        self._target: dict[str, MemberTarget[U]] = {}
        self._current: dict[str, CurrentAssignment[U]] = {}
        # derived: the value each member's current assignment was replayed from. A record
        # for an unchanged unit set reuses its sorted units, and replaying it reuses the
        # set: most records only move an epoch, and this way they add no tuple and no set
        # for the collector to walk.
        self._written: dict[str, CurrentAssignmentValue[U]] = {}
        self._owner: dict[U, str] = {}   # derived: unit -> member holding it
        # derived: instance id -> the members whose metadata names it, sorted (one, unless
        # records say otherwise): a static member's heartbeat looks its holder up in O(1).
        self._instances: dict[str, tuple[str, ...]] = {}
        # transient
        # (kind, member id) -> (kind, member id, the member epoch a rebalance timer is for)
        self._timers: Timers[tuple[str, str, int]] = Timers()
        self._selected: str | None = None
        self._membership: dict[int, frozenset[str]] = {0: frozenset()}
        # Bumped whenever a member's metadata changes: the selector's answer for unchanged
        # metadata is kept (``_select``), so a heartbeat while a target is due costs O(1),
        # not a pass over every member.
        self._metadata_version = 0
        self._selection: tuple[tuple[int, str | None], str | None] | None = None
        self._derived: dict[Callable[..., object], tuple[int, object]] = {}
        # The last unit set an install grouped, and its catalog: an install usually hands
        # out the same units again, and grouping 10 N units is its costliest step.
        self._unit_set: tuple[frozenset[U], tuple[tuple[str, tuple[U, ...]], ...]] | None = None
        self._undo: tuple = ()  # type: ignore[type-arg]  # the last static replacement

    # ----------------------------------------------------------------- read access

    @property
    def group_id(self) -> str:
        return self.config.group_id

    @property
    def group_epoch(self) -> int:
        return self._group_epoch

    @property
    def assignment_epoch(self) -> int:
        return self._assignment_epoch

    @property
    def exists(self) -> bool:
        """The group has been created (by a first join, or by replayed records)."""
        return self._created

    @property
    def catalog(self) -> Mapping[str, tuple[U, ...]]:
        return dict(self._catalog)

    def member_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._metadata))

    def has_member(self, member_id: str) -> bool:
        return member_id in self._metadata

    def member(self, member_id: str) -> Member[U]:
        md, epoch = self._metadata[member_id]
        return Member(member_id, md, epoch, self._current.get(member_id, CurrentAssignment()))

    def target(self, member_id: str) -> MemberTarget[U]:
        return self._target.get(member_id, MemberTarget())

    def holder(self, unit: U) -> str | None:
        """The member holding ``unit`` (assigned or pending revocation), if any."""
        return self._owner.get(unit)

    @property
    def selected_member(self) -> str | None:
        """Connect groups: the member chosen to compute the target (None when none is)."""
        if not isinstance(self.policy, Installed):
            return None
        return self._select(None)

    def is_assignment_due(self) -> bool:
        return self._group_epoch > self._assignment_epoch

    def next_deadline(self) -> int | None:
        return self._timers.next_deadline()

    def deadline(self, kind: str, member_id: str) -> int | None:
        """The live ``"session"`` or ``"rebalance"`` deadline of a member (tests, tools)."""
        return self._timers.deadline((kind, member_id))

    def durable_state(self) -> GroupSnapshot[U]:
        return GroupSnapshot(
            group_epoch=self._group_epoch,
            assignment_epoch=self._assignment_epoch,
            catalog_epoch=self._catalog_epoch,
            catalog=tuple(sorted(self._catalog.items())),
            members=tuple((mid, md, ep) for mid, (md, ep) in sorted(self._metadata.items())),
            target=tuple(sorted(self._target.items())),
            current=tuple(sorted(self._current.items())))

    def timer_state(self) -> tuple[tuple[str, str, int], ...]:
        """Live deadlines as (kind, member, deadline), sorted."""
        return tuple(sorted((k, m, self._timers.deadline((k, m)))  # type: ignore[misc]
                            for k, m in self._timers.keys()))

    # ----------------------------------------------------------------- internals

    def of_members(self, fn: Callable[[Mapping[str, MemberMetadata]], T]) -> T:
        """``fn`` of every member's metadata, computed again only once a member's metadata
        has changed (``fn`` must depend on nothing else)."""
        kept = self._derived.get(fn)
        if kept is None or kept[0] != self._metadata_version:
            kept = (self._metadata_version, fn(self._metadata_view()))
            self._derived[fn] = kept
        return kept[1]  # type: ignore[return-value]

    def _select(self, members: Mapping[str, MemberMetadata] | None) -> str | None:
        """The connect selector's choice among ``members``, or (None) among the members as
        they are, answered from the last such call while nothing it reads has changed."""
        assert isinstance(self.policy, Installed)
        if members is not None:
            return self.policy.selector(members, self._selected)
        key = (self._metadata_version, self._selected)
        if self._selection is None or self._selection[0] != key:
            self._selection = (key, self.policy.selector(self._metadata_view(), self._selected))
        return self._selection[1]

    def _installed_catalog(self, units: frozenset[U]) -> tuple[tuple[str, tuple[U, ...]], ...]:
        """``_catalog_of(units)``, kept for the last unit set asked about."""
        if self._unit_set is None or self._unit_set[0] != units:
            self._unit_set = (units, _catalog_of(units))
        return self._unit_set[1]

    def _metadata_view(self) -> dict[str, MemberMetadata]:
        return {mid: md for mid, (md, _) in self._metadata.items()}

    def _target_of(self, member_id: str, units: frozenset[U]) -> MemberTarget[U]:
        """A server assignor's target for a member: its current one when unchanged (most
        are, and then nothing per member is allocated or compared unit by unit)."""
        kept = self._target.get(member_id)
        if kept is not None and kept.units == units and kept.payload == NO_PAYLOAD:
            return kept
        return MemberTarget(units)

    def _current_of(self, member_id: str) -> CurrentAssignment[U]:
        return self._current.get(member_id, CurrentAssignment())

    def _target_records(self, new_target: Mapping[str, MemberTarget[U]]) -> list[Record]:
        out: list[Record] = []
        for mid in sorted(new_target):
            if self._target.get(mid) != new_target[mid]:
                t = new_target[mid]
                out.append(TargetAssignmentMemberRecord(
                    self.group_id, mid, TargetMemberValue(sorted_units(t.units), t.payload)))
        return out

    def _commit(self, records: Sequence[Record]) -> None:
        for record in records:
            self._replay(record)
        self.store.append(records)

    def _replay(self, record: Record) -> None:
        self._created = True
        if isinstance(record, GroupMetadataRecord):
            self._group_epoch = record.epoch
            self._membership[record.epoch] = frozenset(self._metadata)
        elif isinstance(record, UnitSetMetadataRecord):
            self._catalog = dict(record.catalog)
            self._catalog_epoch = record.epoch
        elif isinstance(record, MemberMetadataRecord):
            self._metadata_version += 1
            mid = record.member_id
            previous = self._metadata.get(mid)
            if previous is not None and (instance_id := previous[0].instance_id) is not None:
                rest = tuple(m for m in self._instances[instance_id] if m != mid)
                if rest:
                    self._instances[instance_id] = rest
                else:
                    del self._instances[instance_id]
            if record.value is None:
                self._metadata.pop(mid, None)
            else:
                v = record.value
                md = MemberMetadata(instance_id=v.instance_id, client_id=v.client_id,
                                    client_host=v.client_host,
                                    rebalance_timeout_ms=v.rebalance_timeout_ms,
                                    subscription=frozen(v.subscription),
                                    server_assignor=v.server_assignor,
                                    client_assignors=v.client_assignors)
                self._metadata[mid] = (md, v.group_epoch)
                if md.instance_id is not None:
                    self._instances[md.instance_id] = tuple(sorted(
                        (*self._instances.get(md.instance_id, ()), mid)))
        elif isinstance(record, TargetAssignmentMetadataRecord):
            self._assignment_epoch = record.assignment_epoch
            for epoch in [e for e in self._membership if e < record.assignment_epoch]:
                del self._membership[epoch]
        elif isinstance(record, TargetAssignmentMemberRecord):
            if record.value is None:
                self._target.pop(record.member_id, None)
            else:
                self._target[record.member_id] = MemberTarget(frozen(record.value.units),
                                                              record.value.payload)
        elif isinstance(record, CurrentAssignmentRecord):
            self._replay_current(record)
        else:  # pragma: no cover - the Record union is closed
            raise TypeError(f"not a record: {record!r}")

    def _current_record(self, member_id: str, c: CurrentAssignment[U]) -> CurrentAssignmentRecord[U]:
        """The record of ``c`` as the member's current assignment."""
        last, kept = self._written.get(member_id), self._current.get(member_id)
        assigned = (last.assigned if last is not None and kept is not None
                    and c.assigned is kept.assigned else sorted_units(c.assigned))
        return CurrentAssignmentRecord(self.group_id, member_id, CurrentAssignmentValue(
            member_epoch=c.member_epoch, previous_member_epoch=c.previous_member_epoch,
            state=c.state, assigned=assigned, pending_revocation=sorted_units(c.pending_revocation),
            payload=c.payload))

    def _replay_current(self, record: CurrentAssignmentRecord[U]) -> None:
        mid = record.member_id
        old = self._current.pop(mid, None)
        last = self._written.pop(mid, None)
        held_before = old.held if old is not None else EMPTY
        if record.value is None:
            held_after: frozenset[U] = EMPTY
        else:
            v = record.value
            assigned = (old.assigned if old is not None and last is not None
                        and v.assigned is last.assigned else frozen(v.assigned))
            new: CurrentAssignment[U] = CurrentAssignment(
                state=v.state, member_epoch=v.member_epoch,
                previous_member_epoch=v.previous_member_epoch, assigned=assigned,
                pending_revocation=frozen(v.pending_revocation), payload=v.payload)
            held_after = new.held
        # Only the units that change hands: the units kept are this member's already.
        for unit in held_before - held_after:
            if self._owner.get(unit) == mid:
                del self._owner[unit]
        for unit in held_after - held_before:
            holder = self._owner.get(unit)
            if holder is not None and holder != mid:
                raise InvariantBroken(f"{unit} would be held by {holder} and {mid}")
            self._owner[unit] = mid
        if record.value is not None:
            self._current[mid] = new
            self._written[mid] = record.value

    def _schedule(self, kind: str, member_id: str, deadline: int, epoch: int = 0) -> None:
        self._timers.schedule((kind, member_id), deadline, (kind, member_id, epoch))

    def _cancel(self, kind: str, member_id: str) -> None:
        self._timers.cancel((kind, member_id))


def md_value(md: MemberMetadata, epoch: int) -> MemberMetadataValue:
    return MemberMetadataValue(group_epoch=epoch, instance_id=md.instance_id,
                               client_id=md.client_id, client_host=md.client_host,
                               rebalance_timeout_ms=md.rebalance_timeout_ms,
                               subscription=tuple(sorted(md.subscription)),
                               server_assignor=md.server_assignor,
                               client_assignors=md.client_assignors)


def _catalog_of(units: frozenset[U]) -> tuple[tuple[str, tuple[U, ...]], ...]:
    """Group installed units under their key: the first field of a NamedTuple unit (the
    connector of a ``ConnectUnit``, the topic id of a ``TopicPartition``), else ``""``."""
    keyed: dict[str, list[U]] = {}
    for unit in units:
        key = str(unit[0]) if isinstance(unit, tuple) and unit else ""
        keyed.setdefault(key, []).append(unit)
    # Sorting each key's few units, not all units at once: N log N over keys, not units.
    return tuple((key, sorted_units(us)) for key, us in sorted(keyed.items()))
