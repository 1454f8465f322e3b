"""ListGroups (API 16, v0-5): every group, filtered by state (v4+) and type (v5+).

Filters compare case-insensitively (states also ignore surrounding blanks); an empty
filter matches everything. Groups are listed by group id (Kafka's order is hash order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ..context import RequestContext

if TYPE_CHECKING:
    from ..view import CoordinatorView



def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    v = ctx.api_version
    states = {s.strip().lower() for s in b.states_filter} if v >= 4 else set()
    types = {t.lower() for t in b.types_filter} if v >= 5 else set()
    mt = coord.registry["ListGroupsResponse"]
    cls: Any = mt.cls
    listed = []
    for group_id in sorted(coord.groups):
        g = coord.groups[group_id]
        if states and g.state_name.lower() not in states:
            continue
        if types and g.type.lower() not in types:
            continue
        listed.append(cls.ListedGroup(
            group_id=group_id, protocol_type=g.listed_protocol_type,
            group_state=g.state_name, group_type=g.type))
    coord.env.reply(ctx, mt.new(groups=listed))
