"""SyncGroup (API 14, v0-5) for classic groups.

During CompletingRebalance a follower's SyncGroup is parked until the leader's arrives;
the leader's carries every assignment, which completes all parked syncs at once and makes
the group Stable. In Stable a SyncGroup is answered at once with the stored assignment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from .. import migration
from ..classic.group import ClassicGroup
from ..classic.replies import SyncResult, sync_response
from ..classic.rules import (require_generation_matches, require_group_id_not_empty,
                             require_group_not_dead, require_member_identity,
                             require_not_rebalancing, require_protocol_consistent,
                             require_sync_protocol_fields_present)
from ..classic.state import ClassicGroupState
from ..context import RequestContext
from ..errors import RuleViolation

if TYPE_CHECKING:
    from ..view import CoordinatorView

S = ClassicGroupState


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    group_id: str = b.group_id
    member_id: str = b.member_id
    instance_id: str | None = b.group_instance_id
    protocol_type: str | None = b.protocol_type
    protocol_name: str | None = b.protocol_name

    def answer(result: SyncResult) -> None:
        coord.env.reply(ctx, sync_response(coord.registry, ctx.api_version, result))

    try:
        require_sync_protocol_fields_present(ctx.api_version, protocol_type, protocol_name)
        require_group_id_not_empty(group_id)
        if migration.carried_over(coord, group_id, member_id) is not None:
            # Migration M7: a classic member carried into a connect group must rejoin.
            raise RuleViolation(ErrorCode.REBALANCE_IN_PROGRESS, "sync-carried-over")
        group = _classic_non_empty_group(coord, group_id)
        require_group_not_dead(group)
        require_member_identity(group, member_id, instance_id)
        require_generation_matches(group, b.generation_id)
        require_protocol_consistent(group, protocol_type, protocol_name)
        require_not_rebalancing(group)
    except RuleViolation as v:
        answer(SyncResult(v.error))
        return

    rb = coord.rebalancer
    member = group.member(member_id)
    if group.state is S.COMPLETING_REBALANCE:
        member.awaiting_sync = ctx
        rb.remove_pending_sync_member(group, member_id)
        if group.is_leader(member_id):
            assignment: dict[str, bytes] = {}
            for a in b.assignments:
                assignment[a.member_id] = bytes(a.assignment)  # a repeated id: the last wins
            rb.set_and_propagate_assignment(group, assignment)
            group.transition_to(S.STABLE)
    else:  # Stable
        rb.remove_pending_sync_member(group, member_id)
        answer(SyncResult(ErrorCode.NONE, member.assignment, group.protocol_type,
                          group.protocol_name))


def _classic_non_empty_group(coord: CoordinatorView, group_id: str) -> ClassicGroup:
    """An unknown group, an Empty one, or one of another type: UNKNOWN_MEMBER_ID."""
    group = coord.groups.get(group_id)
    if group is None or group.is_empty() or not isinstance(group, ClassicGroup):
        raise RuleViolation(ErrorCode.UNKNOWN_MEMBER_ID, "sync-group-exists-and-not-empty")
    return group
