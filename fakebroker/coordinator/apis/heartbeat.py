"""Heartbeat (API 12, v0-4) for classic groups.

A valid heartbeat restarts the member's session timer. During PreparingRebalance it is
answered REBALANCE_IN_PROGRESS (the member must rejoin); in CompletingRebalance and Stable
with NONE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from .. import migration
from ..classic.group import ClassicGroup
from ..classic.rules import (require_generation_matches, require_group_id_not_empty,
                             require_group_not_dead, require_member_identity)
from ..classic.state import ClassicGroupState
from ..context import RequestContext
from ..errors import RuleViolation

if TYPE_CHECKING:
    from ..view import CoordinatorView

S = ClassicGroupState


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    error = decide(coord, b.group_id, b.generation_id, b.member_id, b.group_instance_id)
    coord.env.reply(ctx, coord.registry["HeartbeatResponse"].new(error_code=int(error)))


def decide(coord: CoordinatorView, group_id: str, generation_id: int, member_id: str,
           group_instance_id: str | None) -> ErrorCode:
    """A heartbeat's effect on the groups (its session timer restarted) and its error code:
    the one implementation of the rules, for ``handle`` and the server's fast path
    (``GroupCoordinator.heartbeat``)."""
    try:
        require_group_id_not_empty(group_id)
        group = _classic_group(coord, group_id, member_id)
        require_group_not_dead(group)
        require_member_identity(group, member_id, group_instance_id)
        require_generation_matches(group, generation_id)
        return _error_for_state(coord, group, member_id)
    except RuleViolation as v:
        return v.error


def _classic_group(coord: CoordinatorView, group_id: str, member_id: str) -> ClassicGroup:
    group = coord.groups.get(group_id)
    if not isinstance(group, ClassicGroup):
        if migration.carried_over(coord, group_id, member_id) is not None:
            # Migration M7: a classic member carried into a connect group must rejoin.
            raise RuleViolation(ErrorCode.REBALANCE_IN_PROGRESS, "heartbeat-carried-over")
        # Absent, or another type: "Group %s not found."
        raise RuleViolation(ErrorCode.UNKNOWN_MEMBER_ID, "heartbeat-group-exists")
    return group  # (a classic group carries no member over: checked only otherwise)


def _error_for_state(coord: CoordinatorView, group: ClassicGroup, member_id: str) -> ErrorCode:
    if group.state is S.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    # Members may heartbeat right after their JoinGroup response, in CompletingRebalance.
    coord.rebalancer.reschedule_heartbeat(group, group.member(member_id))
    if group.state is S.PREPARING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE
