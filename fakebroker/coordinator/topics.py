"""Which topics exist, for the offset APIs' topic checks and topic-id resolution.

Kafka's request handler answers an OffsetCommit for an unknown topic or partition with
UNKNOWN_TOPIC_OR_PARTITION, and (v10+, topic ids) for an unresolvable id with
UNKNOWN_TOPIC_ID, before the group coordinator sees it. The coordinator asks a
``TopicCatalog``; the broker shell supplies one backed by its metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol


def derived_topic_id(name: str) -> uuid.UUID:
    """The id the fake broker gives a topic (stable across runs)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"fakebroker-topic:{name}")


class TopicCatalog(Protocol):
    def partition_count(self, name: str) -> int | None:
        """Partitions of ``name``; None if the topic does not exist."""

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        """The topic with this id, or None."""

    def id_of(self, name: str) -> uuid.UUID | None:
        """The id of ``name``, or None."""

    def names(self) -> list[str]:
        """Every topic known, sorted (regex subscriptions of consumer groups match these)."""


class FixedTopics:
    """A catalogue of known topics: ``FixedTopics({"t": 3})`` (ids derived from names)."""

    def __init__(self, partitions: dict[str, int],
                 ids: dict[str, uuid.UUID] | None = None) -> None:
        self._partitions = dict(partitions)
        self._ids = {n: (ids or {}).get(n, derived_topic_id(n)) for n in self._partitions}
        self._names = {i: n for n, i in self._ids.items()}

    def partition_count(self, name: str) -> int | None:
        return self._partitions.get(name)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._names.get(topic_id)

    def id_of(self, name: str) -> uuid.UUID | None:
        return self._ids.get(name)

    def names(self) -> list[str]:
        return sorted(self._partitions)


class OpenTopics:
    """The default: every topic name exists with any number of partitions. A topic id
    resolves only once its name has been seen (committed or looked up by name)."""

    def __init__(self, seen: Iterable[str] = ()) -> None:
        self._names: dict[uuid.UUID, str] = {}
        for name in seen:
            self.id_of(name)

    def partition_count(self, name: str) -> int | None:
        self.id_of(name)
        return 2**31 - 1

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._names.get(topic_id)

    def id_of(self, name: str) -> uuid.UUID | None:
        tid = derived_topic_id(name)
        self._names.setdefault(tid, name)
        return tid

    def names(self) -> list[str]:
        """Only the names seen so far: every name exists, but none can be listed."""
        return sorted(self._names.values())
