"""The KIP-848 consumer group type: a ``GroupEngine`` over topic partitions with Kafka's
server-side assignors, and the ConsumerGroupHeartbeat / ConsumerGroupDescribe views of it.

Units are ``TopicPartition(topic id as text, partition)``. A member subscribes to topic
names; the group's ``TopicCatalog`` (the cluster's topics) resolves a name to its id and
partition count. A subscribed topic the cluster does not have contributes nothing until
it exists (Kafka's subscription metadata).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from ..config import CoordinatorConfig
from ..env import Env
from ..reconcile import EngineConfig, GroupEngine, ServerAssigned, TopicPartition
from ..reconcile.assignors import kafka_assignors
from ..reconcile.records import CompactedRecordStore
from ..topics import TopicCatalog
from .group import ModernGroup

CONSUMER = "consumer"
#: ConsumerGroupDescribe v1 MemberType: 1 = a member using the consumer protocol.
MEMBER_TYPE_CONSUMER = 1


class ConsumerGroup(ModernGroup[TopicPartition]):
    type = CONSUMER
    listed_protocol_type = CONSUMER  # Kafka's ConsumerProtocol.PROTOCOL_TYPE

    def __init__(self, group_id: str, env: Env, cluster: TopicCatalog) -> None:
        cfg: CoordinatorConfig = env.config
        self.cluster = cluster
        available = kafka_assignors()
        policy: ServerAssigned[TopicPartition] = ServerAssigned(
            resolver=self._partitions_of,
            assignors={name: available[name] for name in cfg.consumer_assignors},
            default=cfg.consumer_assignors[0])
        engine: GroupEngine[TopicPartition] = GroupEngine(
            EngineConfig(group_id, session_timeout_ms=cfg.consumer_session_timeout_ms,
                         heartbeat_interval_ms=cfg.consumer_heartbeat_interval_ms,
                         max_size=cfg.consumer_max_size, static_membership=True),
            policy, CompactedRecordStore())  # no log to write to: keep the live records only
        self.policy = policy
        #: RackId per member (kept beside the engine: no assignor here is rack-aware).
        self.racks: dict[str, str | None] = {}
        #: What each member asked for: topic names and regex (None: no regex). The engine
        #: keeps the resulting set of topics as the member's subscription.
        self.subscriptions: dict[str, tuple[frozenset[str], str | None]] = {}
        super().__init__(group_id, env, engine)

    def subscription_of(self, member_id: str) -> tuple[frozenset[str], str | None]:
        if not self.engine.has_member(member_id):
            return frozenset(), None
        if member_id in self.subscriptions:
            return self.subscriptions[member_id]
        return self.engine.member(member_id).metadata.subscription, None

    def resolve(self, names: Iterable[str], regex: str | None) -> frozenset[str]:
        """The topics a subscription covers: its names, and every topic of the cluster the
        regex matches in full (resolved when the subscription changes; Kafka resolves
        regexes asynchronously and refreshes them as topics come and go)."""
        topics = set(names)
        if regex:
            pattern = re.compile(regex)
            listed = getattr(self.cluster, "names", None)
            topics.update(t for t in (listed() if listed else []) if pattern.fullmatch(t))
        return frozenset(topics)

    @property
    def assignors(self) -> tuple[str, ...]:
        return tuple(self.policy.assignors)

    def _partitions_of(self, topic: str) -> tuple[TopicPartition, ...]:
        count = self.cluster.partition_count(topic)
        topic_id = self.cluster.id_of(topic)
        if not count or topic_id is None:
            return ()
        return tuple(TopicPartition(str(topic_id), p) for p in range(count))

    def assignor_name(self) -> str:
        """Kafka's preferred server assignor of the group (most requested), else the
        default (ConsumerGroupDescribe's AssignorName)."""
        e = self.engine
        return self.policy.choose({m: e.member(m).metadata for m in e.member_ids()})

    def topic_name(self, topic_id: str) -> str | None:
        return self.cluster.name_of(uuid.UUID(topic_id))


def owned_partitions(topic_partitions: Iterable[Any] | None) -> frozenset[TopicPartition] | None:
    """A request's TopicPartitions as units (None stays None: "unchanged")."""
    if topic_partitions is None:
        return None
    return frozenset(TopicPartition(str(t.topic_id), p)
                     for t in topic_partitions for p in t.partitions)


def by_topic(units: Iterable[TopicPartition]) -> list[tuple[uuid.UUID, list[int]]]:
    """Units grouped by topic id (topics and partitions in order)."""
    grouped: dict[str, list[int]] = {}
    for u in sorted(units):
        grouped.setdefault(u.topic_id, []).append(u.partition)
    return [(uuid.UUID(t), ps) for t, ps in grouped.items()]


__all__ = ["CONSUMER", "MEMBER_TYPE_CONSUMER", "ConsumerGroup", "owned_partitions", "by_topic"]
