"""One module per API the coordinator answers; ``HANDLERS`` maps API key -> handler.

A handler is ``handle(coordinator, ctx, body) -> None``: it answers through the
coordinator's outbox (``coordinator.env.reply``), now or, for a parked request, later.
``PREPARERS`` maps the API keys whose handler costs per array element to the function that
builds the handler's view of a request from the request alone: ``handle(coordinator, ctx,
body, prepared)`` then skips that work (done off the event loop for a big frame).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...protocol import Struct
from ..classic.join_request import JoinRequest
from ..context import RequestContext
from . import (connect_group_heartbeat, connect_group_install_assignment,
               connect_group_prepare_assignment, consumer_group_describe,
               consumer_group_heartbeat, describe_groups, heartbeat, join_group, leave_group,
               list_groups, offset_commit, offset_fetch, sync_group)

if TYPE_CHECKING:
    from ..coordinator import GroupCoordinator

Handler = Callable[..., None]  # (coordinator, ctx, body[, prepared])

HANDLERS: dict[int, Handler] = {
    m.API_KEY: m.handle
    for m in (offset_commit, offset_fetch, join_group, heartbeat, leave_group, sync_group,
              describe_groups, list_groups, consumer_group_heartbeat, consumer_group_describe,
              connect_group_heartbeat, connect_group_prepare_assignment,
              connect_group_install_assignment)
}

PREPARERS: dict[int, Callable[[Struct, int], object]] = {
    join_group.API_KEY: JoinRequest.from_struct,
}

#: The rebalance protocol (``CoordinatorConfig.rebalance_protocols``) an API belongs to;
#: APIs not listed (the classic and shared ones) are always served.
PROTOCOL_OF_API: dict[int, str] = {
    consumer_group_heartbeat.API_KEY: "consumer",
    consumer_group_describe.API_KEY: "consumer",
    connect_group_heartbeat.API_KEY: "connect",
    connect_group_prepare_assignment.API_KEY: "connect",
    connect_group_install_assignment.API_KEY: "connect",
}
