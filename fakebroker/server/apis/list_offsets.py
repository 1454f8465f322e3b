"""ListOffsets (2): every configured partition is empty, so every offset is 0."""

from __future__ import annotations

from typing import Any

from ...protocol.error_codes import ErrorCode
from .context import BrokerContext

API_KEY = 2


def handle(ctx: BrokerContext, request: Any, version: int) -> Any:
    mt = ctx.registry.response(API_KEY)
    c = mt.classes
    topics = []
    for t in request.topics:
        known = ctx.config.topic(t.name)
        parts = []
        for p in t.partitions:
            ok = known is not None and 0 <= p.partition_index < known.partitions
            parts.append(c["ListOffsetsPartitionResponse"](
                partition_index=p.partition_index,
                error_code=0 if ok else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                timestamp=-1, offset=0 if ok else -1,
                # LeaderEpoch exists from v4 and is not ignorable: leave its default below.
                leader_epoch=0 if ok and version >= 4 else -1))
        topics.append(c["ListOffsetsTopicResponse"](name=t.name, partitions=parts))
    return mt.new(topics=topics)
