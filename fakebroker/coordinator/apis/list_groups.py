"""ListGroups (API 16, v0-5): every group, filtered by state (v4+) and type (v5+).

Filters compare case-insensitively (states also ignore surrounding blanks); an empty
filter matches everything. Groups are listed by group id (Kafka's order is hash order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol import Struct
from ..context import RequestContext

if TYPE_CHECKING:
    from ..coordinator import GroupCoordinator

API_KEY = 16


def handle(coord: GroupCoordinator, ctx: RequestContext, body: Struct) -> None:
    v = ctx.api_version
    states = {s.strip().lower() for s in body.states_filter} if v >= 4 else set()  # type: ignore[attr-defined]
    types = {t.lower() for t in body.types_filter} if v >= 5 else set()  # type: ignore[attr-defined]
    mt = coord.registry["ListGroupsResponse"]
    listed = []
    for group_id in sorted(coord.groups):
        g = coord.groups[group_id]
        if states and g.state_name.lower() not in states:
            continue
        if types and g.type.lower() not in types:
            continue
        listed.append(mt.cls.ListedGroup(  # type: ignore[attr-defined]
            group_id=group_id, protocol_type=g.listed_protocol_type,
            group_state=g.state_name, group_type=g.type))
    coord.env.reply(ctx, mt.new(groups=listed))
