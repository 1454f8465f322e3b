"""One member of a classic group: who it is, what it supports, what it waits for."""

from __future__ import annotations

from dataclasses import dataclass

from ..context import RequestContext


@dataclass(frozen=True, slots=True)  # slots: a maximal JoinGroup carries ~1.4M of them
class ProtocolMetadata:
    """One entry of JoinGroup's Protocols: a name and its opaque metadata bytes."""

    name: str
    metadata: bytes


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[ProtocolMetadata, ...]  # in the member's preference order
    assignment: bytes = b""
    # A parked JoinGroup / SyncGroup of this member, answered when the phase completes.
    awaiting_join: RequestContext | None = None
    awaiting_sync: RequestContext | None = None
    # True from a member's first join until that join phase completes: such a member is
    # expired by the new-member join timeout even while it waits.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.protocols)

    def metadata(self, protocol_name: str) -> bytes:
        for p in self.protocols:
            if p.name == protocol_name:
                return p.metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name!r}")

    def matches(self, protocols: tuple[ProtocolMetadata, ...]) -> bool:
        """Kafka compares the protocol lists in order, names and metadata."""
        return protocols == self.protocols

    def vote(self, candidates: frozenset[str]) -> str:
        """The member's first protocol that every member supports."""
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka: a new member never does; others do while a join or sync is parked."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync
