"""The reconciliation engine of one heartbeat-driven group (KIP-848 consumer group, or the
draft's connect group), sans-IO: no sockets, no wall clock. Every call takes ``now_ms``
(the coordinator's one time convention: int milliseconds, never going back, kept by the
engine's ``Timers``) and returns what a handler needs to answer, plus the
records it wrote and the events that happened (the coordinator's events, naming the group).

Durable state (the group epoch, the members' metadata, the unit set, the target
assignment and its epoch, every member's current assignment) changes only by replaying
records the engine has just generated, so ``GroupEngine.rebuild(records)`` restores it.
Transient state (session and rebalance deadlines, in the coordinator's ``Timers``, the member selected to compute a
connect target, the membership of recent epochs) is rebuilt as Kafka does on load.

A request the engine refuses (``RuleViolation``) is refused before any record is generated:
the state is exactly as it was. Due timers fire first, at the start of every call.

How a handler drives it (ConsumerGroupHeartbeat / ConnectGroupHeartbeat):

    result = engine.heartbeat(Heartbeat(member_id=..., member_epoch=..., owned=...), now_ms)
    # result.error (0 = none), result.member_epoch, result.heartbeat_interval_ms,
    # result.assignment (None = nothing new), result.compute_assignment (connect only:
    # answer COMPUTE_ASSIGNMENT with the other fields valid, ERRATA 17)
    engine.next_deadline()   # when to call engine.advance(now_ms) at the latest
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from ...protocol.error_codes import ErrorCode
from .assignors import AssignorError
from ..errors import Code, InvariantBroken, RuleViolation
from ..events import (AssignmentComputeRequested, GroupEpochChanged, GroupEvent, MemberEpochChanged,
                      MemberJoined, MemberRemoved, RemovalReason, TargetAssignmentChanged)
from .member import (NO_PAYLOAD, AssignmentPayload, ClientAssignor, CurrentAssignment, Member,
                     MemberMetadata, MemberState, MemberTarget)
from .reconciliation import reconcile
from .records import (CurrentAssignmentRecord, CurrentAssignmentValue, GroupMetadataRecord,
                      InMemoryRecordStore, MemberMetadataRecord, MemberMetadataValue, Record,
                      RecordStore, TargetAssignmentMemberRecord, TargetAssignmentMetadataRecord,
                      TargetMemberValue, UnitSetMetadataRecord)
from .target import Installed, ServerAssigned, TargetPolicy
from ..timers import Timers
from .units import EMPTY, U, frozen, sorted_units
from .validation import (JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH,
                         require_assigned_members_exist, require_group_not_full,
                         require_install_epoch_usable, require_member_epoch_current,
                         require_member_epoch_exact, require_member_known,
                         require_selected_member, require_units_assigned_once)

T = TypeVar("T")

E = ErrorCode
NONE = E.NONE


@dataclass(frozen=True)
class EngineConfig:
    group_id: str
    session_timeout_ms: int = 45_000      # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000    # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1             # group.consumer.max.size
    #: KAFKA-19233: a known member may rejoin with epoch 0 (False: Kafka before the fix).
    rejoin_at_zero: bool = True
    #: The draft's ConnectGroupHeartbeat, Request Handling step 3: a heartbeat answered
    #: FENCED_MEMBER_EPOCH also removes the member from the group (Kafka's consumer groups
    #: keep it: False).
    fence_removes_member: bool = False
    #: KIP-848 static membership (consumer groups): a member with an instance id may leave
    #: temporarily (epoch -2) and rejoin under a new member id in its place; other uses of
    #: its instance id are UNRELEASED_INSTANCE_ID / FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID.
    #: False: the instance id is only recorded and epoch -2 is refused.
    static_membership: bool = False

    @classmethod
    def connect(cls, group_id: str, **overrides: int | bool) -> EngineConfig:
        """Connect's defaults: session.timeout.ms 10 s, heartbeat.interval.ms 3 s."""
        values: dict[str, int | bool] = {"session_timeout_ms": 10_000,
                                         "heartbeat_interval_ms": 3_000}
        values.update(overrides)
        return cls(group_id, **values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Heartbeat(Generic[U]):
    """One heartbeat, reduced to what the engine uses. ``None`` means "unchanged since the
    last heartbeat" (the APIs' null); the request context gives ``client_id`` and
    ``client_host``. Member epoch 0 joins (or rejoins), -1 leaves."""

    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscription: frozenset[str] | None = None
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] | None = None
    owned: frozenset[U] | None = None
    client_id: str = ""
    client_host: str = ""

    def is_full(self) -> bool:
        """A full request (a join, or a resend after an error) gets the assignment back
        even when nothing changed (Kafka: epoch 0, or every non-optional field set)."""
        if self.member_epoch == JOIN_EPOCH:
            return True
        return (self.rebalance_timeout_ms != -1 and self.owned is not None
                and (self.subscription is not None or self.client_assignors is not None))

    def merged_into(self, previous: MemberMetadata) -> MemberMetadata:
        return MemberMetadata(
            instance_id=self.instance_id if self.instance_id is not None else previous.instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=(self.rebalance_timeout_ms if self.rebalance_timeout_ms != -1
                                  else previous.rebalance_timeout_ms),
            subscription=(self.subscription if self.subscription is not None
                          else previous.subscription),
            server_assignor=(self.server_assignor if self.server_assignor is not None
                             else previous.server_assignor),
            client_assignors=(self.client_assignors if self.client_assignors is not None
                              else previous.client_assignors))


@dataclass(frozen=True)
class AssignmentView(Generic[U]):
    """What a response's ``Assignment`` carries: the member's complete set, never a delta."""

    units: frozenset[U]
    payload: AssignmentPayload

    def sorted(self) -> tuple[U, ...]:
        return sorted_units(self.units)


@dataclass(frozen=True)
class Outcome:
    """Records written and events that happened during one call (timers included)."""

    records: tuple[Record, ...] = ()
    events: tuple[GroupEvent, ...] = ()

    def __add__(self, other: Outcome) -> Outcome:
        if not (other.records or other.events):
            return self
        if not (self.records or self.events):
            return other  # most calls: no timer fired before the request
        return Outcome(self.records + other.records, self.events + other.events)


@dataclass(frozen=True)
class HeartbeatResult(Generic[U]):
    error: Code = NONE
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: AssignmentView[U] | None = None
    #: Connect groups: this member must compute the next target (COMPUTE_ASSIGNMENT).
    compute_assignment: bool = False
    rule: str | None = None
    message: str | None = None
    outcome: Outcome = field(default_factory=Outcome)


@dataclass(frozen=True)
class PreparedMember(Generic[U]):
    member_id: str
    member_epoch: int
    instance_id: str | None
    client_assignors: tuple[ClientAssignor, ...]
    target: MemberTarget[U]


@dataclass(frozen=True)
class PrepareResult(Generic[U]):
    error: Code = NONE
    group_epoch: int = 0
    members: tuple[PreparedMember[U], ...] = ()
    rule: str | None = None
    message: str | None = None
    outcome: Outcome = field(default_factory=Outcome)


@dataclass(frozen=True)
class InstallResult:
    error: Code = NONE
    rule: str | None = None
    message: str | None = None
    outcome: Outcome = field(default_factory=Outcome)


@dataclass(frozen=True)
class GroupSnapshot(Generic[U]):
    """The durable state, in a form that compares by value (``rebuild`` must give an
    equal one)."""

    group_epoch: int
    assignment_epoch: int
    catalog_epoch: int
    catalog: tuple[tuple[str, tuple[U, ...]], ...]
    members: tuple[tuple[str, MemberMetadata, int], ...]
    target: tuple[tuple[str, MemberTarget[U]], ...]
    current: tuple[tuple[str, CurrentAssignment[U]], ...]


_SESSION = "session"
_REBALANCE = "rebalance"


class GroupEngine(Generic[U]):
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

    # ----------------------------------------------------------------- time

    def advance(self, now_ms: int) -> Outcome:
        """Fire every timer due at ``now_ms`` (session and rebalance timeouts)."""
        outcome = Outcome()
        for deadline, (kind, member_id, epoch) in self._timers.due(now_ms):
            if member_id not in self._metadata:
                continue
            if kind == _SESSION:
                outcome += self._remove(member_id, RemovalReason.SESSION_TIMEOUT, deadline)
            elif self._current_of(member_id).member_epoch == epoch:
                # Kafka: fenced only if the member is still at the epoch it was asked to
                # leave by revoking; a member that moved on is left alone.
                outcome += self._remove(member_id, RemovalReason.REBALANCE_TIMEOUT, deadline)
        return outcome

    # ----------------------------------------------------------------- heartbeat

    def heartbeat(self, hb: Heartbeat[U], now_ms: int) -> HeartbeatResult[U]:
        expired = self.advance(now_ms)
        static = self.config.static_membership and hb.instance_id is not None
        replaced: Outcome | None = None
        try:
            if static and hb.member_epoch != JOIN_EPOCH:
                self._require_static_member(hb.instance_id, hb.member_id)  # type: ignore[arg-type]
            if hb.member_epoch == LEAVE_EPOCH:
                return self._leave(hb.member_id, now_ms, expired)
            if hb.member_epoch == STATIC_LEAVE_EPOCH:
                if not self.config.static_membership:
                    raise RuleViolation(E.INVALID_REQUEST, "static-leave-unsupported",
                                        "static membership is not implemented by this engine")
                return self._static_leave(hb.member_id, now_ms, expired)
            if hb.member_epoch < LEAVE_EPOCH:
                raise RuleViolation(E.INVALID_REQUEST, "member-epoch-valid", "MemberEpoch is invalid")
            if static and hb.member_epoch == JOIN_EPOCH:
                replaced = self._replace_static_member(hb, now_ms)
            try:
                plan = self._plan_heartbeat(hb, now_ms)
            except RuleViolation:
                if replaced is not None:
                    self._undo_replacement(replaced)
                raise
        except RuleViolation as rejected:
            if (rejected.error == E.FENCED_MEMBER_EPOCH and self.config.fence_removes_member
                    and hb.member_id in self._metadata):
                expired += self._remove(hb.member_id, RemovalReason.FENCED_EPOCH, now_ms)
            return HeartbeatResult(error=rejected.error, member_id=hb.member_id,
                                   rule=rejected.rule, message=rejected.message,
                                   outcome=expired)
        if replaced is not None:
            expired += replaced
        return self._apply_heartbeat(hb, plan, now_ms, expired)

    # ----------------------------------------------------------------- static members

    def static_member(self, instance_id: str) -> str | None:
        """The member holding ``instance_id``, if any."""
        holders = self._instances.get(instance_id)
        return holders[0] if holders else None

    def _require_static_member(self, instance_id: str, member_id: str) -> None:
        """Kafka's throwIfStaticMemberIsUnknown / throwIfInstanceIdIsFenced."""
        holder = self.static_member(instance_id)
        if holder is None:
            raise RuleViolation(E.UNKNOWN_MEMBER_ID, "static-member-known",
                                f"Instance id {instance_id} is unknown.")
        if holder != member_id:
            raise RuleViolation(E.FENCED_INSTANCE_ID, "instance-id-owned-by-member",
                                f"Static member {member_id} with instance id {instance_id} was "
                                f"fenced by member {holder}.")

    def _static_leave(self, member_id: str, now_ms: int, expired: Outcome) -> HeartbeatResult[U]:
        """Epoch -2: the static member leaves for now. It stays in the group, keeping its
        assignment (minus anything pending revocation) at member epoch -2, until it
        rejoins or its session times out. No group epoch bump."""
        require_member_known(self._metadata, member_id)
        before = self._current_of(member_id)
        after = replace(before, member_epoch=STATIC_LEAVE_EPOCH,
                        pending_revocation=EMPTY)
        records: list[Record] = [self._current_record(member_id, after)]
        self._commit(records)
        event = MemberEpochChanged(self.group_id, now_ms, member_id, before.state.name,
                                   before.member_epoch, after.state.name, after.member_epoch)
        return HeartbeatResult(member_id=member_id, member_epoch=STATIC_LEAVE_EPOCH,
                               outcome=expired + Outcome(tuple(records), (event,)))

    def _replace_static_member(self, hb: Heartbeat[U], now_ms: int) -> Outcome | None:
        """A join with an instance id another member holds: UNRELEASED_INSTANCE_ID unless
        that member left with epoch -2; then the joining member takes its place - its
        metadata, target and current assignment under the new id, at member epoch 0
        (Kafka's replaceMember). Committed at once (the plan reads it); undone if the
        heartbeat is refused later."""
        instance_id: str = hb.instance_id  # type: ignore[assignment]
        old = self.static_member(instance_id)
        if old is None:
            return None
        current = self._current_of(old)
        if current.member_epoch != STATIC_LEAVE_EPOCH:
            raise RuleViolation(E.UNRELEASED_INSTANCE_ID, "instance-id-released",
                                f"Static member {hb.member_id} with instance id {instance_id} cannot "
                                f"join the group because the instance id is owned by {old} member.")
        new = hb.member_id
        md, md_epoch = self._metadata[old]
        target = self.target(old)
        copy = replace(current, member_epoch=JOIN_EPOCH, previous_member_epoch=JOIN_EPOCH)
        records: list[Record] = [
            CurrentAssignmentRecord(self.group_id, old, None),
            TargetAssignmentMemberRecord(self.group_id, old, None),
            MemberMetadataRecord(self.group_id, old, None),
            MemberMetadataRecord(self.group_id, new, _md_value(md, md_epoch)),
            TargetAssignmentMemberRecord(self.group_id, new, TargetMemberValue(
                sorted_units(target.units), target.payload)),
            self._current_record(new, copy)]
        # (A rebalance deadline never fences a member at -2: only its session is kept.)
        session_deadline = self.deadline(_SESSION, old)
        self._commit(records)
        self._cancel(_SESSION, old)
        self._cancel(_REBALANCE, old)
        self._undo = (old, md, md_epoch, target, current, new, session_deadline)
        events = (MemberRemoved(self.group_id, now_ms, old, None, RemovalReason.FENCED),
                  MemberJoined(self.group_id, now_ms, new, md.instance_id, replaces=old))
        return Outcome(tuple(records), events)

    def _undo_replacement(self, replaced: Outcome) -> None:
        old, md, md_epoch, target, current, new, session_deadline = self._undo
        self._commit([
            CurrentAssignmentRecord(self.group_id, new, None),
            TargetAssignmentMemberRecord(self.group_id, new, None),
            MemberMetadataRecord(self.group_id, new, None),
            MemberMetadataRecord(self.group_id, old, _md_value(md, md_epoch)),
            TargetAssignmentMemberRecord(self.group_id, old, TargetMemberValue(
                sorted_units(target.units), target.payload)),
            self._current_record(old, current)])
        if session_deadline is not None:
            self._schedule(_SESSION, old, session_deadline)

    def leave(self, member_id: str, now_ms: int) -> HeartbeatResult[U]:
        return self.heartbeat(Heartbeat(member_id=member_id, member_epoch=LEAVE_EPOCH), now_ms)

    def _leave(self, member_id: str, now_ms: int, expired: Outcome) -> HeartbeatResult[U]:
        require_member_known(self._metadata, member_id)
        outcome = self._remove(member_id, RemovalReason.LEAVE, now_ms)
        return HeartbeatResult(member_id=member_id, member_epoch=LEAVE_EPOCH,
                               outcome=expired + outcome)

    @dataclass
    class _Plan:
        records: list[Record]
        events: list[GroupEvent]
        before: CurrentAssignment  # type: ignore[type-arg]
        after: CurrentAssignment  # type: ignore[type-arg]
        compute: bool
        selected: str | None
        joined: bool

    def _plan_heartbeat(self, hb: Heartbeat[U], now_ms: int) -> GroupEngine._Plan:
        mid = hb.member_id
        exists = mid in self._metadata
        if hb.member_epoch == JOIN_EPOCH:
            require_group_not_full(self._metadata, mid, self.config.max_size)
        else:
            require_member_known(self._metadata, mid)
        before = self._current_of(mid)
        if exists:
            require_member_epoch_current(before, hb.member_epoch, hb.owned,
                                         rejoin_at_zero=self.config.rejoin_at_zero)

        records: list[Record] = []
        events: list[GroupEvent] = []
        old_md = self._metadata[mid][0] if exists else None
        new_md = hb.merged_into(old_md if old_md is not None else MemberMetadata())
        overlay_cache: list[dict[str, MemberMetadata]] = []

        def overlay() -> dict[str, MemberMetadata]:
            """Every member's metadata with this heartbeat's applied (built on demand:
            a steady heartbeat needs none of it)."""
            if not overlay_cache:
                view = self._metadata_view()
                view[mid] = new_md
                overlay_cache.append(view)
            return overlay_cache[0]

        # 1. Member metadata; the group epoch goes up on a metadata change.
        changed = old_md is None or new_md != old_md
        bump_reasons: list[str] = []
        if old_md is None:
            bump_reasons.append(f"member {mid} joined")
        elif new_md.bumps_epoch_against(old_md):
            bump_reasons.append(f"member {mid} changed its metadata")
        catalog = self._catalog
        catalog_changed = False
        if isinstance(self.policy, ServerAssigned) and (
                old_md is None or new_md.subscription != old_md.subscription):
            catalog = self.policy.catalog_for(overlay())
            catalog_changed = catalog != self._catalog
            if catalog_changed:
                bump_reasons.append("the unit set changed")
        group_epoch = self._group_epoch + (1 if bump_reasons else 0)
        if changed:
            # The draft's GroupEpoch of a member: the group epoch its metadata changed at.
            records.append(MemberMetadataRecord(self.group_id, mid, _md_value(new_md, group_epoch)))
        if catalog_changed or not self._created:
            records.append(UnitSetMetadataRecord(self.group_id, group_epoch,
                                                 tuple(sorted(catalog.items()))))
        if bump_reasons:
            records.append(GroupMetadataRecord(self.group_id, group_epoch))
            events.append(GroupEpochChanged(self.group_id, now_ms, group_epoch, "; ".join(bump_reasons)))
        if old_md is None:
            events.append(MemberJoined(self.group_id, now_ms, mid, new_md.instance_id))

        # 2. A new target when one is due.
        target_epoch = self._assignment_epoch
        target: Mapping[str, MemberTarget[U]] = self._target
        compute = False
        selected = self._selected
        if group_epoch > target_epoch:
            if isinstance(self.policy, ServerAssigned):
                try:
                    name, assignment = self.policy.compute(overlay(), self._target, catalog)
                except AssignorError as err:
                    raise RuleViolation(E.UNKNOWN_SERVER_ERROR, "assignor-succeeds", str(err)) from err
                new_target = {m: self._target_of(m, units) for m, units in assignment.items()}
                records.extend(self._target_records(new_target))
                records.append(TargetAssignmentMetadataRecord(self.group_id, group_epoch))
                events.append(TargetAssignmentChanged(self.group_id, now_ms, group_epoch, f"assignor:{name}"))
                target_epoch, target = group_epoch, new_target
            else:
                selected = self._select(overlay() if changed else None)
                compute = selected == mid
                if compute:
                    events.append(AssignmentComputeRequested(self.group_id, now_ms, mid, group_epoch))

        # 3. Reconcile this member towards its target.
        after = reconcile(before, target_epoch=target_epoch,
                          target=target.get(mid, MemberTarget()), owned=hb.owned,
                          held_by_other=lambda u: self._owner.get(u, mid) != mid)
        if after != before or not exists:
            records.append(self._current_record(mid, after))
            if (after.state, after.member_epoch) != (before.state, before.member_epoch):
                events.append(MemberEpochChanged(self.group_id, now_ms, mid, before.state.name,
                                                 before.member_epoch, after.state.name,
                                                 after.member_epoch))
        return GroupEngine._Plan(records, events, before, after, compute, selected,
                                 joined=not exists)

    def _apply_heartbeat(self, hb: Heartbeat[U], plan: GroupEngine._Plan, now_ms: int,
                         expired: Outcome) -> HeartbeatResult[U]:
        self._commit(plan.records)
        mid = hb.member_id
        self._selected = plan.selected
        self._schedule(_SESSION, mid, now_ms + self.config.session_timeout_ms)
        before: CurrentAssignment[U] = plan.before
        after: CurrentAssignment[U] = plan.after
        if after != before:
            if after.state is MemberState.UNREVOKED_PARTITIONS:
                timeout = self._metadata[mid][0].rebalance_timeout_ms
                self._schedule(_REBALANCE, mid, now_ms + max(timeout, 0), after.member_epoch)
            else:
                self._cancel(_REBALANCE, mid)
        show = hb.is_full() or plan.joined or after.assigned != before.assigned \
            or after.payload != before.payload
        view = AssignmentView(after.assigned, after.payload) if show else None
        return HeartbeatResult(member_id=mid, member_epoch=after.member_epoch,
                               heartbeat_interval_ms=self.config.heartbeat_interval_ms,
                               assignment=view, compute_assignment=plan.compute,
                               outcome=expired + Outcome(tuple(plan.records), tuple(plan.events)))

    # ----------------------------------------------------------------- other triggers

    def request_rebalance(self, reason: str, now_ms: int) -> Outcome:
        """Bump the group epoch for a reason outside the members' metadata (an operator,
        a scheduled delay running out): a new target becomes due."""
        outcome = self.advance(now_ms)
        if not self._created:
            return outcome
        epoch = self._group_epoch + 1
        records: list[Record] = [GroupMetadataRecord(self.group_id, epoch)]
        self._commit(records)
        return outcome + Outcome(tuple(records), (GroupEpochChanged(self.group_id, now_ms, epoch, reason),))

    def refresh_units(self, now_ms: int) -> Outcome:
        """Server-assigned groups: resolve the subscribed keys again (Kafka's metadata
        refresh); a change of the unit set bumps the group epoch."""
        outcome = self.advance(now_ms)
        if not isinstance(self.policy, ServerAssigned) or not self._created:
            return outcome
        catalog = self.policy.catalog_for(self._metadata_view())
        if catalog == self._catalog:
            return outcome
        epoch = self._group_epoch + 1
        records: list[Record] = [
            UnitSetMetadataRecord(self.group_id, epoch, tuple(sorted(catalog.items()))),
            GroupMetadataRecord(self.group_id, epoch)]
        self._commit(records)
        return outcome + Outcome(tuple(records),
                                 (GroupEpochChanged(self.group_id, now_ms, epoch, "the unit set changed"),))

    # ----------------------------------------------------------------- installed targets

    def prepare_assignment(self, member_id: str, member_epoch: int,
                           now_ms: int) -> PrepareResult[U]:
        """ConnectGroupPrepareAssignment: the group as the selected member must see it to
        compute a target (ERRATA 15: each member's entry in the current target)."""
        expired = self.advance(now_ms)
        try:
            self._require_installer(member_id, member_epoch)
        except RuleViolation as rejected:
            return PrepareResult(error=rejected.error, rule=rejected.rule,
                                 message=rejected.message, outcome=expired)
        members = tuple(
            PreparedMember(mid, self._current_of(mid).member_epoch,
                           self._metadata[mid][0].instance_id,
                           self._metadata[mid][0].client_assignors, self.target(mid))
            for mid in sorted(self._metadata))
        return PrepareResult(group_epoch=self._group_epoch, members=members, outcome=expired)

    def install_assignment(self, member_id: str, member_epoch: int, group_epoch: int,
                           assignment: Mapping[str, MemberTarget[U]], now_ms: int,
                           error: int = 0) -> InstallResult:
        """ConnectGroupInstallAssignment: validate and install the target computed for
        ``group_epoch``. Members that left since are dropped; members not named (joined
        since) get an empty target. A non-zero ``error`` keeps every member's previous
        units and carries the error to each (ERRATA 25)."""
        expired = self.advance(now_ms)
        try:
            self._require_installer(member_id, member_epoch)
            require_install_epoch_usable(group_epoch, self._group_epoch, self._assignment_epoch,
                                         self._membership)
            require_assigned_members_exist(assignment, self._membership[group_epoch],
                                           group_epoch)
            require_units_assigned_once({m: t.units for m, t in assignment.items()})
        except RuleViolation as rejected:
            return InstallResult(error=rejected.error, rule=rejected.rule,
                                 message=rejected.message, outcome=expired)
        new_target: dict[str, MemberTarget[U]] = {}
        for mid in sorted(self._metadata):
            given = assignment.get(mid, MemberTarget())
            if error:
                new_target[mid] = MemberTarget(self.target(mid).units,
                                               replace(given.payload, error=error))
            else:
                new_target[mid] = given
        records: list[Record] = list(self._target_records(new_target))
        union: frozenset[U] = frozenset().union(*(t.units for t in new_target.values()))
        records.append(UnitSetMetadataRecord(self.group_id, group_epoch,
                                             self._installed_catalog(union)))
        records.append(TargetAssignmentMetadataRecord(self.group_id, group_epoch))
        self._commit(records)
        event = TargetAssignmentChanged(self.group_id, now_ms, group_epoch, f"install:{member_id}")
        return InstallResult(outcome=expired + Outcome(tuple(records), (event,)))

    def require_installer(self, member_id: str, member_epoch: int) -> None:
        """Prepare / Install, Request Handling steps 2-4: the member exists, at its epoch,
        and is the one selected to compute (raises ``RuleViolation``; changes nothing)."""
        self._require_installer(member_id, member_epoch)

    def _require_installer(self, member_id: str, member_epoch: int) -> None:
        require_member_known(self._metadata, member_id)
        require_member_epoch_exact(self._current_of(member_id), member_epoch)
        require_selected_member(self.selected_member, member_id)

    # ----------------------------------------------------------------- rebuild

    @classmethod
    def rebuild(cls, records: Iterable[Record], config: EngineConfig, policy: TargetPolicy,
                now_ms: int = 0, store: RecordStore | None = None) -> GroupEngine[U]:
        """An engine whose durable state is what ``records`` (a log or its compacted form)
        say, with timers armed as Kafka does on load: a fresh session timeout for every
        member, a rebalance timeout for every member with a revocation pending."""
        engine: GroupEngine[U] = cls(config, policy, store)
        for record in records:
            engine._replay(record)
        engine._timers.move_to(now_ms)
        if isinstance(policy, Installed):  # the next install's unit set is most likely this
            engine._installed_catalog(frozenset().union(*engine._catalog.values()))
        engine._membership = {engine._group_epoch: frozenset(engine._metadata)}
        for mid in sorted(engine._metadata):
            engine._schedule(_SESSION, mid, now_ms + config.session_timeout_ms)
            current = engine._current_of(mid)
            if current.state is MemberState.UNREVOKED_PARTITIONS:
                timeout = engine._metadata[mid][0].rebalance_timeout_ms
                engine._schedule(_REBALANCE, mid, now_ms + max(timeout, 0), current.member_epoch)
        return engine

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

    def _remove(self, member_id: str, reason: RemovalReason, at_ms: int) -> Outcome:
        """Kafka's fence / leave: tombstones (current, target, metadata; that order), the
        unit set without the member when it changes, and a group epoch bump."""
        records: list[Record] = [
            CurrentAssignmentRecord(self.group_id, member_id, None),
            TargetAssignmentMemberRecord(self.group_id, member_id, None),
            MemberMetadataRecord(self.group_id, member_id, None)]
        epoch = self._group_epoch + 1
        if isinstance(self.policy, ServerAssigned):
            rest = {m: md for m, md in self._metadata_view().items() if m != member_id}
            catalog = self.policy.catalog_for(rest)
            if catalog != self._catalog:
                records.append(UnitSetMetadataRecord(self.group_id, epoch,
                                                     tuple(sorted(catalog.items()))))
        records.append(GroupMetadataRecord(self.group_id, epoch))
        self._commit(records)
        self._cancel(_SESSION, member_id)
        self._cancel(_REBALANCE, member_id)
        if self._selected == member_id:
            self._selected = None
        events = (MemberRemoved(self.group_id, at_ms, member_id, None, reason),
                  GroupEpochChanged(self.group_id, at_ms, epoch, f"member {member_id} removed ({reason})"))
        return Outcome(tuple(records), events)

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


def _md_value(md: MemberMetadata, epoch: int) -> MemberMetadataValue:
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


__all__ = [
    "EngineConfig", "Heartbeat", "AssignmentView", "Outcome", "HeartbeatResult",
    "PreparedMember", "PrepareResult", "InstallResult", "GroupSnapshot", "GroupEngine",
]
