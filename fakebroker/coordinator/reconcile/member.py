"""A member as the engine keeps it: its metadata, and its current assignment.

Both halves are immutable values; the engine replaces them whole, and each replacement is
one record (``records.py``). The member states are Apache Kafka's ``MemberState`` with the
same byte values, so a current-assignment record can carry them as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Generic

from .units import EMPTY, U


class MemberState(Enum):
    """Where a member is in its reconciliation (Kafka's ``MemberState``)."""

    #: Owns exactly its target's units (those free so far) at the target epoch.
    STABLE = 0
    #: Was asked to give units back; stays at its epoch until it acknowledges by no
    #: longer reporting them (draft: phase 1, "revoking").
    UNREVOKED_PARTITIONS = 1
    #: At the target epoch, but some of its target units are still held by their
    #: previous owners; they are handed over as those release them (phase 3).
    UNRELEASED_PARTITIONS = 2
    #: A value this engine does not know (a record from a newer version): the member
    #: must rejoin owning nothing.
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        for state in cls:
            if state.value == value:
                return state
        return cls.UNKNOWN


@dataclass(frozen=True, order=True)
class ClientAssignor:
    """A client-side assignor a connect worker supports (the draft's ``Assignor``)."""

    name: str
    minimum_version: int
    maximum_version: int
    reason: int = 0
    version: int = 0
    metadata: bytes = b""


@dataclass(frozen=True)
class MemberMetadata:
    """What a member told the coordinator about itself (everything but its units).

    A change to ``subscription`` or ``client_assignors`` (any field, ``reason`` and
    ``metadata`` included) is a change of the group's metadata and bumps the group epoch;
    the other fields are kept (and recorded) without a bump, as Kafka does.
    """

    instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    #: Keys (topic names) the member subscribes to; empty for connect workers.
    subscription: frozenset[str] = EMPTY
    #: Consumer groups: the server-side assignor the member asked for, or None.
    server_assignor: str | None = None
    #: Connect groups: client-side assignors, most preferred first.
    client_assignors: tuple[ClientAssignor, ...] = ()

    def bumps_epoch_against(self, previous: MemberMetadata | None) -> bool:
        """True when replacing ``previous`` with this is a group metadata change."""
        if previous is None:
            return True
        return (self.subscription != previous.subscription
                or self.client_assignors != previous.client_assignors)


@dataclass(frozen=True)
class AssignmentPayload:
    """What travels with a member's units besides the units (the draft's per-member
    ``Error``, ``Version`` and ``Metadata``; all zero / empty for consumer groups)."""

    error: int = 0
    version: int = 0
    metadata: bytes = b""


NO_PAYLOAD = AssignmentPayload()


@dataclass(frozen=True)
class MemberTarget(Generic[U]):
    """A member's entry in the target assignment."""

    units: frozenset[U] = EMPTY
    payload: AssignmentPayload = NO_PAYLOAD


@dataclass(frozen=True)
class CurrentAssignment(Generic[U]):
    """A member's current assignment, as Kafka's ConsumerGroupMember keeps it.

    ``assigned`` are units the member owns or has been given; ``pending_revocation`` are
    units it was asked to give back and has not yet acknowledged. Both count as held by
    the member: no other member may be handed them.
    """

    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: frozenset[U] = EMPTY
    pending_revocation: frozenset[U] = EMPTY
    payload: AssignmentPayload = NO_PAYLOAD

    @property
    def held(self) -> frozenset[U]:
        return self.assigned | self.pending_revocation if self.pending_revocation else self.assigned

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int, **changes: object) -> CurrentAssignment[U]:
        """Move to ``epoch``, remembering the epoch left behind (Kafka's
        ``updateMemberEpoch``): the lost-response rule accepts that previous epoch."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch,
                       **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Member(Generic[U]):
    member_id: str
    metadata: MemberMetadata = field(default_factory=MemberMetadata)
    #: The group epoch at which ``metadata`` last changed (the draft's record field).
    metadata_epoch: int = 0
    current: CurrentAssignment[U] = field(default_factory=CurrentAssignment)


__all__ = [
    "MemberState", "ClientAssignor", "MemberMetadata", "AssignmentPayload", "NO_PAYLOAD",
    "MemberTarget", "CurrentAssignment", "Member",
]
