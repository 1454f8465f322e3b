"""What every group type offers the shared APIs (ListGroups, DescribeGroups, offsets).

Group ids are one namespace across types, as in Kafka: ``GroupCoordinator.groups`` maps a
group id to exactly one group object, whose ``type`` says which protocol runs it: "classic"
(``classic/``), and the heartbeat-driven "consumer" and "connect" (``modern/``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

CLASSIC = "classic"


@runtime_checkable
class Group(Protocol):
    group_id: str

    @property
    def type(self) -> str:
        """Kafka's group type name ("classic", "consumer", ...), lower case."""

    @property
    def state_name(self) -> str:
        """The state as ListGroups / DescribeGroups spell it."""

    @property
    def listed_protocol_type(self) -> str:
        """ListGroups' ProtocolType ("" when the group has none)."""

    def is_empty(self) -> bool:
        """Kafka's Group.isEmpty(): SyncGroup and offset rules branch on it."""

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_or_epoch: int, api_version: int) -> None:
        """Raise RuleViolation when this member may not commit offsets now."""

    def offsets_fetchable(self, member_id: str | None, member_epoch: int) -> bool:
        """False when Kafka treats the group as not found for OffsetFetch (no offsets, no
        error); raise RuleViolation for a group-level error."""
