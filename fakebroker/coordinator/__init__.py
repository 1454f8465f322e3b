"""Sans-IO group coordinators: requests and virtual time in, replies and events out.

    from fakebroker.coordinator import GroupCoordinator, RequestContext
    coord = GroupCoordinator()                      # default registry and Kafka's defaults
    result = coord.handle(RequestContext(1, 11, 9, "client", "127.0.0.1"), join, now_ms=0)

See ``coordinator.py`` for the contract, ``classic/`` (and its README) for the classic
protocol, ``modern/`` (and its README) for the heartbeat-driven consumer and connect group
types on the reconciliation engine (``reconcile/``), and ``apis/`` for one module per API.
Connect's leader-side incremental cooperative assignor, which runs on workers, not here,
is ``fakebroker.connect.assignor``.
"""

from .classic import ClassicGroup, ClassicGroupState, ClassicMember, ProtocolMetadata
from .config import CoordinatorConfig, counting_suffixes, random_suffix
from .context import Reply, RequestContext
from .coordinator import GroupCoordinator
from .result import CoordinatorResult
from .errors import RuleViolation
from .events import (AssignmentComputeRequested, GenerationChanged, GroupCreated, GroupDeleted,
                     GroupEpochChanged, GroupEvent, LeaderChanged, MemberEpochChanged,
                     MemberIdIssued, MemberJoined, MemberRemoved, RebalanceStarted,
                     RemovalReason, StateChanged, TargetAssignmentChanged)
from .group import Group
from .modern import ConnectGroup, ConsumerGroup
from .offsets import CommittedOffset, OffsetStore
from .topics import FixedTopics, OpenTopics, TopicCatalog

__all__ = [
    "AssignmentComputeRequested", "ConnectGroup", "ConsumerGroup", "GroupDeleted",
    "GroupEpochChanged", "MemberEpochChanged", "TargetAssignmentChanged",
    "ClassicGroup", "ClassicGroupState", "ClassicMember", "CommittedOffset", "CoordinatorConfig",
    "CoordinatorResult",
    "FixedTopics", "GenerationChanged", "Group", "GroupCoordinator", "GroupCreated", "GroupEvent",
    "LeaderChanged", "MemberIdIssued", "MemberJoined", "MemberRemoved", "OffsetStore",
    "OpenTopics", "ProtocolMetadata", "RebalanceStarted", "RemovalReason", "Reply",
    "RequestContext", "RuleViolation", "StateChanged", "TopicCatalog", "counting_suffixes",
    "random_suffix",
]
