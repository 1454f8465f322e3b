"""KIP-848 static membership in a heartbeat-driven group: a member with an instance id may
leave for now (member epoch -2), keeping its place, and a member joining with that instance
id takes the place over under its own member id (Kafka's replaceMember); other uses of the
instance id are refused (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID)."""

from __future__ import annotations

from dataclasses import replace

from ...protocol.error_codes import ErrorCode as E
from ..errors import RuleViolation
from ..events import MemberEpochChanged, MemberJoined, MemberRemoved, RemovalReason
from .api import Heartbeat, HeartbeatResult, Outcome
from .member import CurrentAssignment, MemberMetadata, MemberTarget
from .records import (CurrentAssignmentRecord, MemberMetadataRecord, Record, TargetAssignmentMemberRecord,
                      TargetMemberValue)
from .state import REBALANCE, SESSION, GroupState, md_value
from .units import EMPTY, U, sorted_units
from .validation import JOIN_EPOCH, STATIC_LEAVE_EPOCH, require_member_known


class StaticMembership(GroupState[U]):
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
        records = self._moved(old, new, md, md_epoch, target, copy)
        # (A rebalance deadline never fences a member at -2: only its session is kept.)
        session_deadline = self.deadline(SESSION, old)
        self._commit(records)
        self._cancel(SESSION, old)
        self._cancel(REBALANCE, old)
        self._undo = (old, md, md_epoch, target, current, new, session_deadline)
        events = (MemberRemoved(self.group_id, now_ms, old, None, RemovalReason.FENCED),
                  MemberJoined(self.group_id, now_ms, new, md.instance_id, replaces=old))
        return Outcome(tuple(records), events)

    def _moved(self, gone: str, to: str, md: MemberMetadata, md_epoch: int, target: MemberTarget[U],
               current: CurrentAssignment[U]) -> list[Record]:
        """The records that hand a static member's metadata, target and current assignment from
        member id ``gone`` to ``to`` (a replacement, or its undoing)."""
        return [
            CurrentAssignmentRecord(self.group_id, gone, None),
            TargetAssignmentMemberRecord(self.group_id, gone, None),
            MemberMetadataRecord(self.group_id, gone, None),
            MemberMetadataRecord(self.group_id, to, md_value(md, md_epoch)),
            TargetAssignmentMemberRecord(self.group_id, to, TargetMemberValue(
                sorted_units(target.units), target.payload)),
            self._current_record(to, current)]

    def _undo_replacement(self, replaced: Outcome) -> None:
        old, md, md_epoch, target, current, new, session_deadline = self._undo
        self._commit(self._moved(new, old, md, md_epoch, target, current))
        if session_deadline is not None:
            self._schedule(SESSION, old, session_deadline)
