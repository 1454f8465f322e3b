"""A JoinGroup request as the engine needs it, independent of the wire version.

Building it costs per protocol, and a maximal frame carries ~1.4 million of them: it reads
only the request, so the broker builds it off the event loop for big frames
(``GroupCoordinator.prepare``), with every per-protocol value the handler needs.
"""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass, field

from ...protocol import Struct
from .member import ProtocolMetadata


@dataclass(frozen=True)
class JoinRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[ProtocolMetadata, ...]
    reason: str | None
    protocol_names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocol_names", frozenset(p.name for p in self.protocols))

    @staticmethod
    def from_struct(body: Struct, api_version: int) -> JoinRequest:
        b: Any = body
        session = b.session_timeout_ms
        return JoinRequest(
            group_id=b.group_id,
            session_timeout_ms=session,
            # v0 has no rebalance timeout; Kafka uses the session timeout in its place.
            rebalance_timeout_ms=session if api_version == 0 else b.rebalance_timeout_ms,
            member_id=b.member_id,
            group_instance_id=b.group_instance_id,
            protocol_type=b.protocol_type,
            protocols=tuple(ProtocolMetadata(p.name, bytes(p.metadata))
                            for p in b.protocols),
            reason=b.reason,
        )

    @property
    def reason_text(self) -> str:
        """Kafka's wording when the client gave no reason."""
        return self.reason or "not provided"
