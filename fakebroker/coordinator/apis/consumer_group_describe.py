"""ConsumerGroupDescribe (API 69, v0-1).

Per group id: an empty id is INVALID_GROUP_ID (Kafka's service answers these first, before
the groups it looks up); a missing group, or one of another type, is GROUP_ID_NOT_FOUND
with Kafka's message; a consumer group is described with its epochs, its state, the
assignor in use (the members' most requested, else the default) and every member's
current and target assignment (topics the cluster no longer has are left out, as Kafka
does). v1 adds MemberType (1: the member uses the consumer protocol). With
IncludeAuthorizedOperations, a described group carries every group operation (no
authorizer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import MessageType, Struct
from ...protocol.error_codes import ErrorCode
from ..context import RequestContext
from ..modern import ConsumerGroup
from ..modern.consumer import MEMBER_TYPE_CONSUMER, by_topic
from ..reconcile import TopicPartition
from ._group_lookup import not_found_message
from .describe_groups import authorize_all

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..view import CoordinatorView



def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    mt = coord.registry["ConsumerGroupDescribeResponse"]
    cls: Any = mt.cls
    ids: list[str] = list(b.group_ids)
    described = [cls.DescribedGroup(group_id=gid, error_code=int(ErrorCode.INVALID_GROUP_ID))
                 for gid in ids if gid == ""]
    described += [_describe(coord, mt, ctx.api_version, gid) for gid in ids if gid != ""]
    if b.include_authorized_operations:
        authorize_all(described)
    coord.env.reply(ctx, mt.new(groups=described))


def _describe(coord: CoordinatorView, mt: MessageType, v: int, group_id: str) -> Any:
    cls: Any = mt.cls
    group = coord.groups.get(group_id)
    if not isinstance(group, ConsumerGroup):
        return cls.DescribedGroup(group_id=group_id, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                                  error_message=not_found_message(group_id, group, "consumer"))
    e = group.engine

    def assignment(units: Iterable[TopicPartition]) -> Any:
        topics = []
        for tid, partitions in by_topic(units):
            name = group.topic_name(str(tid))
            if name is not None:
                topics.append(cls.TopicPartitions(topic_id=tid, topic_name=name,
                                                  partitions=partitions))
        return cls.Assignment(topic_partitions=topics)

    members = []
    for mid in e.member_ids():
        m = e.member(mid)
        md = m.metadata
        names, regex = group.subscription_of(mid)
        members.append(cls.Member(
            member_id=mid, instance_id=md.instance_id, rack_id=group.racks.get(mid),
            member_epoch=m.current.member_epoch, client_id=md.client_id,
            client_host=md.client_host, subscribed_topic_names=sorted(names),
            subscribed_topic_regex=regex, assignment=assignment(m.current.assigned),
            target_assignment=assignment(e.target(mid).units),
            member_type=MEMBER_TYPE_CONSUMER if v >= 1 else -1))
    return cls.DescribedGroup(group_id=group_id, group_state=group.state_name,
                              group_epoch=e.group_epoch, assignment_epoch=e.assignment_epoch,
                              assignor_name=group.assignor_name(), members=members)
