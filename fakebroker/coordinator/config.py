"""The coordinator's settings: Apache Kafka's broker configs, with Kafka's defaults.

Each field names the Kafka config it stands for. ``member_id_suffix`` is the one knob Kafka
does not have: Kafka appends a random UUID to a new member id; tests inject a counter so
that member ids are known in advance.
"""

from __future__ import annotations

import base64
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
    "group.coordinator.rebalance.protocols": "rebalance_protocols",
    "group.consumer.session.timeout.ms": "consumer_session_timeout_ms",
    "group.consumer.heartbeat.interval.ms": "consumer_heartbeat_interval_ms",
    "group.consumer.max.size": "consumer_max_size",
    "group.consumer.assignors": "consumer_assignors",
    "group.consumer.migration.policy": "consumer_migration_policy",
    # The draft's connect group type has no Kafka configs; the project names its own.
    "group.connect.session.timeout.ms": "connect_session_timeout_ms",
    "group.connect.heartbeat.interval.ms": "connect_heartbeat_interval_ms",
    "group.connect.max.size": "connect_max_size",
}

#: Properties whose value is a comma-separated list (Kafka's LIST config type).
_LIST_PROPERTIES = frozenset({"rebalance_protocols", "consumer_assignors"})
#: Properties whose value is a string.
_STRING_PROPERTIES = frozenset({"consumer_migration_policy"})

#: The group protocols this coordinator can run: Kafka's ``classic`` and ``consumer``, and
#: the draft's ``connect`` (its ConnectGroup* APIs).
REBALANCE_PROTOCOLS = ("classic", "consumer", "connect")
#: Server-side assignors a consumer group can use (``group.consumer.assignors``).
CONSUMER_ASSIGNORS = ("uniform", "range")


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

    # --- heartbeat-driven group types (KIP-848 consumer groups, the draft's connect groups)
    # group.coordinator.rebalance.protocols: which group protocols are served. A protocol
    # left out is not advertised (its APIs are not coordinator APIs). Kafka 4.x's default
    # is classic,consumer; "connect" is the draft's.
    rebalance_protocols: tuple[str, ...] = REBALANCE_PROTOCOLS
    # group.consumer.session.timeout.ms: a consumer-group member that does not heartbeat
    # for this long is fenced (KIP-848 moved the session timeout to the broker).
    consumer_session_timeout_ms: int = 45_000
    # group.consumer.heartbeat.interval.ms: the interval every heartbeat response gives.
    consumer_heartbeat_interval_ms: int = 5_000
    # group.consumer.max.size.
    consumer_max_size: int = 2**31 - 1
    # group.consumer.assignors: the server-side assignors, the first being the default.
    consumer_assignors: tuple[str, ...] = CONSUMER_ASSIGNORS
    # group.consumer.migration.policy: Kafka's default is "bidirectional" (a classic group
    # of consumer-protocol members converts to a consumer group and back). Online
    # migration is not modelled: this fake behaves as Kafka configured with "disabled",
    # the only value it accepts.
    consumer_migration_policy: str = "disabled"
    # The draft's connect groups: Connect's worker defaults (session.timeout.ms 10 s,
    # heartbeat.interval.ms 3 s) as the broker-side session timeout and interval.
    connect_session_timeout_ms: int = 10_000
    connect_heartbeat_interval_ms: int = 3_000
    connect_max_size: int = 2**31 - 1

    def __post_init__(self) -> None:
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("min_session_timeout_ms exceeds max_session_timeout_ms")
        if self.max_group_size < 1:
            raise ValueError("max_group_size must be at least 1")
        for name in ("initial_rebalance_delay_ms", "offset_metadata_max_bytes",
                     "new_member_join_timeout_ms", "min_session_timeout_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("consumer_session_timeout_ms", "consumer_heartbeat_interval_ms",
                     "consumer_max_size", "connect_session_timeout_ms",
                     "connect_heartbeat_interval_ms", "connect_max_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        self.rebalance_protocols = tuple(self.rebalance_protocols)
        unknown = sorted(set(self.rebalance_protocols) - set(REBALANCE_PROTOCOLS))
        if unknown:
            raise ValueError(f"unknown rebalance protocols {unknown} "
                             f"(known: {', '.join(REBALANCE_PROTOCOLS)})")
        if "classic" not in self.rebalance_protocols:
            raise ValueError("the classic protocol cannot be disabled (as in Kafka)")
        self.consumer_assignors = tuple(self.consumer_assignors)
        if not self.consumer_assignors:
            raise ValueError("consumer_assignors must name at least one assignor")
        unknown = sorted(set(self.consumer_assignors) - set(CONSUMER_ASSIGNORS))
        if unknown:
            raise ValueError(f"unknown consumer assignors {unknown} "
                             f"(known: {', '.join(CONSUMER_ASSIGNORS)})")
        if self.consumer_migration_policy != "disabled":
            raise ValueError("consumer_migration_policy: online migration between classic and "
                             "consumer groups is not modelled; only 'disabled' is accepted")

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], **overrides: Any) -> CoordinatorConfig:
        """Build from Kafka broker property names (``group.max.size`` ...); unknown names
        are an error, so a typo does not silently keep a default."""
        kwargs: dict[str, Any] = {}
        for name, value in props.items():
            field_name = KAFKA_PROPERTY_NAMES.get(name)
            if field_name is None:
                raise ValueError(f"{name!r} is not a group coordinator property this fake knows "
                                 f"(known: {', '.join(sorted(KAFKA_PROPERTY_NAMES))})")
            if field_name in _LIST_PROPERTIES:
                items = value.split(",") if isinstance(value, str) else list(value)
                kwargs[field_name] = tuple(i.strip() for i in items if str(i).strip())
            elif field_name in _STRING_PROPERTIES:
                kwargs[field_name] = str(value).strip().lower()
            else:
                kwargs[field_name] = int(value)
        kwargs.update(overrides)
        return cls(**kwargs)

    def member_id(self, client_id: str, group_instance_id: str | None) -> str:
        """Kafka's rule: ``group.instance.id`` (static) or ``client.id`` (dynamic), "-", suffix."""
        prefix = group_instance_id if group_instance_id is not None else client_id
        return prefix + MEMBER_ID_DELIMITER + self.member_id_suffix()

    def generated_member_id(self) -> str:
        """A member id the coordinator generates for a ConsumerGroupHeartbeat v0 join without
        one: Kafka's ``Uuid.randomUuid().toString()`` (22 characters of URL-safe base64);
        with an injected ``member_id_suffix`` (tests), the suffix alone."""
        if self.member_id_suffix is not random_suffix:
            return self.member_id_suffix()
        return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
