"""The fields of the classic group APIs' requests at a version. ``ScriptedClient``
(``fakebroker.testing.client``), and through it golden generation, the differential
scenarios and the conformance harness, builds its JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, DescribeGroups and ListGroups requests here, so a field a version adds is
added once. Each returns keyword arguments for the message's ``new``.
"""

from __future__ import annotations

from typing import Any

from ..protocol import Registry


def join_fields(registry: Registry, group: str, member_id: str, version: int, *, session: int,
                rebalance: int, protocols: tuple[tuple[str, bytes], ...], protocol_type: str,
                instance: str | None, reason: str | None) -> dict[str, Any]:
    cls = registry["JoinGroupRequest"].cls.JoinGroupRequestProtocol  # type: ignore[attr-defined]
    f: dict[str, Any] = dict(group_id=group, session_timeout_ms=session, member_id=member_id,
                             protocol_type=protocol_type,
                             protocols=[cls(name=n, metadata=m) for n, m in protocols])
    if version >= 1:
        f["rebalance_timeout_ms"] = rebalance
    if version >= 5:
        f["group_instance_id"] = instance
    if version >= 8:
        f["reason"] = reason
    return f


def sync_fields(registry: Registry, group: str, member_id: str, generation: int, version: int, *,
                assignments: dict[str, bytes] | None, instance: str | None,
                protocol_type: str | None, protocol_name: str | None) -> dict[str, Any]:
    cls = registry["SyncGroupRequest"].cls.SyncGroupRequestAssignment  # type: ignore[attr-defined]
    f: dict[str, Any] = dict(group_id=group, generation_id=generation, member_id=member_id,
                             assignments=[cls(member_id=m, assignment=a)
                                          for m, a in (assignments or {}).items()])
    if version >= 3:
        f["group_instance_id"] = instance
    if version >= 5:
        f["protocol_type"], f["protocol_name"] = protocol_type, protocol_name
    return f


def heartbeat_fields(group: str, member_id: str, generation: int, version: int,
                     instance: str | None) -> dict[str, Any]:
    f: dict[str, Any] = dict(group_id=group, generation_id=generation, member_id=member_id)
    if version >= 3:
        f["group_instance_id"] = instance
    return f


def leave_fields(registry: Registry, group: str, members: tuple[tuple[str, str | None] | str, ...],
                 version: int, reason: str | None) -> dict[str, Any]:
    """``members``: member ids, or (member id, group.instance.id); v0-2 take one member id."""
    if version < 3:
        (m,) = members
        assert isinstance(m, str)
        return dict(group_id=group, member_id=m)
    cls = registry["LeaveGroupRequest"].cls.MemberIdentity  # type: ignore[attr-defined]
    identities = []
    for m in members:
        mid, inst = (m, None) if isinstance(m, str) else m
        kw: dict[str, Any] = dict(member_id=mid, group_instance_id=inst)
        if version >= 5:
            kw["reason"] = reason
        identities.append(cls(**kw))
    return dict(group_id=group, members=identities)


def describe_fields(groups: tuple[str, ...], version: int, ops: bool) -> dict[str, Any]:
    f: dict[str, Any] = dict(groups=list(groups))
    if version >= 3:
        f["include_authorized_operations"] = ops
    return f


def list_groups_fields(version: int, states: list[str] | None,
                       types: list[str] | None) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if version >= 4:
        f["states_filter"] = states or []
    if version >= 5:
        f["types_filter"] = types or []
    return f
