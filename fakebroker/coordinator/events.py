"""Explicit events a coordinator emits while it works (``CoordinatorResult.events``):
one vocabulary for the classic groups and the reconciliation engine (whose outcomes carry
these same types, naming the engine's group).

They are for logs, transcripts and tests; nothing in the coordinator reads them back.
Every event names its group and the virtual time it happened at.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RemovalReason(str, Enum):
    """Why a member (or a pending member id) left the group: one vocabulary for the classic
    groups and the reconciliation engine's (consumer and connect) groups."""

    SESSION_TIMEOUT = "session-timeout"          # no heartbeat within session.timeout.ms
    NEW_MEMBER_JOIN_TIMEOUT = "new-member-join-timeout"  # first join never completed
    REBALANCE_TIMEOUT = "rebalance-timeout"      # did not rejoin in time; or a revocation not acknowledged in time
    SYNC_TIMEOUT = "sync-timeout"                # no SyncGroup within the rebalance timeout
    LEAVE = "leave"                              # LeaveGroup; a heartbeat with member epoch -1
    FENCED = "fenced"                            # a static member's id replaced by a new one (its restarted instance)
    GROUP_MAX_SIZE = "group-max-size"            # rejected rejoin of a full group
    FENCED_EPOCH = "fenced-member-epoch"         # connect groups: a stale member epoch

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class GroupEvent:
    group_id: str
    at_ms: int


@dataclass(frozen=True)
class GroupCreated(GroupEvent):
    group_type: str


@dataclass(frozen=True)
class MemberIdIssued(GroupEvent):
    """A v4+ JoinGroup without a member id got MEMBER_ID_REQUIRED and this pending id."""

    member_id: str


@dataclass(frozen=True)
class MemberJoined(GroupEvent):
    member_id: str
    group_instance_id: str | None
    replaces: str | None = None  # the fenced member id, when a static member restarts


@dataclass(frozen=True)
class MemberRemoved(GroupEvent):
    member_id: str
    group_instance_id: str | None
    reason: RemovalReason
    pending: bool = False  # the id was only pending (MEMBER_ID_REQUIRED), never a member
    detail: str = ""       # the client's reason, when it gave one (LeaveGroup v5+)


@dataclass(frozen=True)
class RebalanceStarted(GroupEvent):
    generation_id: int  # the generation that is ending
    reason: str


@dataclass(frozen=True)
class GenerationChanged(GroupEvent):
    generation_id: int
    protocol_name: str | None


@dataclass(frozen=True)
class LeaderChanged(GroupEvent):
    leader_id: str | None
    previous_leader_id: str | None


@dataclass(frozen=True)
class StateChanged(GroupEvent):
    previous: str
    state: str


# --- heartbeat-driven groups (consumer, connect) -------------------------------------

@dataclass(frozen=True)
class GroupDeleted(GroupEvent):
    """An empty group was replaced by a group of another type using its id (Kafka deletes
    an empty classic group when a consumer member joins, and vice versa)."""

    group_type: str
    replaced_by: str


@dataclass(frozen=True)
class GroupEpochChanged(GroupEvent):
    """The group epoch went up: a new target assignment is due."""

    epoch: int
    reason: str


@dataclass(frozen=True)
class TargetAssignmentChanged(GroupEvent):
    """A new target assignment: computed by a server-side assignor ("assignor:<name>") or
    installed by a member ("install:<member id>")."""

    assignment_epoch: int
    source: str


@dataclass(frozen=True)
class MemberEpochChanged(GroupEvent):
    """A member's reconciliation moved: its state (Kafka's MemberState names: STABLE,
    UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN) or its member epoch."""

    member_id: str
    from_state: str
    from_epoch: int
    to_state: str
    to_epoch: int


@dataclass(frozen=True)
class AssignmentComputeRequested(GroupEvent):
    """Connect groups: the member was answered COMPUTE_ASSIGNMENT for ``group_epoch``."""

    member_id: str
    group_epoch: int
