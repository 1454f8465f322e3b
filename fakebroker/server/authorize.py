"""Kafka's authorization checks of the APIs a group coordinator serves (KafkaApis order):
the request refused whole when its group is not authorized, entries refused one by one
where Kafka answers per group or per topic, and lists filtered to what the principal may
describe.

- READ on the group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
  ConsumerGroupHeartbeat and the draft's ConnectGroup* APIs -> GROUP_AUTHORIZATION_FAILED.
- DESCRIBE on the group: FindCoordinator (per key from v4), OffsetFetch (per group from
  v8), DescribeGroups and ConsumerGroupDescribe (per group); ListGroups lists only those
  groups unless the principal may describe the cluster.
- Topics: Metadata omits topics the principal may not describe (all-topics request) or
  answers them TOPIC_AUTHORIZATION_FAILED (named); OffsetCommit answers partitions of topics
  without READ TOPIC_AUTHORIZATION_FAILED and does not commit them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..protocol import Registry, Struct
from ..protocol.error_codes import ErrorCode
from ..intercept.error_response import error_response
from .acl import Acls, Operation, ResourceType
from .config import BrokerConfig

GROUP_AUTH = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
TOPIC_AUTH = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
_READ_GROUP = frozenset({"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                         "ConsumerGroupHeartbeat", "ConnectGroupHeartbeat",
                         "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment"})
_DESCRIBE_PER_GROUP = frozenset({"DescribeGroups", "ConsumerGroupDescribe"})
GROUP_KEY_TYPE = 0  # FindCoordinator's key type for groups (1 is transactions)

# After routing: edit the response in place (per-entry refusals, filtering).
After = Callable[[Struct], None]


@dataclass(frozen=True)
class Verdict:
    refusal: Struct | None = None  # answer this instead of routing the request
    request: Struct | None = None  # route this instead (entries taken out)
    after: After | None = None


PASS = Verdict()


@dataclass
class Authorizer:
    acls: Acls
    registry: Registry
    config: BrokerConfig

    def check(self, principal: str, api_key: int, version: int, body: Any) -> Verdict:
        name = self.registry.api_name(api_key)

        def may(op: Operation, resource: ResourceType, what: str) -> bool:
            return self.acls.allows(principal, op, resource, what)

        def refuse(code: int) -> Verdict:
            return Verdict(refusal=error_response(self.registry, api_key, version, body, code))

        if name in _READ_GROUP and not may(Operation.READ, ResourceType.GROUP, body.group_id):
            return refuse(GROUP_AUTH)
        if name == "OffsetCommit":
            return self._offset_commit(api_key, body, version,
                                       lambda t: may(Operation.READ, ResourceType.TOPIC, t))
        if name == "OffsetFetch" and version < 8:
            ok = may(Operation.DESCRIBE, ResourceType.GROUP, body.group_id)
            return PASS if ok else refuse(GROUP_AUTH)
        described = lambda g: may(Operation.DESCRIBE, ResourceType.GROUP, g)  # noqa: E731
        if name == "FindCoordinator":
            return self._find_coordinator(body, version, refuse, described)
        if name in _DESCRIBE_PER_GROUP or (name == "OffsetFetch" and version >= 8):
            return Verdict(after=lambda r: _refuse_groups(r, described))
        if name == "ListGroups" and not may(Operation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"):
            return Verdict(after=lambda r: setattr(r, "groups", [g for g in r.groups if described(g.group_id)]))
        if name == "Metadata":
            return Verdict(after=lambda r: _filter_topics(
                r, body.topics is not None, lambda t: may(Operation.DESCRIBE, ResourceType.TOPIC, t)))
        return PASS

    def _find_coordinator(self, body: Any, version: int, refuse: Callable[[int], Verdict],
                          described: Callable[[str], bool]) -> Verdict:
        if getattr(body, "key_type", GROUP_KEY_TYPE) != GROUP_KEY_TYPE:
            return PASS
        if version < 4:
            return PASS if described(body.key) else refuse(GROUP_AUTH)

        def per_key(r: Any) -> None:
            for c in r.coordinators:
                if not described(c.key):
                    c.node_id, c.host, c.port, c.error_code = -1, "", -1, GROUP_AUTH
                    c.error_message = None
        return Verdict(after=per_key)

    def _offset_commit(self, api_key: int, body: Any, version: int,
                       readable: Callable[[str], bool]) -> Verdict:
        def denied(t: Any) -> bool:
            if version < 10:
                name = str(t.name)
            else:  # an unknown id is not refused here: the coordinator answers UNKNOWN_TOPIC_ID
                known = self.config.topic_by_id(t.topic_id)
                name = known.name if known is not None else ""
            return bool(name) and not readable(name)
        kept: list[Any] = []
        refused_topics: list[Any] = []
        for t in body.topics:
            (refused_topics if denied(t) else kept).append(t)
        if not refused_topics:
            return PASS
        # Copies through JSON: the request as received stays whole for the recorder.
        whole = body.to_json()
        allowed = type(body).from_json({**whole, "Topics": [t.to_json() for t in kept]})
        refused = error_response(self.registry, api_key, version, type(body).from_json(
            {**whole, "Topics": [t.to_json() for t in refused_topics]}), TOPIC_AUTH)

        def merge(r: Any) -> None:
            r.topics = list(r.topics) + list(refused.topics)  # type: ignore[attr-defined]
        return Verdict(request=allowed, after=merge)


def _refuse_groups(response: Any, described: Callable[[str], bool]) -> None:
    for i, g in enumerate(response.groups):
        if not described(g.group_id):
            response.groups[i] = type(g)(group_id=g.group_id, error_code=GROUP_AUTH)


def _filter_topics(response: Any, named: bool, described: Callable[[str], bool]) -> None:
    kept = []
    for t in response.topics:
        if described(t.name):
            kept.append(t)
        elif named:  # asked for by name: say it is not authorized, and nothing else
            kept.append(type(t)(name=t.name, error_code=TOPIC_AUTH))
    response.topics = kept
