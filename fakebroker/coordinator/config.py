"""The coordinator's settings: Apache Kafka's broker configs, with Kafka's defaults.

Each field names the Kafka config it stands for. ``member_id_suffix`` is the one knob Kafka
does not have: Kafka appends a random UUID to a new member id; tests inject a counter so
that member ids are known in advance.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Kafka's ClassicGroup uses "-" between the prefix and the UUID.
MEMBER_ID_DELIMITER = "-"


def random_suffix() -> str:
    """Kafka's suffix: a random UUID in its canonical text form."""
    return str(uuid.uuid4())


def counting_suffixes(start: int = 1) -> Callable[[], str]:
    """A deterministic suffix source for tests: ``"1"``, ``"2"``, ..."""
    counter = itertools.count(start)
    return lambda: str(next(counter))


# Kafka broker property -> CoordinatorConfig field.
KAFKA_PROPERTY_NAMES: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "group.min.session.timeout.ms": "min_session_timeout_ms",
    "group.max.session.timeout.ms": "max_session_timeout_ms",
    "group.max.size": "max_group_size",
    "offset.metadata.max.bytes": "offset_metadata_max_bytes",
}


@dataclass
class CoordinatorConfig:
    # group.initial.rebalance.delay.ms: how long an Empty group waits for more members.
    initial_rebalance_delay_ms: int = 3000
    # group.min.session.timeout.ms / group.max.session.timeout.ms: JoinGroup bounds.
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    # group.max.size (Kafka's default is Integer.MAX_VALUE).
    max_group_size: int = 2**31 - 1
    # offset.metadata.max.bytes: longer commit metadata gets OFFSET_METADATA_TOO_LARGE.
    offset_metadata_max_bytes: int = 4096
    # Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS (a constant, not a config): a new
    # member whose first join never completes is dropped after this long.
    new_member_join_timeout_ms: int = 300_000
    # The random part of a new member id (see ``member_id``).
    member_id_suffix: Callable[[], str] = field(default=random_suffix, compare=False)

    def __post_init__(self) -> None:
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("min_session_timeout_ms exceeds max_session_timeout_ms")
        if self.max_group_size < 1:
            raise ValueError("max_group_size must be at least 1")
        for name in ("initial_rebalance_delay_ms", "offset_metadata_max_bytes",
                     "new_member_join_timeout_ms", "min_session_timeout_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")

    @classmethod
    def from_properties(cls, props: Mapping[str, str | int], **overrides: Any) -> CoordinatorConfig:
        """Build from Kafka broker property names (``group.max.size`` ...); unknown names
        are an error, so a typo does not silently keep a default."""
        kwargs: dict[str, Any] = {}
        for name, value in props.items():
            field_name = KAFKA_PROPERTY_NAMES.get(name)
            if field_name is None:
                raise ValueError(f"{name!r} is not a group coordinator property this fake knows "
                                 f"(known: {', '.join(sorted(KAFKA_PROPERTY_NAMES))})")
            kwargs[field_name] = int(value)
        kwargs.update(overrides)
        return cls(**kwargs)

    def member_id(self, client_id: str, group_instance_id: str | None) -> str:
        """Kafka's rule: ``group.instance.id`` (static) or ``client.id`` (dynamic), "-", suffix."""
        prefix = group_instance_id if group_instance_id is not None else client_id
        return prefix + MEMBER_ID_DELIMITER + self.member_id_suffix()
