"""JoinGroup and SyncGroup answers, version-independent, and their per-version responses.

A join or sync may be answered long after it arrived (it was parked), so the engine
decides an outcome and this module turns it into the response object of the request's
version, the way Kafka's JoinGroupResponse / SyncGroupResponse constructors adjust it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...protocol import Registry, Struct
from ...protocol.error_codes import ErrorCode
from .group import JoinedMember


@dataclass(frozen=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


def join_response(registry: Registry, version: int, r: JoinResult) -> Struct:
    mt = registry["JoinGroupResponse"]
    member_cls: Any = getattr(mt.cls, "JoinGroupResponseMember")
    name = r.protocol_name
    # Before v7 ProtocolName is not nullable: Kafka sends "" for none; from v7 it sends
    # null for "".
    if version < 7 and name is None:
        name = ""
    elif version >= 7 and name == "":
        name = None
    return mt.new(
        error_code=int(r.error),
        generation_id=r.generation_id,
        protocol_type=r.protocol_type,
        protocol_name=name,
        leader=r.leader,
        skip_assignment=r.skip_assignment if version >= 9 else False,
        member_id=r.member_id,
        members=[member_cls(member_id=m.member_id,
                            group_instance_id=m.group_instance_id if version >= 5 else None,
                            metadata=m.metadata)
                 for m in r.members],
    )


def sync_response(registry: Registry, version: int, r: SyncResult) -> Struct:
    return registry["SyncGroupResponse"].new(
        error_code=int(r.error),
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignment=r.assignment,
    )
