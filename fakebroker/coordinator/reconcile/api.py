"""What goes into and comes out of the reconciliation engine's calls (``engine.GroupEngine``):
its configuration, one heartbeat, and the results a handler answers from, each carrying
the records written and the events that happened (``Outcome``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic

from ...protocol.error_codes import ErrorCode
from ..errors import Code
from ..events import GroupEvent
from .member import AssignmentPayload, ClientAssignor, CurrentAssignment, MemberMetadata, MemberTarget
from .records import Record
from .units import U, sorted_units
from .validation import JOIN_EPOCH

NONE = ErrorCode.NONE


@dataclass(frozen=True)
class EngineConfig:
    group_id: str
    session_timeout_ms: int = 45_000      # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000    # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1             # group.consumer.max.size
    #: KAFKA-19233: a known member may rejoin with epoch 0 (False: Kafka before the fix).
    rejoin_at_zero: bool = True
    #: The draft's ConnectGroupHeartbeat, Request Handling step 3: a heartbeat answered
    #: FENCED_MEMBER_EPOCH also removes the member from the group (Kafka's consumer groups
    #: keep it: False).
    fence_removes_member: bool = False
    #: KIP-848 static membership (consumer groups): a member with an instance id may leave
    #: temporarily (epoch -2) and rejoin under a new member id in its place; other uses of
    #: its instance id are UNRELEASED_INSTANCE_ID / FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID.
    #: False: the instance id is only recorded and epoch -2 is refused.
    static_membership: bool = False

    @classmethod
    def connect(cls, group_id: str, **overrides: int | bool) -> EngineConfig:
        """Connect's defaults: session.timeout.ms 10 s, heartbeat.interval.ms 3 s."""
        values: dict[str, int | bool] = {"session_timeout_ms": 10_000,
                                         "heartbeat_interval_ms": 3_000}
        values.update(overrides)
        return cls(group_id, **values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Heartbeat(Generic[U]):
    """One heartbeat, reduced to what the engine uses. ``None`` means "unchanged since the
    last heartbeat" (the APIs' null); the request context gives ``client_id`` and
    ``client_host``. Member epoch 0 joins (or rejoins), -1 leaves."""

    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscription: frozenset[str] | None = None
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignor, ...] | None = None
    owned: frozenset[U] | None = None
    client_id: str = ""
    client_host: str = ""

    def is_full(self) -> bool:
        """A full request (a join, or a resend after an error) gets the assignment back
        even when nothing changed (Kafka: epoch 0, or every non-optional field set)."""
        if self.member_epoch == JOIN_EPOCH:
            return True
        return (self.rebalance_timeout_ms != -1 and self.owned is not None
                and (self.subscription is not None or self.client_assignors is not None))

    def merged_into(self, previous: MemberMetadata) -> MemberMetadata:
        return MemberMetadata(
            instance_id=self.instance_id if self.instance_id is not None else previous.instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=(self.rebalance_timeout_ms if self.rebalance_timeout_ms != -1
                                  else previous.rebalance_timeout_ms),
            subscription=(self.subscription if self.subscription is not None
                          else previous.subscription),
            server_assignor=(self.server_assignor if self.server_assignor is not None
                             else previous.server_assignor),
            client_assignors=(self.client_assignors if self.client_assignors is not None
                              else previous.client_assignors))


@dataclass(frozen=True)
class AssignmentView(Generic[U]):
    """What a response's ``Assignment`` carries: the member's complete set, never a delta."""

    units: frozenset[U]
    payload: AssignmentPayload

    def sorted(self) -> tuple[U, ...]:
        return sorted_units(self.units)


@dataclass(frozen=True)
class Outcome:
    """Records written and events that happened during one call (timers included)."""

    records: tuple[Record, ...] = ()
    events: tuple[GroupEvent, ...] = ()

    def __add__(self, other: Outcome) -> Outcome:
        if not (other.records or other.events):
            return self
        if not (self.records or self.events):
            return other  # most calls: no timer fired before the request
        return Outcome(self.records + other.records, self.events + other.events)


@dataclass(frozen=True)
class HeartbeatResult(Generic[U]):
    error: Code = NONE
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: AssignmentView[U] | None = None
    #: Connect groups: this member must compute the next target (COMPUTE_ASSIGNMENT).
    compute_assignment: bool = False
    rule: str | None = None
    message: str | None = None
    outcome: Outcome = field(default_factory=Outcome)


@dataclass(frozen=True)
class PreparedMember(Generic[U]):
    member_id: str
    member_epoch: int
    instance_id: str | None
    client_assignors: tuple[ClientAssignor, ...]
    target: MemberTarget[U]


@dataclass(frozen=True)
class PrepareResult(Generic[U]):
    error: Code = NONE
    group_epoch: int = 0
    members: tuple[PreparedMember[U], ...] = ()
    rule: str | None = None
    message: str | None = None
    outcome: Outcome = field(default_factory=Outcome)


@dataclass(frozen=True)
class InstallResult:
    error: Code = NONE
    rule: str | None = None
    message: str | None = None
    outcome: Outcome = field(default_factory=Outcome)


@dataclass(frozen=True)
class GroupSnapshot(Generic[U]):
    """The durable state, in a form that compares by value (``rebuild`` must give an
    equal one)."""

    group_epoch: int
    assignment_epoch: int
    catalog_epoch: int
    catalog: tuple[tuple[str, tuple[U, ...]], ...]
    members: tuple[tuple[str, MemberMetadata, int], ...]
    target: tuple[tuple[str, MemberTarget[U]], ...]
    current: tuple[tuple[str, CurrentAssignment[U]], ...]


__all__ = [
    "EngineConfig", "Heartbeat", "AssignmentView", "Outcome", "HeartbeatResult",
    "PreparedMember", "PrepareResult", "InstallResult", "GroupSnapshot",
]
