"""DescribeGroups (API 15, v0-6).

A classic group is described in every state; member metadata only in Stable (with the
chosen protocol as ProtocolData), assignments always. A group that does not exist, or is
not classic, is GROUP_ID_NOT_FOUND with a message from v6 (KIP-1043), and before v6 a
placeholder in state Dead with no error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import MessageType, Struct
from ...protocol.error_codes import ErrorCode
from ..classic.group import ClassicGroup
from ..classic.state import ClassicGroupState
from ..context import RequestContext
from ._group_lookup import not_found_message

if TYPE_CHECKING:
    from ..view import CoordinatorView

S = ClassicGroupState

# AclOperation codes Kafka reports for a group when no authorizer is configured: READ 3,
# DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 (AclEntry.supportedOperations).
GROUP_OPERATIONS = (3, 6, 8, 10, 11)
GROUP_AUTHORIZED_OPERATIONS = sum(1 << op for op in GROUP_OPERATIONS)


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    mt = coord.registry["DescribeGroupsResponse"]
    v = ctx.api_version
    with_ops = v >= 3 and b.include_authorized_operations
    described = [_describe(coord, mt, v, gid) for gid in b.groups]
    if with_ops:
        authorize_all(described)
    coord.env.reply(ctx, mt.new(groups=described))


def authorize_all(described: list[Any]) -> None:
    """Every group described without error carries every group operation (no authorizer)."""
    for d in described:
        if d.error_code == ErrorCode.NONE:
            d.authorized_operations = GROUP_AUTHORIZED_OPERATIONS


def _describe(coord: CoordinatorView, mt: MessageType, v: int, group_id: str) -> Any:
    cls: Any = mt.cls
    group = coord.groups.get(group_id)
    if not isinstance(group, ClassicGroup):
        if v >= 6:
            # Kafka 4.2 names the state Dead alongside the error (as v0-5 do without one).
            return cls.DescribedGroup(group_id=group_id, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                                      error_message=not_found_message(group_id, group, "classic"),
                                      group_state=S.DEAD.value)
        return cls.DescribedGroup(group_id=group_id, group_state=S.DEAD.value)

    stable = group.state is S.STABLE
    members = []
    for m in group.members.values():
        members.append(cls.DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id if v >= 4 else None,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
            member_assignment=m.assignment,
        ))
    return cls.DescribedGroup(
        group_id=group_id,
        group_state=group.state_name,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
    )
