"""The classic rebalance machinery: when a join phase starts and ends, when a sync phase
ends, what each timer does, and how parked JoinGroup / SyncGroup requests are answered.

It follows Apache Kafka's GroupMetadataManager (classic part) step by step; the method
names say which step. Three timers per group, keyed as in Kafka:

- ("heartbeat", group, member): session timeout (the new-member join timeout for a member
  whose first join has not completed; the request's session timeout for a pending id);
- ("join", group): end of the join phase (initial rebalance delay, or rebalance timeout);
- ("sync", group): end of the sync phase (rebalance timeout after the join phase).
"""

from __future__ import annotations

from collections.abc import Callable

from ...protocol.error_codes import ErrorCode
from ..context import RequestContext
from ..env import Env
from ..events import MemberIdIssued, RebalanceStarted, RemovalReason
from .group import ClassicGroup
from .join_request import JoinRequest
from .member import ClassicMember
from .replies import JoinResult, SyncResult, join_response, sync_response
from .state import ClassicGroupState

S = ClassicGroupState
GroupLookup = Callable[[str], "ClassicGroup | None"]


def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


def _null(value: str | None) -> str:
    return "null" if value is None else value


class Rebalancer:
    def __init__(self, env: Env, find_group: GroupLookup) -> None:
        self.env = env
        self._find = find_group

    # ------------------------------------------------------------------ parked requests

    def answer_join(self, group: ClassicGroup, member: ClassicMember, result: JoinResult) -> bool:
        """Answer the member's parked JoinGroup, if it has one."""
        ctx = group.take_join(member)
        if ctx is None:
            return False
        self.env.reply(ctx, join_response(self.env.registry, ctx.api_version, result))
        return True

    def answer_sync(self, member: ClassicMember, result: SyncResult) -> bool:
        """Answer the member's parked SyncGroup, if it has one."""
        ctx = member.awaiting_sync
        if ctx is None:
            return False
        member.awaiting_sync = None
        self.env.reply(ctx, sync_response(self.env.registry, ctx.api_version, result))
        return True

    def join_result(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                    leader: str | None = None, skip_assignment: bool = False) -> JoinResult:
        """The success answer for the current generation."""
        return JoinResult(
            error=ErrorCode.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=(group.leader_id if leader is None else leader) or "",
            skip_assignment=skip_assignment,
            members=tuple(group.joined_members()) if with_members else (),
        )

    # ------------------------------------------------------------------ heartbeats

    def reschedule_heartbeat(self, group: ClassicGroup, member: ClassicMember,
                             timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.env.timers.schedule(heartbeat_key(gid, mid), self.env.now_ms + timeout,
                                 lambda: self.expire_heartbeat(gid, mid))

    def cancel_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        self.env.timers.cancel(heartbeat_key(group.group_id, member_id))

    def issue_pending_member_id(self, group: ClassicGroup, member_id: str,
                                session_timeout_ms: int) -> None:
        """MEMBER_ID_REQUIRED: remember the id; it expires after the session timeout."""
        group.add_pending(member_id)
        self.env.emit(MemberIdIssued(group.group_id, self.env.now_ms, member_id))
        gid = group.group_id
        self.env.timers.schedule(heartbeat_key(gid, member_id), self.env.now_ms + session_timeout_ms,
                                 lambda: self.expire_heartbeat(gid, member_id))

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self._find(group_id)
        if group is None or group.state is S.DEAD:
            return
        if group.is_pending(member_id):
            self.remove_pending_member_and_update(group, member_id, RemovalReason.SESSION_TIMEOUT)
            return
        if not group.has_member(member_id):
            return
        member = group.member(member_id)
        # A member with a parked join or sync is waiting on the coordinator, not failing;
        # its heartbeat is rescheduled when that phase completes.
        if not member.has_satisfied_heartbeat():
            reason = (RemovalReason.NEW_MEMBER_JOIN_TIMEOUT if member.is_new
                      else RemovalReason.SESSION_TIMEOUT)
            self.remove_member_and_update(
                group, member, reason, f"removing member {member_id} on heartbeat expiration.")

    # ------------------------------------------------------------------ removals

    def remove_member_and_update(self, group: ClassicGroup, member: ClassicMember,
                                 reason: RemovalReason, rebalance_reason: str) -> None:
        # A new member may still have its first JoinGroup parked: it gets UNKNOWN_MEMBER_ID
        # so that a live client retries.
        self.answer_join(group, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
        group.remove(member.member_id, reason)
        if group.in_state(S.STABLE, S.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group, rebalance_reason)
        elif group.in_state(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join_phase(group)

    def remove_pending_member_and_update(self, group: ClassicGroup, member_id: str,
                                         reason: RemovalReason, detail: str = "") -> None:
        group.remove(member_id, reason, detail)
        if group.in_state(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join_phase(group)

    def remove_leaving_member(self, group: ClassicGroup, member_id: str, detail: str) -> None:
        """LeaveGroup: drop the member, answering a parked JoinGroup with UNKNOWN_MEMBER_ID."""
        member = group.member(member_id)
        self.cancel_heartbeat(group, member_id)
        self.answer_join(group, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
        group.remove(member_id, RemovalReason.LEAVE, detail)

    # ------------------------------------------------------------------ join phase

    def add_member_then_rebalance_or_complete_join(self, ctx: RequestContext, req: JoinRequest,
                                                   group: ClassicGroup, member_id: str) -> None:
        member = ClassicMember(
            member_id=member_id, group_instance_id=req.group_instance_id,
            client_id=ctx.client_id, client_host=ctx.kafka_client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type, protocols=req.protocols,
            awaiting_join=ctx, is_new=True)
        if group.in_state(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
            group.new_member_added = True  # extends the initial rebalance delay
        group.add(member)
        # A parked new member cannot heartbeat: bound its wait by the new-member timeout.
        self.reschedule_heartbeat(group, member, self.env.config.new_member_join_timeout_ms)
        self.maybe_prepare_rebalance_or_complete_join(
            group, f"Adding new member {member_id} with group instance id "
                   f"{_null(req.group_instance_id)}; client reason: {req.reason_text}")

    def update_member(self, group: ClassicGroup, member: ClassicMember, req: JoinRequest,
                      ctx: RequestContext) -> None:
        """Take the rejoin's protocols and timeouts, and park it. A join already parked for
        this member is dropped unanswered, as Kafka drops its future."""
        group.set_protocols(member, req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        group.park_join(member, ctx)

    def update_member_then_rebalance_or_complete_join(self, ctx: RequestContext, req: JoinRequest,
                                                      group: ClassicGroup, member: ClassicMember,
                                                      reason: str) -> None:
        self.update_member(group, member, req, ctx)
        self.maybe_prepare_rebalance_or_complete_join(group, reason)

    def replace_static_member_then_rebalance_or_complete_join(
            self, ctx: RequestContext, req: JoinRequest, group: ClassicGroup,
            old_member_id: str, new_member_id: str) -> None:
        """A static member rejoins without a member id (it restarted): its instance gets the
        new id, the old id is fenced, and a rebalance happens only if it must."""
        assert req.group_instance_id is not None
        leader_before = group.leader_id
        old = group.member(old_member_id)
        self.answer_join(group, old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id))
        self.answer_sync(old, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        self.cancel_heartbeat(group, old_member_id)
        new = group.replace_static_member(req.group_instance_id, old_member_id, new_member_id)
        # Kafka reschedules before updating, so with the predecessor's session timeout.
        self.reschedule_heartbeat(group, new)
        self.update_member(group, new, req, ctx)

        if group.state is S.STABLE:
            if (group.protocol_name or "") == group.select_protocol():
                # Nothing for the group to redo: answer with the current generation.
                if ctx.api_version >= 9:
                    is_leader = group.is_leader(new_member_id)
                    result = self.join_result(group, new_member_id, with_members=is_leader,
                                              skip_assignment=is_leader)
                else:
                    # Older clients are told the pre-restart leader id, so a restarted leader
                    # does not compute a new assignment.
                    result = self.join_result(group, new_member_id, with_members=False,
                                              leader=leader_before or "")
                self.answer_join(group, new, result)
            else:
                self.maybe_prepare_rebalance_or_complete_join(
                    group, f"Group's selectedProtocol will change because static member "
                           f"{new_member_id} with instance id {req.group_instance_id} joined "
                           f"with change of protocol; client reason: {req.reason_text}")
        elif group.state is S.COMPLETING_REBALANCE:
            # The leader may be assigning for the old id: start over.
            self.prepare_rebalance(
                group, f"Updating metadata for static member {new_member_id} with instance id "
                       f"{req.group_instance_id}; client reason: {req.reason_text}")
        else:
            self.maybe_complete_join_phase(group)

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)
        else:
            self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.state is S.COMPLETING_REBALANCE:
            # Members waiting for an assignment must rejoin instead.
            self.reset_and_propagate_assignment_with_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        initial = group.state is S.EMPTY
        if initial:
            delay = self.env.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_rebalance(group.group_id, delay, remaining)
        self.env.emit(RebalanceStarted(group.group_id, self.env.now_ms, group.generation_id, reason))
        group.transition_to(S.PREPARING_REBALANCE)
        if not initial:
            self.maybe_complete_join_else_schedule(group)

    def _schedule_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        self.env.timers.schedule(
            join_key(group_id), self.env.now_ms + delay_ms,
            lambda: self.try_complete_initial_rebalance(group_id, delay_ms, remaining_ms))

    def try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        """group.initial.rebalance.delay.ms: while members keep arriving, wait another delay,
        up to the group's rebalance timeout in total."""
        group = self._find(group_id)
        if group is None:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.env.config.initial_rebalance_delay_ms, remaining_ms)
            # Kafka subtracts the previous delay here, not the new one.
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule_initial_rebalance(group_id, new_delay, new_remaining)
        else:
            self.complete_join_phase(group)

    def maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self.complete_join_phase(group)
        else:
            self._schedule_join_completion(group)

    def _schedule_join_completion(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.env.timers.schedule(join_key(gid), self.env.now_ms + group.rebalance_timeout_ms(),
                                 lambda: self._complete_join_phase_of(gid))

    def _complete_join_phase_of(self, group_id: str) -> None:
        group = self._find(group_id)
        if group is not None:
            self.complete_join_phase(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if group.state is not S.PREPARING_REBALANCE:
            return
        if group.previous_state is S.EMPTY:
            return  # the initial rebalance ends only when its delay expires
        if not group.has_all_members_joined():
            return
        self.complete_join_phase(group)

    def complete_join_phase(self, group: ClassicGroup) -> None:
        """End the join phase: drop dynamic members that did not rejoin, start the next
        generation, answer every parked JoinGroup and wait for SyncGroups."""
        self.env.timers.cancel(join_key(group.group_id))
        for m in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(m.member_id, RemovalReason.REBALANCE_TIMEOUT)
            self.cancel_heartbeat(group, m.member_id)
        if group.state is S.DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: try again after another rebalance timeout, by which time the
            # session timeouts will have removed the silent members.
            self._schedule_join_completion(group)
            return
        group.init_next_generation()
        if group.state is S.EMPTY:
            return
        for m in list(group.members.values()):
            self.answer_join(group, m, self.join_result(group, m.member_id,
                                                 with_members=group.is_leader(m.member_id)))
            self.reschedule_heartbeat(group, m)
            m.is_new = False
            group.pending_sync[m.member_id] = None
        self.schedule_pending_sync(group)

    # ------------------------------------------------------------------ sync phase

    def schedule_pending_sync(self, group: ClassicGroup) -> None:
        gid, generation = group.group_id, group.generation_id
        self.env.timers.schedule(sync_key(gid), self.env.now_ms + group.rebalance_timeout_ms(),
                                 lambda: self.expire_pending_sync(gid, generation))

    def expire_pending_sync(self, group_id: str, generation_id: int) -> None:
        group = self._find(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.in_state(S.COMPLETING_REBALANCE, S.STABLE) and not group.has_received_sync_from_all():
            late = list(group.pending_sync)
            for mid in late:
                group.remove(mid, RemovalReason.SYNC_TIMEOUT)
                self.cancel_heartbeat(group, mid)
            self.prepare_rebalance(group, f"Removing {late} on pending sync request expiration")

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync.clear()
        self.env.timers.cancel(sync_key(group.group_id))

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if group.in_state(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or group.has_received_sync_from_all():
            self.env.timers.cancel(sync_key(group.group_id))

    def reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        assert group.state is S.COMPLETING_REBALANCE
        for m in group.members.values():
            m.assignment = b""
        self.propagate_assignment(group, error)

    def set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        assert group.state is S.COMPLETING_REBALANCE
        for m in group.members.values():
            m.assignment = assignment.get(m.member_id, b"")
        self.propagate_assignment(group, ErrorCode.NONE)

    def propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error is ErrorCode.NONE
        for m in list(group.members.values()):
            answered = self.answer_sync(m, SyncResult(
                error, m.assignment,
                group.protocol_type if ok else None, group.protocol_name if ok else None))
            if answered:
                # Expirations seen while the sync was parked were ignored: restart the clock.
                self.reschedule_heartbeat(group, m)

    # ------------------------------------------------------------------ unloading

    def unload(self, group: ClassicGroup) -> None:
        """Kafka's onUnloaded: the group becomes Dead; parked requests get NOT_COORDINATOR."""
        group.transition_to(S.DEAD)
        if group.previous_state is S.PREPARING_REBALANCE:
            for m in list(group.members.values()):
                self.answer_join(group, m, JoinResult(ErrorCode.NOT_COORDINATOR, member_id=m.member_id))
        elif group.previous_state in (S.COMPLETING_REBALANCE, S.STABLE):
            for m in list(group.members.values()):
                self.answer_sync(m, SyncResult(ErrorCode.NOT_COORDINATOR))
        gid = group.group_id
        self.env.timers.cancel_where(lambda k: isinstance(k, tuple) and len(k) >= 2 and k[1] == gid)
