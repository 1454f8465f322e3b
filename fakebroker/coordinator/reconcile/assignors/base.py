"""What a server-side assignor sees and returns (Kafka's ``GroupSpec`` / ``GroupAssignment``
reduced to what the engine's generic units need)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, Protocol

from ..units import U


class AssignorError(Exception):
    """The assignor cannot produce an assignment (Kafka's PartitionAssignorException; the
    heartbeat that asked for it gets UNKNOWN_SERVER_ERROR and nothing changes)."""


@dataclass(frozen=True)
class AssignorMember(Generic[U]):
    member_id: str
    instance_id: str | None
    subscription: frozenset[str]
    #: The member's units in the current target assignment (for stickiness).
    current: frozenset[U]


@dataclass(frozen=True)
class AssignmentSpec(Generic[U]):
    #: Every member of the group, sorted by member id.
    members: tuple[AssignorMember[U], ...]
    #: Units by key, for every key some member subscribes to; each tuple in order.
    catalog: Mapping[str, tuple[U, ...]]

    def is_homogeneous(self) -> bool:
        return len({m.subscription for m in self.members}) <= 1


class Assignor(Protocol[U]):
    """A server-side assignor: a pure function of the spec. Deterministic: the same spec
    always gives the same assignment (iteration is over sorted members and units)."""

    @property
    def name(self) -> str: ...

    def assign(self, spec: AssignmentSpec[U]) -> dict[str, frozenset[U]]: ...


def subscribed_units(member: AssignorMember[U], catalog: Mapping[str, tuple[U, ...]]) -> list[U]:
    """The units a member may be given, keys in sorted order, units in catalog order."""
    return [u for key in sorted(member.subscription) for u in catalog.get(key, ())]


__all__ = ["AssignorError", "AssignorMember", "AssignmentSpec", "Assignor", "subscribed_units"]
