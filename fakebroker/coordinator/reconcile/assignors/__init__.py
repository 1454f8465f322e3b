"""Server-side assignors for consumer groups (KIP-848): ``uniform`` (the default) and
``range``. Connect groups use none: their target is installed by a worker."""

from __future__ import annotations

from .base import AssignmentSpec, Assignor, AssignorError, AssignorMember
from .range import RangeAssignor
from .uniform import UniformAssignor

#: Kafka's group.consumer.assignors default order: the first is the default.
DEFAULT_ASSIGNORS: tuple[str, ...] = ("uniform", "range")


def kafka_assignors() -> dict[str, Assignor]:  # type: ignore[type-arg]
    return {"uniform": UniformAssignor(), "range": RangeAssignor()}


__all__ = ["AssignmentSpec", "Assignor", "AssignorError", "AssignorMember", "RangeAssignor",
           "UniformAssignor", "DEFAULT_ASSIGNORS", "kafka_assignors"]
