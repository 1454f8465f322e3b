"""LeaveGroup (API 13, v0-5) for classic groups.

v0-2 name one member; v3+ name a batch (KIP-345), each answered on its own: by member id,
or by group.instance.id alone (administrative removal of a static member). After the
batch the group rebalances, or completes a join phase the leavers were holding up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from ..classic.group import ClassicGroup
from ..classic.rules import require_group_id_not_empty, require_member_identity
from ..classic.state import ClassicGroupState
from ..context import RequestContext
from ..errors import RuleViolation
from ..events import RemovalReason

if TYPE_CHECKING:
    from ..view import CoordinatorView

S = ClassicGroupState


@dataclass(frozen=True)
class Leaver:
    member_id: str
    group_instance_id: str | None
    reason: str | None


@dataclass(frozen=True)
class LeaverResult:
    leaver: Leaver
    error: ErrorCode


def leavers_of(body: Struct, api_version: int) -> list[Leaver]:
    """Kafka's normalizedData(): v0-2's single MemberId becomes a one-member batch."""
    b: Any = body
    if api_version < 3:
        return [Leaver(b.member_id, None, None)]
    return [Leaver(m.member_id, m.group_instance_id, m.reason) for m in b.members]


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    leavers = leavers_of(body, ctx.api_version)
    group_id: str = getattr(body, "group_id")
    try:
        require_group_id_not_empty(group_id)
    except RuleViolation as v:
        _answer(coord, ctx, v.error, [])
        return
    group = coord.groups.get(group_id)
    if not isinstance(group, ClassicGroup):
        # "Group %s not found.": every named member is unknown.
        _answer(coord, ctx, ErrorCode.NONE,
                [LeaverResult(m, ErrorCode.UNKNOWN_MEMBER_ID) for m in leavers])
        return
    if group.state is S.DEAD:
        _answer(coord, ctx, ErrorCode.COORDINATOR_NOT_AVAILABLE, [])
        return

    results = [_leave_one(coord, group, m) for m in leavers]
    left = [r.leaver.member_id for r in results if r.error is ErrorCode.NONE]
    if left:
        rb = coord.rebalancer
        if group.in_state(S.STABLE, S.COMPLETING_REBALANCE):
            rb.maybe_prepare_rebalance_or_complete_join(
                group, f"explicit `LeaveGroup` request for ({', '.join(left)}) members.")
        elif group.state is S.PREPARING_REBALANCE:
            rb.maybe_complete_join_phase(group)
    _answer(coord, ctx, ErrorCode.NONE, results)


def _leave_one(coord: CoordinatorView, group: ClassicGroup, m: Leaver) -> LeaverResult:
    rb = coord.rebalancer
    detail = m.reason if m.reason is not None else "not provided"
    if m.member_id == "":
        # Removal by instance id alone (e.g. an admin client removing a static member).
        static_id = group.static_member_id(m.group_instance_id) if m.group_instance_id else None
        if static_id is None:
            return LeaverResult(m, ErrorCode.UNKNOWN_MEMBER_ID)
        rb.remove_leaving_member(group, static_id, detail)
        return LeaverResult(m, ErrorCode.NONE)
    if group.is_pending(m.member_id):
        rb.cancel_heartbeat(group, m.member_id)
        group.remove(m.member_id, RemovalReason.LEAVE, detail)
        return LeaverResult(m, ErrorCode.NONE)
    try:
        require_member_identity(group, m.member_id, m.group_instance_id)
    except RuleViolation as v:
        return LeaverResult(m, v.error)
    rb.remove_leaving_member(group, m.member_id, detail)
    return LeaverResult(m, ErrorCode.NONE)


def _answer(coord: CoordinatorView, ctx: RequestContext, error: ErrorCode,
            results: list[LeaverResult]) -> None:
    mt = coord.registry["LeaveGroupResponse"]
    if ctx.api_version >= 3:
        member_cls: Any = getattr(mt.cls, "MemberResponse")
        body = mt.new(error_code=int(error), members=[
            member_cls(member_id=r.leaver.member_id, group_instance_id=r.leaver.group_instance_id,
                       error_code=int(r.error)) for r in results])
    else:
        # v0-2 have no member list: the one member's error is the response's error.
        if error is ErrorCode.NONE and results:
            error = results[0].error
        body = mt.new(error_code=int(error))
    coord.env.reply(ctx, body)
