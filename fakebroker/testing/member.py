"""A scripted classic-protocol member: a ``ScriptedClient`` that remembers what the
coordinator told it (member id, generation, leader, protocol) and fills those into its
JoinGroup / SyncGroup / Heartbeat / LeaveGroup / DescribeGroups unless told otherwise.

A member sends exactly what it is told (no retries of its own); ``join``, ``sync`` and the
like wait for the answer, while ``submit_*`` send at once and return the ``Pending``
request, so a script can hold several requests parked at the coordinator.
"""

from __future__ import annotations

from typing import Any

from ..protocol.error_codes import ErrorCode, error_text
from .client import Pending, ScriptedClient

UNSET: Any = object()


class ScriptedMember:
    def __init__(self, client: ScriptedClient, group_id: str, *, session_timeout_ms: int,
                 rebalance_timeout_ms: int, protocols: list[tuple[str, bytes]] | None = None,
                 instance_id: str | None = None) -> None:
        self.client = client
        self.name = client.client_id
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocols = protocols if protocols is not None else [("sessioned", self.name.encode())]
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.protocol_name: str | None = None
        self.last_join: Any = None

    @property
    def idle(self) -> bool:
        """No request of this member is waiting at the coordinator."""
        return self.client.idle

    def _or(self, value: Any, own: Any) -> Any:
        return own if value is UNSET else value

    # ---------------------------------------------------------------- JoinGroup

    def submit_join(self, version: int | None = None, *, member_id: Any = UNSET, protocols: Any = UNSET,
                    session_timeout_ms: Any = UNSET, rebalance_timeout_ms: Any = UNSET,
                    protocol_type: str = "connect", group_id: Any = UNSET,
                    instance_id: Any = UNSET, reason: str | None = None) -> Pending:
        if protocols is not UNSET:
            self.protocols = protocols
        c = self.client
        version = c.version("JoinGroup", version)
        return c.send("JoinGroup", version, **c.join_request(
            self._or(group_id, self.group_id), self._or(member_id, self.member_id), version=version,
            session_ms=self._or(session_timeout_ms, self.session_timeout_ms),
            rebalance_ms=self._or(rebalance_timeout_ms, self.rebalance_timeout_ms),
            protocols=self.protocols, protocol_type=protocol_type,
            instance=self._or(instance_id, self.instance_id), reason=reason))

    async def join(self, version: int | None = None, **kw: Any) -> Any:
        return self.take_join(await self.submit_join(version, **kw).response())

    def take_join(self, r: Any) -> Any:
        """Remember what a JoinGroup response says about this member."""
        self.last_join = r
        if r.error_code in (0, 79) and r.member_id:
            self.member_id = r.member_id
        if r.error_code == 0:
            self.generation = r.generation_id
            self.leader = r.leader
            self.protocol_name = r.protocol_name
        return r

    async def obtain_member_id(self, version: int | None = None, **kw: Any) -> None:
        """The KIP-394 step: a join without an id must be answered MEMBER_ID_REQUIRED."""
        version = self.client.version("JoinGroup", version)
        r = await self.join(version, member_id="", **kw)
        if r.error_code != ErrorCode.MEMBER_ID_REQUIRED or not r.member_id:
            self.client.session.unexpected(f"{self.name}: JoinGroup v{version} without a member id",
                                           "MEMBER_ID_REQUIRED with a member id",
                                           f"{error_text(r.error_code)}, member id {r.member_id!r}")

    # ---------------------------------------------------------------- SyncGroup

    def submit_sync(self, version: int | None = None, *, generation: Any = UNSET,
                    assignments: dict[str, bytes] | None = None, member_id: Any = UNSET,
                    group_id: Any = UNSET, protocol_type: Any = UNSET, protocol_name: Any = UNSET,
                    instance_id: Any = UNSET) -> Pending:
        c = self.client
        version = c.version("SyncGroup", version)
        return c.send("SyncGroup", version, **c.sync_request(
            self._or(group_id, self.group_id), self._or(member_id, self.member_id),
            self._or(generation, self.generation), version=version, assignments=assignments,
            instance=self._or(instance_id, self.instance_id),
            protocol_type=self._or(protocol_type, "connect"),
            protocol_name=self._or(protocol_name, self.protocol_name or "")))

    async def sync(self, version: int | None = None, **kw: Any) -> Any:
        return await self.submit_sync(version, **kw).response()

    # ---------------------------------------------------------------- the others

    async def heartbeat(self, version: int | None = None, *, generation: Any = UNSET, member_id: Any = UNSET,
                        group_id: Any = UNSET, instance_id: Any = UNSET) -> Any:
        return await self.client.heartbeat(
            self._or(group_id, self.group_id), self._or(member_id, self.member_id),
            self._or(generation, self.generation), version=version,
            instance=self._or(instance_id, self.instance_id))

    async def leave(self, version: int | None = None, *,
                    members: list[tuple[str, str | None]] | None = None,
                    group_id: Any = UNSET) -> Any:
        version = self.client.version("LeaveGroup", version)
        who = (self.member_id,) if version < 3 else tuple(
            members if members is not None else [(self.member_id, self.instance_id)])
        return await self.client.leave(self._or(group_id, self.group_id), *who, version=version)

    async def describe(self, version: int | None = None) -> Any:
        r = await self.client.describe(self.group_id, version=version)
        (group,) = r.groups
        return group
