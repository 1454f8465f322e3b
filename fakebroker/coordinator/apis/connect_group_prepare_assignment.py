"""ConnectGroupPrepareAssignment (v0; the draft).

Request Validation (INVALID_REQUEST: GroupId, MemberId non-empty, MemberEpoch >= 0), then
Request Handling: the group exists (GROUP_ID_NOT_FOUND), the member exists
(UNKNOWN_MEMBER_ID), at its current epoch (FENCED_MEMBER_EPOCH), and is the member
selected to compute the assignment (UNKNOWN_MEMBER_ID). The answer is the group as the
assignor needs it: the group epoch (echoed back on install), the selected client-side
assignor, and every member with its epoch, instance id, what it reported for that assignor
(Version, Reason, Metadata) and its entry in the current target assignment (ERRATA 15).
Nothing changes in the group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ..context import RequestContext
from ..errors import RuleViolation
from ..reconcile.units import split_connect_units
from ._connect_common import connect_group, error_response

if TYPE_CHECKING:
    from ..view import CoordinatorView

RESPONSE = "ConnectGroupPrepareAssignmentResponse"


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    try:
        group = connect_group(coord, b)
        prepared = group.engine.prepare_assignment(b.member_id, b.member_epoch, coord.env.now_ms)
        group.settle(prepared)
    except RuleViolation as r:
        coord.env.reply(ctx, error_response(coord, RESPONSE, r))
        return
    mt = coord.registry[RESPONSE]
    cls: Any = mt.cls
    name = group.assignor_name()
    members = []
    for m in prepared.members:
        chosen = next((a for a in m.client_assignors if a.name == name), None)
        connectors, tasks = split_connect_units(m.target.units)
        members.append(cls.Member(
            member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
            assignor=cls.Assignor(version=chosen.version if chosen else 0,
                                  reason=chosen.reason if chosen else 0,
                                  metadata=chosen.metadata if chosen else b""),
            connectors_and_tasks=cls.ConnectorsAndTasks(
                connectors=list(connectors),
                tasks=[cls.ConnectorTaskId(connector_id=c, task_id=t) for c, t in tasks])))
    coord.env.reply(ctx, mt.new(group_epoch=prepared.group_epoch, assignor_name=name or "",
                                members=members))
