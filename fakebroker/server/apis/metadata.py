"""Metadata (3): the fake broker is the only broker and leads every configured partition."""

from __future__ import annotations

from typing import Any

from ...protocol.error_codes import ErrorCode
from .context import BrokerContext

API_KEY = 3


def handle(ctx: BrokerContext, request: Any, version: int) -> Any:
    mt = ctx.registry.response(API_KEY)
    c = mt.classes
    node = ctx.config.node_id
    broker = c["MetadataResponseBroker"](node_id=node, host=ctx.host, port=ctx.port, rack=None)
    # v0: an empty list means all topics; v1+: null means all, empty means none.
    wanted = request.topics
    if wanted is None or (version == 0 and not wanted):
        names: list[str | None] = [t.name for t in ctx.config.topics]
    else:
        names = [t.name if t.name is not None else _name_of_id(ctx, t.topic_id) for t in wanted]
    topics = []
    for name in names:
        topic = ctx.config.topic(name) if name is not None else None
        if topic is None:
            topics.append(c["MetadataResponseTopic"](
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name))
            continue
        parts = [c["MetadataResponsePartition"](
            error_code=0, partition_index=i, leader_id=node, leader_epoch=0,
            replica_nodes=[node], isr_nodes=[node], offline_replicas=[])
            for i in range(topic.partitions)]
        topics.append(c["MetadataResponseTopic"](
            error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=False,
            partitions=parts))
    return mt.new(brokers=[broker], cluster_id=ctx.config.cluster_id, controller_id=node,
                  topics=topics)


def _name_of_id(ctx: BrokerContext, topic_id: Any) -> str | None:
    topic = ctx.config.topic_by_id(topic_id)
    return topic.name if topic else None
