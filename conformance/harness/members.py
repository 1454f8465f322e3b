"""Scripted classic-protocol members: the suite's side of JoinGroup / SyncGroup / Heartbeat /
LeaveGroup, their fields from ``fakebroker.testing.requests`` (the builders golden
generation and the differential scenarios use), sent over a recorded connection.

A member sends exactly what it is told (no retries of its own); ``join``, ``sync`` and the
like wait, bounded, for the answer, while ``submit_*`` return the pending exchange so a
case can hold several requests parked at the coordinator at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from fakebroker.client import ClientError, Exchange
from fakebroker.protocol import Struct, default_registry
from fakebroker.protocol.error_codes import ErrorCode, error_text
from fakebroker.script.recorded import RecordedConnection
from fakebroker.testing.requests import (describe_fields, heartbeat_fields, join_fields, leave_fields,
                                        sync_fields)

from .outcomes import Violation

REG = default_registry()
PROTOCOL_TYPE = "connect"
UNSET: Any = object()


@dataclass
class Pending:
    """A request on its way; ``await pending.response()`` waits (bounded) for the answer."""

    member: ClassicMember
    api: str
    future: asyncio.Future[Exchange]

    def done(self) -> bool:
        return self.future.done()

    async def response(self, timeout_s: float | None = None) -> Any:
        try:
            ex = await self.member.conn.wait(self.future, timeout_s=timeout_s)
        except ClientError as e:
            raise Violation(f"{self.member.name}: {self.api} response", "a response", str(e)) from None
        return ex.response


class ClassicMember:
    def __init__(self, name: str, conn: RecordedConnection, group_id: str, *,
                 session_timeout_ms: int, rebalance_timeout_ms: int,
                 protocols: list[tuple[str, bytes]] | None = None,
                 instance_id: str | None = None) -> None:
        self.name = name
        self.conn = conn
        self.group_id = group_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.protocols = protocols if protocols is not None else [("sessioned", name.encode())]
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.protocol_name: str | None = None
        self.outstanding = 0
        self.last_join: Any = None

    # ---------------------------------------------------------------- plumbing

    def _submit(self, api: str, body: Struct, version: int) -> Pending:
        try:
            fut = self.conn.submit(body, version)
        except ClientError as e:
            raise Violation(f"{self.name}: send {api}", "an open connection", str(e)) from None
        self.outstanding += 1

        def finished(_: Any) -> None:
            self.outstanding -= 1
        fut.add_done_callback(finished)
        return Pending(self, api, fut)

    @property
    def idle(self) -> bool:
        """No request of this member is waiting at the coordinator."""
        return self.outstanding == 0

    # ---------------------------------------------------------------- JoinGroup

    def join_body(self, version: int = 9, *, member_id: Any = UNSET, protocols: Any = UNSET,
                  session_timeout_ms: Any = UNSET, rebalance_timeout_ms: Any = UNSET,
                  protocol_type: str = PROTOCOL_TYPE, group_id: Any = UNSET,
                  instance_id: Any = UNSET, reason: str | None = None) -> Struct:
        return REG["JoinGroupRequest"].new(**join_fields(
            REG, self.group_id if group_id is UNSET else group_id,
            self.member_id if member_id is UNSET else member_id, version,
            session=self.session_timeout_ms if session_timeout_ms is UNSET else session_timeout_ms,
            rebalance=self.rebalance_timeout_ms if rebalance_timeout_ms is UNSET else rebalance_timeout_ms,
            protocols=tuple(self.protocols if protocols is UNSET else protocols),
            protocol_type=protocol_type, instance=self.instance_id if instance_id is UNSET else instance_id,
            reason=reason))

    def submit_join(self, version: int = 9, **kw: Any) -> Pending:
        if "protocols" in kw and kw["protocols"] is not UNSET:
            self.protocols = kw["protocols"]
        return self._submit("JoinGroup", self.join_body(version, **kw), version)

    async def join(self, version: int = 9, **kw: Any) -> Any:
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

    async def obtain_member_id(self, version: int = 9, **kw: Any) -> None:
        """The KIP-394 step: a join without an id must be answered MEMBER_ID_REQUIRED."""
        r = await self.join(version, member_id="", **kw)
        if r.error_code != ErrorCode.MEMBER_ID_REQUIRED or not r.member_id:
            raise Violation(f"{self.name}: JoinGroup v{version} without a member id",
                            "MEMBER_ID_REQUIRED with a member id",
                            f"{error_text(r.error_code)}, member id {r.member_id!r}")

    # ---------------------------------------------------------------- SyncGroup

    def sync_body(self, version: int = 5, *, generation: Any = UNSET,
                  assignments: dict[str, bytes] | None = None, member_id: Any = UNSET,
                  group_id: Any = UNSET, protocol_type: Any = UNSET, protocol_name: Any = UNSET,
                  instance_id: Any = UNSET) -> Struct:
        return REG["SyncGroupRequest"].new(**sync_fields(
            REG, self.group_id if group_id is UNSET else group_id,
            self.member_id if member_id is UNSET else member_id,
            self.generation if generation is UNSET else generation, version,
            assignments=assignments, instance=self.instance_id if instance_id is UNSET else instance_id,
            protocol_type=PROTOCOL_TYPE if protocol_type is UNSET else protocol_type,
            protocol_name=(self.protocol_name or "") if protocol_name is UNSET else protocol_name))

    def submit_sync(self, version: int = 5, **kw: Any) -> Pending:
        return self._submit("SyncGroup", self.sync_body(version, **kw), version)

    async def sync(self, version: int = 5, **kw: Any) -> Any:
        return await self.submit_sync(version, **kw).response()

    # ---------------------------------------------------------------- Heartbeat / LeaveGroup

    def heartbeat_body(self, version: int = 4, *, generation: Any = UNSET, member_id: Any = UNSET,
                       group_id: Any = UNSET, instance_id: Any = UNSET) -> Struct:
        return REG["HeartbeatRequest"].new(**heartbeat_fields(
            self.group_id if group_id is UNSET else group_id,
            self.member_id if member_id is UNSET else member_id,
            self.generation if generation is UNSET else generation, version,
            self.instance_id if instance_id is UNSET else instance_id))

    async def heartbeat(self, version: int = 4, **kw: Any) -> Any:
        return await self._submit("Heartbeat", self.heartbeat_body(version, **kw), version).response()

    async def leave(self, version: int = 5, *, members: list[tuple[str, str | None]] | None = None,
                    group_id: Any = UNSET) -> Any:
        who = (self.member_id,) if version < 3 else tuple(
            members if members is not None else [(self.member_id, self.instance_id)])
        body = REG["LeaveGroupRequest"].new(**leave_fields(
            REG, self.group_id if group_id is UNSET else group_id, who, version, None))
        return await self._submit("LeaveGroup", body, version).response()

    async def describe(self, version: int = 5) -> Any:
        r = await self._submit("DescribeGroups", REG["DescribeGroupsRequest"].new(
            **describe_fields((self.group_id,), version, False)), version).response()
        (group,) = r.groups
        return group
