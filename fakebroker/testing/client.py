"""A scripted client: the group APIs' verbs over one connection, for scripts that drive a
coordinator request by request.

``send`` hands a request to the connection and returns it ``Pending``; ``join_later`` and
``sync_later`` do so and then let the session settle (the request may park at the
coordinator); ``join``, ``sync``, ``heartbeat``, ``leave``, ``describe``, ``list_groups``,
``commit`` and ``fetch_offsets`` wait for the answer. What a request carries unless the
script says otherwise is the session's ``defaults``; how a request is kept, settled and
awaited, and what a missing answer means, is the session's (``fakebroker.testing.session``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..client import ClientError, Exchange, KafkaConnection
from ..negotiation import ApiRanges
from ..protocol import Registry, Struct
from .requests import (describe_fields, heartbeat_fields, join_fields, leave_fields,
                       list_groups_fields, sync_fields)

DEFAULT: Any = object()  # "the client's default": None is a value a request may carry
# The newest version of each API whose requests the scripted client builds (requests.py):
# a request goes out at the highest version the broker supports up to this.
HIGHEST: Mapping[str, int] = {"JoinGroup": 9, "SyncGroup": 5, "Heartbeat": 4, "LeaveGroup": 5,
                              "DescribeGroups": 6, "ListGroups": 5, "OffsetCommit": 9,
                              "OffsetFetch": 7}


@dataclass(frozen=True)
class ClientDefaults:
    session_ms: int = 10_000
    rebalance_ms: int = 10_000
    protocols: tuple[tuple[str, bytes], ...] = (("sessioned", b"\x00\x02"),)
    protocol_type: str = "connect"
    protocol_name: str | None = "sessioned"
    highest: Mapping[str, int] = field(default_factory=lambda: dict(HIGHEST))


@dataclass
class Pending:
    """A request sent and not yet awaited (it may be parked at the coordinator);
    ``await pending.response()`` is its answer as the session takes it. ``step`` is what the
    session keeps of it (the differential run's trace step)."""

    client: ScriptedClient
    api: str
    version: int
    label: str
    future: asyncio.Future[Exchange]
    step: Any = None

    def done(self) -> bool:
        return self.future.done()

    async def response(self, timeout_s: float | None = None) -> Any:
        return await self.client.result(self, timeout_s)


class Session(Protocol):
    """What a client asks of its session (``fakebroker.testing.session.ScriptedSession``,
    which builds its clients: the client names only this much of it)."""

    registry: Registry
    defaults: ClientDefaults

    def version(self, ranges: ApiRanges, api: str, wanted: int | None = None) -> int: ...

    def sending(self, label: str, api: str, version: int, body: Struct) -> Any: ...

    def sent(self, pending: Pending) -> None: ...

    def send_failed(self, pending: Pending, error: ClientError) -> None: ...

    async def after_submit(self, pending: Pending) -> None: ...

    async def answer(self, pending: Pending, timeout_s: float | None) -> Any: ...

    async def close_client(self, client: ScriptedClient) -> None: ...

    def unexpected(self, what: str, expected: Any, actual: Any) -> None: ...


class ScriptedClient:
    def __init__(self, session: Session, conn: KafkaConnection, client_id: str,
                 ranges: ApiRanges) -> None:
        self.session = session
        self.registry: Registry = session.registry
        self.conn = conn
        self.client_id = client_id
        self.ranges = ranges  # what this connection negotiated
        self.last: Pending | None = None  # the latest request handed to the connection
        self.outstanding = 0  # requests sent and not answered
        self._open = True

    @property
    def idle(self) -> bool:
        """No request of this client is waiting at the coordinator."""
        return self.outstanding == 0

    def version(self, api: str, wanted: int | None = None) -> int:
        """The version ``api`` goes out at on this connection (``wanted``: the script's own
        choice, checked against what the broker supports)."""
        return self.session.version(self.ranges, api, wanted)

    # ------------------------------------------------------------------ sending

    def send_body(self, api: str, body: Struct, version: int, *, label: str = "") -> Pending:
        """Hand ``body`` to the connection now (no settling)."""
        step = self.session.sending(label, api, version, body)
        try:
            fut = self.conn.submit(body, version)
        except ClientError as e:
            fut = asyncio.get_running_loop().create_future()
            fut.set_exception(e)
            p = Pending(self, api, version, label, fut, step)
            self.session.send_failed(p, e)
            return p
        self.outstanding += 1

        def finished(f: asyncio.Future[Exchange]) -> None:
            self.outstanding -= 1
            # A request still parked when its connection closes fails; that is expected.
            f.cancelled() or f.exception()
        fut.add_done_callback(finished)
        p = self.last = Pending(self, api, version, label, fut, step)
        self.session.sent(p)
        return p

    def send(self, api: str, version: int, *, label: str = "", **fields: Any) -> Pending:
        return self.send_body(api, self.registry[f"{api}Request"].new(**fields), version, label=label)

    async def submit(self, api: str, version: int, *, label: str = "", **fields: Any) -> Pending:
        """Send, then let the session settle (the broker has read the request)."""
        p = self.send(api, version, label=label, **fields)
        await self.session.after_submit(p)
        return p

    async def result(self, pending: Pending, timeout_s: float | None = None) -> Any:
        """The response of a request sent earlier, as the session takes it."""
        return await self.session.answer(pending, timeout_s)

    async def call(self, api: str, version: int, *, label: str = "", **fields: Any) -> Any:
        return await self.result(self.send(api, version, label=label, **fields))

    async def close(self) -> None:
        if self._open:
            self._open = False
            await self.session.close_client(self)

    # ------------------------------------------------------------------ JoinGroup

    def join_request(self, group: str, member_id: str = "", *, version: int,
                     session_ms: int = DEFAULT, rebalance_ms: int = DEFAULT,
                     protocols: Any = DEFAULT, protocol_type: str = DEFAULT,
                     instance: str | None = None, reason: str | None = None) -> dict[str, Any]:
        d = self.session.defaults
        return join_fields(self.registry, group, member_id, version,
                           session=d.session_ms if session_ms is DEFAULT else session_ms,
                           rebalance=d.rebalance_ms if rebalance_ms is DEFAULT else rebalance_ms,
                           protocols=tuple(d.protocols if protocols is DEFAULT else protocols),
                           protocol_type=d.protocol_type if protocol_type is DEFAULT else protocol_type,
                           instance=instance, reason=reason)

    async def join_later(self, group: str, member_id: str = "", *, version: int | None = None,
                         label: str = "", **kw: Any) -> Pending:
        version = self.version("JoinGroup", version)
        return await self.submit("JoinGroup", version, label=label,
                                 **self.join_request(group, member_id, version=version, **kw))

    async def join(self, group: str, member_id: str = "", *, version: int | None = None,
                   label: str = "", **kw: Any) -> Any:
        version = self.version("JoinGroup", version)
        return await self.call("JoinGroup", version, label=label,
                               **self.join_request(group, member_id, version=version, **kw))

    async def new_member(self, group: str, *, label: str = "", **kw: Any) -> tuple[str, Pending]:
        """KIP-394: join without an id (MEMBER_ID_REQUIRED), then rejoin with the id given.
        Returns the member id and the rejoin, pending (it may park)."""
        first = await self.join(group, label=f"{label}: first join", **kw)
        code = None if first is None else first.error_code
        if code != 79:
            self.session.unexpected(f"{self.client_id}: JoinGroup without a member id",
                                    "MEMBER_ID_REQUIRED", code)
        member = first.member_id if first is not None else ""
        return member, await self.join_later(group, member, label=f"{label}: join with id", **kw)

    # ------------------------------------------------------------------ SyncGroup

    def sync_request(self, group: str, member_id: str, generation: int, *, version: int,
                     assignments: dict[str, bytes] | None = None, instance: str | None = None,
                     protocol_type: str | None = DEFAULT,
                     protocol_name: str | None = DEFAULT) -> dict[str, Any]:
        d = self.session.defaults
        return sync_fields(self.registry, group, member_id, generation, version,
                           assignments=assignments, instance=instance,
                           protocol_type=d.protocol_type if protocol_type is DEFAULT else protocol_type,
                           protocol_name=d.protocol_name if protocol_name is DEFAULT else protocol_name)

    async def sync_later(self, group: str, member_id: str, generation: int, *,
                         version: int | None = None, label: str = "", **kw: Any) -> Pending:
        version = self.version("SyncGroup", version)
        return await self.submit("SyncGroup", version, label=label,
                                 **self.sync_request(group, member_id, generation, version=version, **kw))

    async def sync(self, group: str, member_id: str, generation: int, *, version: int | None = None,
                   label: str = "", **kw: Any) -> Any:
        version = self.version("SyncGroup", version)
        return await self.call("SyncGroup", version, label=label,
                               **self.sync_request(group, member_id, generation, version=version, **kw))

    # ------------------------------------------------------------------ the others

    async def heartbeat(self, group: str, member_id: str, generation: int, *,
                        version: int | None = None, instance: str | None = None,
                        label: str = "") -> Any:
        version = self.version("Heartbeat", version)
        return await self.call("Heartbeat", version, label=label,
                               **heartbeat_fields(group, member_id, generation, version, instance))

    async def leave(self, group: str, *members: tuple[str, str | None] | str,
                    version: int | None = None, reason: str | None = None, label: str = "") -> Any:
        version = self.version("LeaveGroup", version)
        return await self.call("LeaveGroup", version, label=label,
                               **leave_fields(self.registry, group, members, version, reason))

    async def describe(self, *groups: str, version: int | None = None, ops: bool = False,
                       label: str = "") -> Any:
        v = self.version("DescribeGroups", version)
        return await self.call("DescribeGroups", v, label=label, **describe_fields(groups, v, ops))

    async def list_groups(self, *, version: int | None = None, states: list[str] | None = None,
                          types: list[str] | None = None, label: str = "") -> Any:
        version = self.version("ListGroups", version)
        return await self.call("ListGroups", version, label=label,
                               **list_groups_fields(version, states, types))

    # ------------------------------------------------------------------ offsets

    async def commit(self, group: str, offsets: dict[str, dict[int, int]], *, version: int | None = None,
                     member_id: str = "", generation: int = -1, instance: str | None = None,
                     metadata: str | None = None, leader_epoch: int = -1,
                     topic_ids: dict[str, uuid.UUID] | None = None, label: str = "") -> Any:
        """``offsets``: topic -> partition -> offset (v10: topics by id from ``topic_ids``)."""
        version = self.version("OffsetCommit", version)
        cls = self.registry["OffsetCommitRequest"].cls
        topics = []
        for name, parts in offsets.items():
            tf: dict[str, Any] = {"partitions": [cls.OffsetCommitRequestPartition(  # type: ignore[attr-defined]
                partition_index=p, committed_offset=o, committed_leader_epoch=leader_epoch if version >= 6 else -1,
                committed_metadata=metadata) for p, o in parts.items()]}
            if version >= 10:
                tf["topic_id"] = (topic_ids or {})[name]
            else:
                tf["name"] = name
            topics.append(cls.OffsetCommitRequestTopic(**tf))  # type: ignore[attr-defined]
        f: dict[str, Any] = dict(group_id=group, generation_id_or_member_epoch=generation,
                                 member_id=member_id, topics=topics)
        if version >= 7:
            f["group_instance_id"] = instance
        return await self.call("OffsetCommit", version, label=label, **f)

    async def fetch_offsets(self, group: str, topics: dict[str, list[int]] | None, *,
                            version: int | None = None, topic_ids: dict[str, uuid.UUID] | None = None,
                            more: dict[str, dict[str, list[int]] | None] | None = None,
                            label: str = "") -> Any:
        """v1-7: one group; v8+: ``group`` and then the groups of ``more``."""
        version = self.version("OffsetFetch", version)
        cls = self.registry["OffsetFetchRequest"].cls
        if version < 8:
            ts = None if topics is None else [cls.OffsetFetchRequestTopic(  # type: ignore[attr-defined]
                name=n, partition_indexes=ps) for n, ps in topics.items()]
            f: dict[str, Any] = dict(group_id=group, topics=ts)
            if version >= 7:
                f["require_stable"] = False
            return await self.call("OffsetFetch", version, label=label, **f)
        groups = []
        for gid, tps in [(group, topics), *(more or {}).items()]:
            ts = None if tps is None else [cls.OffsetFetchRequestTopics(  # type: ignore[attr-defined]
                **({"topic_id": (topic_ids or {})[n]} if version >= 10 else {"name": n}),
                partition_indexes=ps) for n, ps in tps.items()]
            groups.append(cls.OffsetFetchRequestGroup(group_id=gid, topics=ts))  # type: ignore[attr-defined]
        return await self.call("OffsetFetch", version, label=label, groups=groups, require_stable=False)
