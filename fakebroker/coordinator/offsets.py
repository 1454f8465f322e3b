"""Committed offsets, in memory, per group (Kafka keeps them beside the group, not in it)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int  # -1 when the commit carried none
    metadata: str      # Kafka stores "" for a null metadata
    commit_timestamp_ms: int


@dataclass
class OffsetStore:
    _by_group: dict[str, dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)

    def commit(self, group_id: str, topic: str, partition: int, value: CommittedOffset) -> None:
        self._by_group.setdefault(group_id, {})[(topic, partition)] = value

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._by_group.get(group_id, {}).get((topic, partition))

    def all(self, group_id: str) -> list[tuple[str, int, CommittedOffset]]:
        """Every offset of the group, by topic then partition (Kafka's order is hash order)."""
        offsets = self._by_group.get(group_id, {})
        return [(t, p, offsets[(t, p)]) for t, p in sorted(offsets)]
