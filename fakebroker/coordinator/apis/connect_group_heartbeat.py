"""ConnectGroupHeartbeat (v0; the draft, as ``schemas/ERRATA.md`` resolves it).

Order:

1. Request Validation, in the draft's order (INVALID_REQUEST), then UNSUPPORTED_ASSIGNOR
   for any ServerAssignor (ERRATA 27) - ``require_connect_heartbeat_shape``.
2. Request Handling, step 1: look the group up, or create it on a join (epoch 0). A
   request other than a join to a missing group is UNKNOWN_MEMBER_ID (the draft lists no
   GROUP_ID_NOT_FOUND for this API; the member cannot exist). A join replaces an *empty*
   group of another type, and converts a classic group of protocol type ``connect``
   (the draft's migration, ``../migration.py``: Stable only, else REBALANCE_IN_PROGRESS;
   the group epoch continues from the classic generation). Any other request to a
   non-empty group of another type is answered GROUP_ID_NOT_FOUND, as Kafka answers a
   consumer heartbeat to another group type.
3. UNSUPPORTED_ASSIGNOR when this member's ClientAssignors would leave the group without a
   member whose version range covers every other member's (ERRATA 19): the member is not
   admitted and nothing changes.
4. The engine: member exists (UNKNOWN_MEMBER_ID), member epoch (FENCED_MEMBER_EPOCH - the
   member is also removed, step 3), metadata and group epoch (a change of any assignor
   field, Reason included, is a new group epoch: ERRATA 21, 22), reconciliation; the
   selected member gets COMPUTE_ASSIGNMENT with every other field valid (ERRATA 17).

Epoch -1 leaves the group; the response carries MemberEpoch -1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from .. import migration
from ..classic.group import ClassicGroup
from ..context import RequestContext
from ..modern import ConnectGroup
from ..errors import RuleViolation
from ..reconcile import ClientAssignor, ConnectUnit, Heartbeat, HeartbeatResult
from ..reconcile.connect import (heartbeat_from_request, heartbeat_response,
                                 require_assignors_compatible, require_connect_heartbeat_shape,
                                 tasks_of)
from ..reconcile.validation import JOIN_EPOCH, LEAVE_EPOCH

if TYPE_CHECKING:
    from ..view import CoordinatorView

E = ErrorCode


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    try:
        result = _handle(coord, ctx, b)
    except RuleViolation as r:
        result = HeartbeatResult(error=r.error, member_id=b.member_id, rule=r.rule,
                                 message=r.message)
    coord.env.reply(ctx, heartbeat_response(coord.registry, result))


def validate(b: Any) -> None:
    require_connect_heartbeat_shape(
        group_id=b.group_id, member_id=b.member_id, member_epoch=b.member_epoch,
        instance_id=b.instance_id, rebalance_timeout_ms=b.rebalance_timeout_ms,
        server_assignor=b.server_assignor,
        client_assignors=None if b.client_assignors is None else tuple(
            ClientAssignor(a.name, a.minimum_version, a.maximum_version, a.reason, a.version,
                           bytes(a.metadata)) for a in b.client_assignors),
        tasks=tasks_of(b.connectors_and_tasks))


def _handle(coord: CoordinatorView, ctx: RequestContext, b: Any) -> HeartbeatResult[ConnectUnit]:
    validate(b)
    group_id: str = b.group_id
    existing = coord.groups.get(group_id)
    converting = False
    if isinstance(existing, ConnectGroup):
        group = existing
    elif (b.member_epoch == JOIN_EPOCH and isinstance(existing, ClassicGroup)
          and (existing.is_empty() or migration.is_connect_classic(existing))):
        # Migration M1-M3: the classic group converts (an empty one continues its epoch).
        group = migration.upgrade(coord, existing)
        converting = True
    elif existing is not None and not (b.member_epoch == JOIN_EPOCH and existing.is_empty()):
        raise RuleViolation(E.GROUP_ID_NOT_FOUND, "group-is-connect",
                            f"Group {group_id} is not a connect group.")
    elif b.member_epoch != JOIN_EPOCH:
        raise RuleViolation(E.UNKNOWN_MEMBER_ID, "group-exists",
                            f"Group {group_id} does not exist, so member {b.member_id} is unknown.")
    else:
        group = coord.new_connect_group(group_id)

    hb: Heartbeat[ConnectUnit] = heartbeat_from_request(b, ctx.client_id, ctx.kafka_client_host)
    if b.member_epoch != LEAVE_EPOCH and (b.member_epoch == JOIN_EPOCH
                                          or b.client_assignors is not None):
        require_assignors_compatible(group.engine, hb.member_id, hb.client_assignors)
    result = group.engine.heartbeat(hb, coord.env.now_ms)
    if result.error:
        if group is existing:
            group.absorb(result.outcome)
        return result
    if group is not existing:
        coord.adopt(group, converting=converting)
        if group.classic_members:
            migration.install_downgrade(coord, group)
    group.absorb(result.outcome)
    if b.member_epoch == LEAVE_EPOCH:
        return HeartbeatResult(member_id=result.member_id, member_epoch=LEAVE_EPOCH)
    return result
