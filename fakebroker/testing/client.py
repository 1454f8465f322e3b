"""A scripted client: the group APIs' verbs over one connection, for scripts that drive a
coordinator request by request.

``join_later`` and ``sync_later`` send and return the pending request (it may park at the
coordinator); ``join``, ``sync``, ``heartbeat``, ``leave``, ``describe`` and
``list_groups`` wait for the answer. A subclass says how a request is sent and awaited
(``submit``, ``result``, ``call``) and what it keeps of it: the golden session
(``fakebroker.script.golden.session``) settles a virtual-clock broker after each request;
the differential script (``fakebroker.realkafka.differential``) names each request with
its ``label`` in the trace it compares. What a request carries unless the script says
otherwise is the subclass's ``defaults``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..protocol import Registry
from .requests import (describe_fields, heartbeat_fields, join_fields, leave_fields,
                       list_groups_fields, sync_fields)

DEFAULT: Any = object()  # "the client's default": None is a value a request may carry


@dataclass(frozen=True)
class ClientDefaults:
    session_ms: int = 10_000
    rebalance_ms: int = 10_000
    protocols: tuple[tuple[str, bytes], ...] = (("sessioned", b"\x00\x02"),)
    protocol_type: str = "connect"
    protocol_name: str | None = "sessioned"
    describe_version: int = 6


class ScriptedClient:
    registry: Registry
    defaults: ClassVar[ClientDefaults] = ClientDefaults()

    async def submit(self, api: str, version: int, *, label: str = "", **fields: Any) -> Any:
        """Send ``api`` with ``fields``; returns what ``result`` takes."""
        raise NotImplementedError

    async def result(self, pending: Any) -> Any:
        """The response of a request sent with ``submit``."""
        raise NotImplementedError

    async def call(self, api: str, version: int, *, label: str = "", **fields: Any) -> Any:
        return await self.result(await self.submit(api, version, label=label, **fields))

    # ------------------------------------------------------------------ JoinGroup

    def join_request(self, group: str, member_id: str = "", *, version: int = 9,
                     session_ms: int = DEFAULT, rebalance_ms: int = DEFAULT,
                     protocols: Any = DEFAULT, protocol_type: str = DEFAULT,
                     instance: str | None = None, reason: str | None = None) -> dict[str, Any]:
        d = self.defaults
        return join_fields(self.registry, group, member_id, version,
                           session=d.session_ms if session_ms is DEFAULT else session_ms,
                           rebalance=d.rebalance_ms if rebalance_ms is DEFAULT else rebalance_ms,
                           protocols=tuple(d.protocols if protocols is DEFAULT else protocols),
                           protocol_type=d.protocol_type if protocol_type is DEFAULT else protocol_type,
                           instance=instance, reason=reason)

    async def join_later(self, group: str, member_id: str = "", *, version: int = 9,
                         label: str = "", **kw: Any) -> Any:
        return await self.submit("JoinGroup", version, label=label,
                                 **self.join_request(group, member_id, version=version, **kw))

    async def join(self, group: str, member_id: str = "", *, version: int = 9, label: str = "",
                   **kw: Any) -> Any:
        return await self.call("JoinGroup", version, label=label,
                               **self.join_request(group, member_id, version=version, **kw))

    # ------------------------------------------------------------------ SyncGroup

    def sync_request(self, group: str, member_id: str, generation: int, *, version: int = 5,
                     assignments: dict[str, bytes] | None = None, instance: str | None = None,
                     protocol_type: str | None = DEFAULT,
                     protocol_name: str | None = DEFAULT) -> dict[str, Any]:
        d = self.defaults
        return sync_fields(self.registry, group, member_id, generation, version,
                           assignments=assignments, instance=instance,
                           protocol_type=d.protocol_type if protocol_type is DEFAULT else protocol_type,
                           protocol_name=d.protocol_name if protocol_name is DEFAULT else protocol_name)

    async def sync_later(self, group: str, member_id: str, generation: int, *, version: int = 5,
                         label: str = "", **kw: Any) -> Any:
        return await self.submit("SyncGroup", version, label=label,
                                 **self.sync_request(group, member_id, generation, version=version, **kw))

    async def sync(self, group: str, member_id: str, generation: int, *, version: int = 5,
                   label: str = "", **kw: Any) -> Any:
        return await self.call("SyncGroup", version, label=label,
                               **self.sync_request(group, member_id, generation, version=version, **kw))

    # ------------------------------------------------------------------ the others

    async def heartbeat(self, group: str, member_id: str, generation: int, *, version: int = 4,
                        instance: str | None = None, label: str = "") -> Any:
        return await self.call("Heartbeat", version, label=label,
                               **heartbeat_fields(group, member_id, generation, version, instance))

    async def leave(self, group: str, *members: tuple[str, str | None] | str, version: int = 5,
                    reason: str | None = None, label: str = "") -> Any:
        return await self.call("LeaveGroup", version, label=label,
                               **leave_fields(self.registry, group, members, version, reason))

    async def describe(self, *groups: str, version: int = DEFAULT, ops: bool = False,
                       label: str = "") -> Any:
        v = self.defaults.describe_version if version is DEFAULT else version
        return await self.call("DescribeGroups", v, label=label, **describe_fields(groups, v, ops))

    async def list_groups(self, *, version: int = 5, states: list[str] | None = None,
                          types: list[str] | None = None, label: str = "") -> Any:
        return await self.call("ListGroups", version, label=label,
                               **list_groups_fields(version, states, types))
