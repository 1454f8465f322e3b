"""OffsetFetch (API 9, v1-10): one group (v1-7) or many (v8+, KIP-709).

Per group: named topics (or, with null topics, every committed offset). Kafka answers a
group it does not know - or a Dead classic group - with no error: named partitions come
back with offset -1, "all topics" comes back empty. A partition without a commit is -1,
leader epoch -1, metadata "". From v10 topics are named by id; an id the catalogue cannot
resolve is UNKNOWN_TOPIC_ID on each of its partitions, and a committed topic whose id is
unknown is left out of an all-topics answer.

Before v8 the single group is flattened into the old layout, its error (if a group type
raises one) becoming the top-level ErrorCode (v2+).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from ..context import RequestContext
from ..errors import RuleViolation

if TYPE_CHECKING:
    from ..view import CoordinatorView

ZERO_UUID = uuid.UUID(int=0)
INVALID_OFFSET = -1


@dataclass(frozen=True)
class _PartitionOffset:
    index: int
    offset: int = INVALID_OFFSET
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass
class _TopicOffsets:
    name: str
    topic_id: uuid.UUID
    partitions: list[_PartitionOffset] = field(default_factory=list)


@dataclass
class _GroupOffsets:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    topics: list[_TopicOffsets] = field(default_factory=list)


@dataclass(frozen=True)
class _GroupQuery:
    group_id: str
    member_id: str | None
    member_epoch: int
    topics: list[tuple[str, uuid.UUID, list[int]]] | None  # None: every committed topic


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    v = ctx.api_version
    answers = [_fetch(coord, q, v) for q in _queries(body, v)]
    coord.env.reply(ctx, _response(coord, v, answers))


def _queries(body: Struct, v: int) -> list[_GroupQuery]:
    b: Any = body
    if v < 8:
        topics = b.topics
        return [_GroupQuery(b.group_id, None, -1,
                            None if topics is None else
                            [(t.name, ZERO_UUID, list(t.partition_indexes)) for t in topics])]
    out = []
    for g in b.groups:
        topics = None if g.topics is None else [
            (t.name if v < 10 else "", t.topic_id if v >= 10 else ZERO_UUID,
             list(t.partition_indexes)) for t in g.topics]
        out.append(_GroupQuery(g.group_id, g.member_id, g.member_epoch, topics))
    return out


def _fetch(coord: CoordinatorView, q: _GroupQuery, v: int) -> _GroupOffsets:
    group = coord.groups.get(q.group_id)
    try:
        fetchable = group is not None and group.offsets_fetchable(q.member_id, q.member_epoch)
    except RuleViolation as violation:  # a group type's own check (not the classic one's)
        return _GroupOffsets(q.group_id, error=violation.error)
    result = _GroupOffsets(q.group_id)
    if q.topics is None:
        if not fetchable:
            return result
        by_topic: dict[str, _TopicOffsets] = {}
        for topic, partition, c in coord.offsets.all(q.group_id):
            t = by_topic.get(topic)
            if t is None:
                tid = coord.topics.id_of(topic) if v >= 10 else ZERO_UUID
                if tid is None:
                    continue
                t = by_topic[topic] = _TopicOffsets(topic, tid)
                result.topics.append(t)
            t.partitions.append(_PartitionOffset(partition, c.offset, c.leader_epoch, c.metadata))
        return result
    for name, topic_id, partitions in q.topics:
        if v >= 10:
            resolved = coord.topics.name_of(topic_id)
            if resolved is None:
                result.topics.append(_TopicOffsets("", topic_id, [
                    _PartitionOffset(p, error=ErrorCode.UNKNOWN_TOPIC_ID) for p in partitions]))
                continue
            name = resolved
        t = _TopicOffsets(name, topic_id)
        for p in partitions:
            got = coord.offsets.get(q.group_id, name, p) if fetchable else None
            t.partitions.append(_PartitionOffset(p) if got is None else
                                _PartitionOffset(p, got.offset, got.leader_epoch, got.metadata))
        result.topics.append(t)
    return result


def _response(coord: CoordinatorView, v: int, answers: list[_GroupOffsets]) -> Struct:
    mt = coord.registry["OffsetFetchResponse"]
    cls: Any = mt.cls
    if v >= 8:
        return mt.new(groups=[cls.OffsetFetchResponseGroup(
            group_id=g.group_id,
            error_code=int(g.error),
            topics=[cls.OffsetFetchResponseTopics(
                name=t.name if v < 10 else "",
                topic_id=t.topic_id if v >= 10 else ZERO_UUID,
                partitions=[cls.OffsetFetchResponsePartitions(
                    partition_index=p.index, committed_offset=p.offset,
                    committed_leader_epoch=p.leader_epoch, metadata=p.metadata,
                    error_code=int(p.error)) for p in t.partitions])
                for t in g.topics]) for g in answers])
    (g,) = answers
    topics = [cls.OffsetFetchResponseTopic(
        name=t.name,
        partitions=[cls.OffsetFetchResponsePartition(
            partition_index=p.index, committed_offset=p.offset,
            committed_leader_epoch=p.leader_epoch, metadata=p.metadata,
            error_code=int(p.error)) for p in t.partitions])
        for t in g.topics]
    # v1 has no top-level error; a group error comes with no topics, so it is not shown.
    return mt.new(topics=topics, error_code=int(g.error))
