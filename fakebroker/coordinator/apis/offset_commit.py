"""OffsetCommit (API 8, v2-10), kept in memory.

Kafka's order: first the request handler's topic checks (an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION; from v10 topics are named by id and an unresolvable id is
UNKNOWN_TOPIC_ID); when no partition survives, the group is not consulted at all. Then the
group: an unknown group with generation < 0 becomes a new "simple" classic group; with a
generation it is GROUP_ID_NOT_FOUND (v9+) or ILLEGAL_GENERATION (older). Then the group's
own rule (``require_offset_commit_allowed`` for classic groups), whose error is given to
every remaining partition. Per partition, metadata above offset.metadata.max.bytes is
OFFSET_METADATA_TOO_LARGE.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from ..classic.group import ClassicGroup
from ..classic.rules import offset_metadata_within_limit
from ..classic.state import ClassicGroupState
from ..context import RequestContext
from ..errors import RuleViolation
from ..group import Group
from ..offsets import CommittedOffset
from ..topics import TopicCatalog

if TYPE_CHECKING:
    from ..view import CoordinatorView

S = ClassicGroupState
ZERO_UUID = uuid.UUID(int=0)


@dataclass
class _TopicResult:
    name: str
    topic_id: uuid.UUID
    partitions: list[tuple[int, ErrorCode]] = field(default_factory=list)


@dataclass
class _Results:
    """Kafka's OffsetCommitResponse.Builder: topics in first-seen order, merged by topic."""

    topics: dict[tuple[str, uuid.UUID], _TopicResult] = field(default_factory=dict)

    def add(self, name: str, topic_id: uuid.UUID, partition: int, error: ErrorCode) -> None:
        key = (name, topic_id)
        if key not in self.topics:
            self.topics[key] = _TopicResult(name, topic_id)
        self.topics[key].partitions.append((partition, error))


@dataclass(frozen=True)
class _Partition:
    index: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True)
class _Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[_Partition]


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    v = ctx.api_version
    b: Any = body
    results = _Results()
    valid = _check_topics(coord.topics, b.topics, v, results)
    if valid:
        _commit(coord, ctx, b, valid, results)
    _answer(coord, ctx, results)


def _check_topics(catalog: TopicCatalog, topics: list[Any], v: int,
                  results: _Results) -> list[_Topic]:
    """The request handler's checks; returns the topics and partitions that pass."""
    valid: list[_Topic] = []
    for t in topics:
        parts = [_Partition(p.partition_index, p.committed_offset,
                            p.committed_leader_epoch, p.committed_metadata)
                 for p in t.partitions]
        if v >= 10:
            topic_id: uuid.UUID = t.topic_id
            name = catalog.name_of(topic_id)
            if name is None:
                for p in parts:
                    results.add("", topic_id, p.index, ErrorCode.UNKNOWN_TOPIC_ID)
                continue
        else:
            name = t.name
            topic_id = ZERO_UUID
        count = catalog.partition_count(name)
        if count is None:
            for p in parts:
                results.add(name, topic_id, p.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        ok = []
        for p in parts:
            if 0 <= p.index < count:
                ok.append(p)
            else:
                results.add(name, topic_id, p.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if ok:
            valid.append(_Topic(name, topic_id, ok))
    return valid


def _commit(coord: CoordinatorView, ctx: RequestContext, b: Any, topics: list[_Topic],
            results: _Results) -> None:
    group_id: str = b.group_id
    member_id: str = b.member_id
    generation: int = b.generation_id_or_member_epoch
    try:
        group = _group_for_commit(coord, group_id, generation, ctx.api_version)
        group.validate_offset_commit(member_id, b.group_instance_id, generation,
                                     ctx.api_version)
    except RuleViolation as v:
        for t in topics:
            for p in t.partitions:
                results.add(t.name, t.topic_id, p.index, v.error)
        return
    if isinstance(group, ClassicGroup) and group.in_state(S.STABLE, S.PREPARING_REBALANCE):
        # A classic member's commit counts as a heartbeat.
        coord.rebalancer.reschedule_heartbeat(group, group.member(member_id))
    limit = coord.config.offset_metadata_max_bytes
    for t in topics:
        for p in t.partitions:
            if not offset_metadata_within_limit(p.metadata, limit):
                results.add(t.name, t.topic_id, p.index, ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            coord.offsets.commit(group_id, t.name, p.index, CommittedOffset(
                p.offset, p.leader_epoch, p.metadata if p.metadata is not None else "",
                coord.env.now_ms))
            results.add(t.name, t.topic_id, p.index, ErrorCode.NONE)


def _group_for_commit(coord: CoordinatorView, group_id: str, generation: int,
                      api_version: int) -> Group:
    group = coord.groups.get(group_id)
    if group is not None:
        return group
    if generation < 0:
        # An admin client or a consumer without group management: a simple group.
        return coord.create_classic_group(group_id)
    if api_version >= 9:
        raise RuleViolation(ErrorCode.GROUP_ID_NOT_FOUND, "commit-group-exists",
                            f"Group {group_id} not found.")
    raise RuleViolation(ErrorCode.ILLEGAL_GENERATION, "commit-group-exists")


def _answer(coord: CoordinatorView, ctx: RequestContext, results: _Results) -> None:
    mt = coord.registry["OffsetCommitResponse"]
    cls: Any = mt.cls
    v = ctx.api_version
    topics = []
    for t in results.topics.values():
        topics.append(cls.OffsetCommitResponseTopic(
            name=t.name if v < 10 else "",
            topic_id=t.topic_id if v >= 10 else ZERO_UUID,
            partitions=[cls.OffsetCommitResponsePartition(
                partition_index=p, error_code=int(e)) for p, e in t.partitions]))
    coord.env.reply(ctx, mt.new(topics=topics))
