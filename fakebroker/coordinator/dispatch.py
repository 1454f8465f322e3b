"""The coordinator's dispatch table: each API it answers, by its name in the spec registry,
with its handler, the rebalance protocol it belongs to and its preparer, if any. API keys
come from the registry (``Registry.by_api_name``), so a key is written only in its spec
(the draft's ConnectGroup* keys in ``schemas/draft``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..protocol import Registry, Struct
from .apis import (connect_group_heartbeat, connect_group_install_assignment,
                   connect_group_prepare_assignment, consumer_group_describe,
                   consumer_group_heartbeat, describe_groups, heartbeat, join_group, leave_group,
                   list_groups, offset_commit, offset_fetch, sync_group)
from .classic.join_request import JoinRequest
from .context import RequestContext
from .view import CoordinatorView

#: ``handle(coordinator, ctx, body, prepared)``: every API's one signature (the first
#: argument is the ``GroupCoordinator``, which the handlers know as a ``CoordinatorView``).
Handler = Callable[[CoordinatorView, RequestContext, Struct, "object | None"], None]
#: ``prepare(body, api_version)``: a handler's view of a request, built from it alone.
Preparer = Callable[[Struct, int], object]


@dataclass(frozen=True)
class Api:
    name: str  # the spec's API name ("JoinGroup")
    handle: Handler
    # The rebalance protocol (``CoordinatorConfig.rebalance_protocols``) serving it; the
    # classic and shared APIs are always served.
    protocol: str = "classic"
    prepare: Preparer | None = None


APIS: tuple[Api, ...] = (
    Api("OffsetCommit", offset_commit.handle),
    Api("OffsetFetch", offset_fetch.handle),
    Api("JoinGroup", join_group.handle, prepare=JoinRequest.from_struct),  # type: ignore[arg-type]
    Api("Heartbeat", heartbeat.handle),
    Api("LeaveGroup", leave_group.handle),
    Api("SyncGroup", sync_group.handle),
    Api("DescribeGroups", describe_groups.handle),
    Api("ListGroups", list_groups.handle),
    Api("ConsumerGroupHeartbeat", consumer_group_heartbeat.handle, "consumer"),
    Api("ConsumerGroupDescribe", consumer_group_describe.handle, "consumer"),
    Api("ConnectGroupHeartbeat", connect_group_heartbeat.handle, "connect"),
    Api("ConnectGroupPrepareAssignment", connect_group_prepare_assignment.handle, "connect"),
    Api("ConnectGroupInstallAssignment", connect_group_install_assignment.handle, "connect"),
)


def dispatch_table(registry: Registry) -> dict[int, Api]:
    """API key -> ``Api`` for the APIs ``registry`` has specs of (a registry without the
    draft's specs has no ConnectGroup* keys)."""
    table = {}
    for api in APIS:
        try:
            table[registry.by_api_name(api.name)] = api
        except KeyError:
            continue
    return table
