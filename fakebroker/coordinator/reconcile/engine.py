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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ...protocol.error_codes import ErrorCode
from .api import (AssignmentView, EngineConfig, GroupSnapshot, Heartbeat, HeartbeatResult, InstallResult,
                  Outcome, PreparedMember, PrepareResult)
from .assignors import AssignorError
from ..errors import RuleViolation
from ..events import (AssignmentComputeRequested, GroupEpochChanged, GroupEvent, MemberEpochChanged,
                      MemberJoined, MemberRemoved, RemovalReason, TargetAssignmentChanged)
from .member import CurrentAssignment, MemberMetadata, MemberState, MemberTarget
from .reconciliation import reconcile
from .records import (CurrentAssignmentRecord, GroupMetadataRecord, MemberMetadataRecord, Record, RecordStore,
                      TargetAssignmentMemberRecord, TargetAssignmentMetadataRecord, UnitSetMetadataRecord)
from .state import REBALANCE, SESSION, md_value
from .static_members import StaticMembership
from .target import Installed, ServerAssigned, TargetPolicy
from .units import U
from .validation import (JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, require_assigned_members_exist,
                         require_group_not_full, require_install_epoch_usable, require_member_epoch_current,
                         require_member_epoch_exact, require_member_known, require_selected_member,
                         require_units_assigned_once)

E = ErrorCode


class GroupEngine(StaticMembership[U]):
    """The state machine: each call fires the due timers, then plans its records (refusing
    before any is written), commits them and answers. State and replay: ``state.GroupState``;
    static members: ``static_members.StaticMembership``."""

    # ----------------------------------------------------------------- time

    def advance(self, now_ms: int) -> Outcome:
        """Fire every timer due at ``now_ms`` (session and rebalance timeouts)."""
        outcome = Outcome()
        for deadline, (kind, member_id, epoch) in self._timers.due(now_ms):
            if member_id not in self._metadata:
                continue
            if kind == SESSION:
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
            records.append(MemberMetadataRecord(self.group_id, mid, md_value(new_md, group_epoch)))
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
        self._schedule(SESSION, mid, now_ms + self.config.session_timeout_ms)
        before: CurrentAssignment[U] = plan.before
        after: CurrentAssignment[U] = plan.after
        if after != before:
            if after.state is MemberState.UNREVOKED_PARTITIONS:
                timeout = self._metadata[mid][0].rebalance_timeout_ms
                self._schedule(REBALANCE, mid, now_ms + max(timeout, 0), after.member_epoch)
            else:
                self._cancel(REBALANCE, mid)
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
            engine._schedule(SESSION, mid, now_ms + config.session_timeout_ms)
            current = engine._current_of(mid)
            if current.state is MemberState.UNREVOKED_PARTITIONS:
                timeout = engine._metadata[mid][0].rebalance_timeout_ms
                engine._schedule(REBALANCE, mid, now_ms + max(timeout, 0), current.member_epoch)
        return engine

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
        self._cancel(SESSION, member_id)
        self._cancel(REBALANCE, member_id)
        if self._selected == member_id:
            self._selected = None
        events = (MemberRemoved(self.group_id, at_ms, member_id, None, reason),
                  GroupEpochChanged(self.group_id, at_ms, epoch, f"member {member_id} removed ({reason})"))
        return Outcome(tuple(records), events)


__all__ = [
    "EngineConfig", "Heartbeat", "AssignmentView", "Outcome", "HeartbeatResult",
    "PreparedMember", "PrepareResult", "InstallResult", "GroupSnapshot", "GroupEngine",
]
