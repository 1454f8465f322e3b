"""JoinGroup (API 11, v0-9) for classic groups.

Kafka's order of checks: group id, session timeout bounds (before the group is looked up),
group type (an empty consumer or connect group is deleted, a non-empty one is
INCONSISTENT_GROUP_PROTOCOL), unknown group with a member id, group.max.size; then the
new-member or the existing-member path. A join that must wait is parked on its member and
answered when the join phase completes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from .. import migration
from ..classic.group import ClassicGroup
from ..classic.join_request import JoinRequest
from ..classic.replies import JoinResult, join_response
from ..classic.rules import (group_accepts_joining_member, require_group_id_not_empty,
                             require_group_not_dead, require_member_identity,
                             require_protocols_supported, require_session_timeout_in_bounds)
from ..classic.state import ClassicGroupState
from ..context import RequestContext
from ..errors import RuleViolation
from ..events import RemovalReason

if TYPE_CHECKING:
    from ..view import CoordinatorView

S = ClassicGroupState


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: JoinRequest | None = None) -> None:
    req = prepared if prepared is not None else JoinRequest.from_struct(body, ctx.api_version)

    def answer(result: JoinResult) -> None:
        coord.env.reply(ctx, join_response(coord.registry, ctx.api_version, result))

    try:
        require_group_id_not_empty(req.group_id)
        require_session_timeout_in_bounds(req.session_timeout_ms, coord.config)
    except RuleViolation as v:
        answer(JoinResult(v.error, member_id=req.member_id))
        return

    existing = coord.groups.get(req.group_id)
    if existing is not None and not isinstance(existing, ClassicGroup):
        carried = migration.carried_over(coord, req.group_id, req.member_id)
        if carried is not None:
            # Migration M7: a classic member carried into a connect group leaves it.
            migration.classic_rejoin(coord, carried, req.member_id)
            answer(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
            return
        if not existing.is_empty():
            # Another group type owns the id. (Kafka 4.x lets a classic member with protocol
            # type "consumer" join a non-empty consumer group - online migration, not
            # modelled here; every other protocol type gets this error there too.)
            answer(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        # Kafka deletes an empty consumer group a classic member joins (the draft: a connect
        # group converts back when its last new-protocol worker has left).
        coord.drop_group(req.group_id, replaced_by="classic")
        existing = None
    is_unknown_member = req.member_id == ""
    if existing is None and not is_unknown_member:
        # Only a member without an id creates a group.
        answer(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
        return
    group = existing if existing is not None else coord.create_classic_group(req.group_id)

    if not group_accepts_joining_member(group, req.member_id, coord.config.max_group_size):
        # Kafka drops the refused member too (a rejoining member of an over-full group).
        if group.has_member(req.member_id) or group.is_pending(req.member_id):
            coord.rebalancer.cancel_heartbeat(group, req.member_id)
        group.remove(req.member_id, RemovalReason.GROUP_MAX_SIZE)
        answer(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
        return

    if is_unknown_member:
        _join_new_member(coord, ctx, req, group, answer)
    else:
        _join_existing_member(coord, ctx, req, group, answer)


def _join_new_member(coord: CoordinatorView, ctx: RequestContext, req: JoinRequest,
                     group: ClassicGroup, answer: _Answer) -> None:
    try:
        require_group_not_dead(group)
        require_protocols_supported(group, req.protocol_type, req.protocol_names)
    except RuleViolation as v:
        answer(JoinResult(v.error))
        return
    new_member_id = coord.config.member_id(ctx.client_id, req.group_instance_id)
    rb = coord.rebalancer
    if req.group_instance_id is not None:
        old_member_id = group.static_member_id(req.group_instance_id)
        if old_member_id is not None:
            rb.replace_static_member_then_rebalance_or_complete_join(
                ctx, req, group, old_member_id, new_member_id)
        else:
            rb.add_member_then_rebalance_or_complete_join(ctx, req, group, new_member_id)
    elif ctx.api_version >= 4:
        # KIP-394: a dynamic member must come back with the id it is given.
        rb.issue_pending_member_id(group, new_member_id, req.session_timeout_ms)
        answer(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_member_id))
    else:
        rb.add_member_then_rebalance_or_complete_join(ctx, req, group, new_member_id)


def _join_existing_member(coord: CoordinatorView, ctx: RequestContext, req: JoinRequest,
                          group: ClassicGroup, answer: _Answer) -> None:
    member_id = req.member_id
    try:
        require_group_not_dead(group)
        require_protocols_supported(group, req.protocol_type, req.protocol_names)
    except RuleViolation as v:
        answer(JoinResult(v.error, member_id=member_id))
        return
    rb = coord.rebalancer
    if group.is_pending(member_id):
        if req.group_instance_id is not None:
            # Kafka: IllegalStateException (a pending id is never static) -> unknown error.
            answer(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR))
            return
        rb.add_member_then_rebalance_or_complete_join(ctx, req, group, member_id)
        return
    try:
        require_member_identity(group, member_id, req.group_instance_id)
    except RuleViolation as v:
        answer(JoinResult(v.error, member_id=member_id))
        return

    member = group.member(member_id)
    state = group.state
    if state is S.PREPARING_REBALANCE:
        rb.update_member_then_rebalance_or_complete_join(
            ctx, req, group, member,
            f"Member {member_id} is joining group during {state}; client reason: {req.reason_text}")
    elif state is S.COMPLETING_REBALANCE:
        if member.matches(req.protocols):
            # Same metadata (it missed its JoinGroup response): resend this generation.
            answer(rb.join_result(group, member_id, with_members=group.is_leader(member_id)))
        else:
            rb.update_member_then_rebalance_or_complete_join(
                ctx, req, group, member,
                f"Updating metadata for member {member_id} during {state}; "
                f"client reason: {req.reason_text}")
    elif state is S.STABLE:
        if group.is_leader(member_id):
            # The leader rejoining forces a rebalance (it saw a change the metadata hides).
            rb.update_member_then_rebalance_or_complete_join(
                ctx, req, group, member,
                f"Leader {member_id} re-joining group during {state}; "
                f"client reason: {req.reason_text}")
        elif not member.matches(req.protocols):
            rb.update_member_then_rebalance_or_complete_join(
                ctx, req, group, member,
                f"Updating metadata for member {member_id} during {state}; "
                f"client reason: {req.reason_text}")
        else:
            answer(rb.join_result(group, member_id, with_members=False))
    else:
        # Empty (no members, so unreachable after the identity check): rejoin from scratch.
        answer(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))


if TYPE_CHECKING:
    from collections.abc import Callable

    _Answer = Callable[[JoinResult], None]
