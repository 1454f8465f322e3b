"""Fetch (1): partitions hold no records; an empty fetch waits its max wait, as Kafka's does."""

from __future__ import annotations

from typing import Any

from ...protocol.error_codes import ErrorCode
from .context import BrokerContext

API_KEY = 1


async def handle(ctx: BrokerContext, request: Any, version: int) -> Any:
    mt = ctx.registry.response(API_KEY)
    c = mt.classes
    responses = []
    for t in request.topics:
        by_id = version >= 13
        topic = ctx.config.topic_by_id(t.topic_id) if by_id else ctx.config.topic(t.topic)
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        parts = []
        for p in t.partitions:
            ok = topic is not None and 0 <= p.partition < topic.partitions
            parts.append(c["PartitionData"](
                partition_index=p.partition, error_code=0 if ok else unknown,
                high_watermark=0 if ok else -1, last_stable_offset=0 if ok else -1,
                log_start_offset=0 if ok else -1, records=b"" if ok else None))
        responses.append(c["FetchableTopicResponse"](topic=t.topic, topic_id=t.topic_id,
                                                     partitions=parts))
    # Nothing will ever arrive, so min_bytes > 0 always waits the full max wait.
    if request.min_bytes > 0 and request.max_wait_ms > 0:
        await ctx.clock.sleep_until(ctx.clock.now_ms() + request.max_wait_ms)
    return mt.new(error_code=0, session_id=0, responses=responses)
