"""The assignable units the engine reconciles, and how they are ordered.

The engine is generic over the unit: any hashable, totally ordered value (a NamedTuple of
str / int fields is the natural choice). Two kinds ship here:

- ``TopicPartition`` for consumer groups (KIP-848): a topic id and a partition number.
- ``ConnectUnit`` for connect groups (the draft): a connector instance (``task == -1``)
  or one of its tasks (``task >= 0``). On the wire the draft carries them in two lists
  (``Connectors`` / ``Tasks``, ERRATA entries 2-4); ``-1`` is only this module's internal
  marker for "the connector itself" and never reaches the wire.

Units are grouped under *keys* (a topic name, a connector name): members subscribe to
keys, and the range assignor hands out contiguous runs of one key's units.

Everything that lists units lists them sorted (``sorted_units``): never hash order.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, NamedTuple, Protocol, TypeVar


class _Orderable(Hashable, Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


U = TypeVar("U", bound=_Orderable)

#: Units of one key (a topic's partitions, a connector's instance and tasks), in order.
UnitCatalog = dict[str, tuple[U, ...]]


class TopicPartition(NamedTuple):
    topic_id: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic_id}-{self.partition}"


CONNECTOR_INSTANCE = -1


class ConnectUnit(NamedTuple):
    """A connector instance (``task == -1``) or task ``task`` (from 0) of ``connector``."""

    connector: str
    task: int

    @classmethod
    def instance(cls, connector: str) -> ConnectUnit:
        return cls(connector, CONNECTOR_INSTANCE)

    @classmethod
    def of_task(cls, connector: str, task: int) -> ConnectUnit:
        if task < 0:
            raise ValueError(f"task ids count from 0, got {task}")
        return cls(connector, task)

    @property
    def is_connector(self) -> bool:
        return self.task == CONNECTOR_INSTANCE

    def __str__(self) -> str:
        return f"{self.connector}" if self.is_connector else f"{self.connector}/{self.task}"


#: The one empty frozenset for state kept per member: CPython builds (and its collector
#: tracks) a new empty frozenset at every ``frozenset(())``.
EMPTY: frozenset[Any] = frozenset()

H = TypeVar("H", bound=Hashable)


def frozen(items: Iterable[H]) -> frozenset[H]:
    """``frozenset(items)``, the shared ``EMPTY`` when there are none."""
    out = frozenset(items)
    return out if out else EMPTY


def sorted_units(units: Iterable[U]) -> tuple[U, ...]:
    """Units in their natural order: the one order in which they are ever listed."""
    return tuple(sorted(units))


def split_connect_units(units: Iterable[ConnectUnit]) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """The draft's ``ConnectorsAndTasks`` shape: connector names and (connector, task) pairs."""
    connectors: list[str] = []
    tasks: list[tuple[str, int]] = []
    for unit in sorted_units(units):
        if unit.is_connector:
            connectors.append(unit.connector)
        else:
            tasks.append((unit.connector, unit.task))
    return tuple(connectors), tuple(tasks)


def join_connect_units(connectors: Iterable[str], tasks: Iterable[tuple[str, int]]) -> frozenset[ConnectUnit]:
    """The inverse of ``split_connect_units`` (task ids must not be negative)."""
    out = {ConnectUnit.instance(c) for c in connectors}
    out.update(ConnectUnit.of_task(c, t) for c, t in tasks)
    return frozenset(out)


def topic_catalog(topics: dict[str, tuple[str, int]]) -> UnitCatalog[TopicPartition]:
    """A catalog from ``{topic name: (topic id, partition count)}``."""
    return {name: tuple(TopicPartition(tid, p) for p in range(count))
            for name, (tid, count) in sorted(topics.items())}


__all__ = [
    "U", "UnitCatalog", "TopicPartition", "ConnectUnit", "CONNECTOR_INSTANCE", "EMPTY", "frozen",
    "sorted_units",
    "split_connect_units", "join_connect_units", "topic_catalog",
]
