"""ConsumerGroupHeartbeat (API 68, v0-1): KIP-848 consumer groups.

Kafka's order (GroupMetadataManager.consumerGroupHeartbeat, 4.x):

1. Request shape (INVALID_REQUEST; UNSUPPORTED_ASSIGNOR for an unknown ServerAssignor).
   From v1 the member chooses its id (KIP-1082) and must always send it; in v0 a join
   (epoch 0) may leave it empty and the coordinator generates one.
2. The group: a join (epoch 0) creates it, replacing an *empty* classic group of the same
   id; any other request to a missing group, and any request to a group of another type,
   is GROUP_ID_NOT_FOUND. (Kafka 4.x's default ``group.consumer.migration.policy`` would
   convert a non-empty classic group of consumer-protocol members; online migration is
   not modelled - see ``CoordinatorConfig.consumer_migration_policy``.)
3. A full group (``group.consumer.max.size``) refuses a member it does not have.
4. The reconciliation engine: member epoch checks (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH),
   metadata and group epoch, a new target from the server-side assignor, the member's
   reconciliation step.

Epoch -1 leaves the group. Static members (an InstanceId): a request other than a join
must come from the member holding that instance id (UNKNOWN_MEMBER_ID when nobody does,
FENCED_INSTANCE_ID when another member does); epoch -2 leaves for now, keeping the
assignment until the session times out; a join with an instance id in use is
UNRELEASED_INSTANCE_ID unless its holder left with -2, in which case the joining member
takes its place, assignment included, without a new group epoch.

SubscribedTopicRegex (v1): a member subscribes to its topic names and every topic the
regex matches in full (Python's ``re``; Kafka uses RE2J - the usual syntax is common to
both); "" clears it; an invalid one is INVALID_REGULAR_EXPRESSION. Kafka resolves regexes
asynchronously (the regex's topics join the assignment a little later); here they are
resolved in the heartbeat that changes the subscription.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ...protocol.error_codes import ErrorCode
from ..context import RequestContext
from ..modern import ConsumerGroup
from ..modern.consumer import by_topic, owned_partitions
from ..errors import RuleViolation
from ..reconcile import Heartbeat, HeartbeatResult, TopicPartition
from ..reconcile.validation import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, require_non_empty
from ._group_lookup import typed_group

if TYPE_CHECKING:
    from ..view import CoordinatorView

E = ErrorCode


class Kafka4(IntEnum):
    """Kafka 4.x error codes this API needs that ``ErrorCode`` does not list yet."""

    INVALID_REGULAR_EXPRESSION = 128

#: KIP-1082: from this version the member always sends the id it generated.
MEMBER_ID_REQUIRED_VERSION = 1


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    try:
        validate(b, ctx.api_version, coord.config.consumer_assignors)
        if b.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            _leave(coord, ctx, b)
        else:
            _heartbeat(coord, ctx, b)
    except RuleViolation as r:
        _answer_error(coord, ctx, r.error, r.message)


def validate(b: Any, api_version: int, assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    epoch: int = b.member_epoch
    if api_version >= MEMBER_ID_REQUIRED_VERSION or epoch > 0 or epoch in (
            LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        if not b.member_id.strip():
            raise RuleViolation(E.INVALID_REQUEST, "member-id-not-empty", "MemberId can't be empty.")
    require_non_empty(b.group_id, "group-id")
    require_non_empty(b.instance_id, "instance-id")
    require_non_empty(b.rack_id, "rack-id")
    regex = b.subscribed_topic_regex if api_version >= 1 else None
    if epoch == JOIN_EPOCH:
        if b.rebalance_timeout_ms == -1:
            raise RuleViolation(E.INVALID_REQUEST, "join-gives-rebalance-timeout",
                                "RebalanceTimeoutMs must be provided in first request.")
        if b.topic_partitions is None or len(b.topic_partitions) != 0:
            raise RuleViolation(E.INVALID_REQUEST, "join-owns-nothing",
                                "TopicPartitions must be empty when (re-)joining.")
        # Kafka 4.x accepts an empty list or an empty regex (a member subscribed to nothing).
        if b.subscribed_topic_names is None and regex is None:
            raise RuleViolation(E.INVALID_REQUEST, "join-gives-subscription",
                                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                                "when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if b.instance_id is None:
            raise RuleViolation(E.INVALID_REQUEST, "static-leave-gives-instance-id",
                                "InstanceId can't be null.")
    elif epoch < LEAVE_EPOCH:
        raise RuleViolation(E.INVALID_REQUEST, "member-epoch-valid", "MemberEpoch is invalid.")
    if b.server_assignor is not None and b.server_assignor not in assignors:
        raise RuleViolation(E.UNSUPPORTED_ASSIGNOR, "server-assignor-supported",
                            f"ServerAssignor {b.server_assignor} is not supported. "
                            f"Supported assignors: {', '.join(assignors)}.")
    if regex:
        try:
            re.compile(regex)
        except re.error as err:
            code: Any = Kafka4.INVALID_REGULAR_EXPRESSION
            raise RuleViolation(code, "topic-regex-valid",
                                f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                                f"{err}.") from None


def _heartbeat(coord: CoordinatorView, ctx: RequestContext, b: Any) -> None:
    group_id: str = b.group_id
    existing = coord.groups.get(group_id)
    if isinstance(existing, ConsumerGroup):
        group = existing
    elif b.member_epoch != JOIN_EPOCH:
        if existing is None:
            raise RuleViolation(E.GROUP_ID_NOT_FOUND, "group-exists",
                                f"Consumer group {group_id} not found.")
        raise RuleViolation(E.GROUP_ID_NOT_FOUND, "group-is-consumer",
                            f"Group {group_id} is not a consumer group.")
    elif existing is None or (existing.type == "classic" and existing.is_empty()):
        group = coord.new_consumer_group(group_id)
    else:
        raise RuleViolation(E.GROUP_ID_NOT_FOUND, "group-is-consumer",
                            f"Group {group_id} is not a consumer group.")

    member_id: str = b.member_id
    engine = group.engine
    limit = coord.config.consumer_max_size
    if len(engine.member_ids()) >= limit and (not member_id or not engine.has_member(member_id)):
        raise RuleViolation(E.GROUP_MAX_SIZE_REACHED, "group-not-full",
                            f"The consumer group has reached its maximum capacity of {limit} members.")
    if not member_id:
        member_id = coord.config.generated_member_id()  # v0 join without an id

    names = b.subscribed_topic_names
    regex = b.subscribed_topic_regex if ctx.api_version >= 1 else None
    subscription = None
    if names is not None or regex is not None:
        old_names, old_regex = group.subscription_of(member_id)
        asked = (frozenset(names) if names is not None else old_names,
                 (regex or None) if regex is not None else old_regex)
        subscription = group.resolve(*asked)
    hb: Heartbeat[TopicPartition] = Heartbeat(
        member_id=member_id, member_epoch=b.member_epoch, instance_id=b.instance_id,
        rebalance_timeout_ms=b.rebalance_timeout_ms, subscription=subscription,
        server_assignor=b.server_assignor, owned=owned_partitions(b.topic_partitions),
        client_id=ctx.client_id, client_host=ctx.kafka_client_host)
    result = engine.heartbeat(hb, coord.env.now_ms)
    if result.error:
        if group is existing:
            group.absorb(result.outcome)
        raise RuleViolation(result.error, result.rule or "", result.message or "")
    if group is not existing:
        coord.adopt(group)
    if b.rack_id is not None:
        group.racks[member_id] = b.rack_id
    if subscription is not None:
        group.subscriptions[member_id] = asked
    group.absorb(result.outcome)
    _answer(coord, ctx, result)


def _leave(coord: CoordinatorView, ctx: RequestContext, b: Any) -> None:
    group = typed_group(coord, b.group_id, ConsumerGroup, "consumer")
    member_id: str = b.member_id
    result = group.engine.heartbeat(Heartbeat(member_id=member_id, member_epoch=b.member_epoch,
                                              instance_id=b.instance_id), coord.env.now_ms)
    group.settle(result)
    if b.member_epoch == LEAVE_EPOCH:
        group.racks.pop(member_id, None)
        group.subscriptions.pop(member_id, None)
    mt = coord.registry["ConsumerGroupHeartbeatResponse"]
    coord.env.reply(ctx, mt.new(member_id=member_id, member_epoch=b.member_epoch))


def _answer(coord: CoordinatorView, ctx: RequestContext,
            result: HeartbeatResult[TopicPartition]) -> None:
    mt = coord.registry["ConsumerGroupHeartbeatResponse"]
    cls: Any = mt.cls
    assignment = None
    if result.assignment is not None:
        assignment = cls.Assignment(topic_partitions=[
            cls.TopicPartitions(topic_id=tid, partitions=ps)
            for tid, ps in by_topic(result.assignment.units)])
    coord.env.reply(ctx, mt.new(member_id=result.member_id, member_epoch=result.member_epoch,
                                heartbeat_interval_ms=result.heartbeat_interval_ms,
                                assignment=assignment))


def _answer_error(coord: CoordinatorView, ctx: RequestContext, error: Any,
                  message: str | None) -> None:
    mt = coord.registry["ConsumerGroupHeartbeatResponse"]
    coord.env.reply(ctx, mt.new(error_code=int(error), error_message=message or None))
