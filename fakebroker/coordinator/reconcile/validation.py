"""The engine's validation rules, one function per rule, each named for it.

A ``require_*`` function returns None when its rule holds and raises ``RuleViolation`` with the
error Kafka (or the draft) answers when it does not. Callers apply them in Kafka's order,
so the first broken rule decides the error, and always before any state changes.

Request-shape rules (``require_*_shape``) are for the API handlers, which call them before
handing a request to the engine; the engine applies the state-dependent ones itself.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ...protocol.error_codes import ErrorCode
from ..errors import DraftErrorCode, RuleViolation
from .member import CurrentAssignment
from .units import U, sorted_units

E = ErrorCode

#: Member epochs with a meaning of their own in a heartbeat.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


# --- request shape (handlers) ------------------------------------------------------

def require_non_empty(value: str | None, what: str) -> None:
    """Kafka's ``throwIfEmptyString``: a given string may not be blank (INVALID_REQUEST)."""
    if value is not None and not value.strip():
        raise RuleViolation(E.INVALID_REQUEST, f"{what}-not-empty", f"{what} can't be empty")


def require_member_id_present(member_id: str | None) -> None:
    """Kafka 4.x (KIP-1082) and the draft (ERRATA 13): the member chooses its id and sends
    it in every heartbeat."""
    if not member_id or not member_id.strip():
        raise RuleViolation(E.INVALID_REQUEST, "member-id-not-empty", "MemberId can't be empty")


def require_consumer_heartbeat_shape(*, group_id: str, member_id: str, member_epoch: int,
                                     instance_id: str | None, rebalance_timeout_ms: int,
                                     subscription: Collection[str] | None,
                                     owned: Collection[object] | None,
                                     server_assignor: str | None,
                                     known_assignors: Collection[str]) -> None:
    """ConsumerGroupHeartbeat, as Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``:
    non-blank ids; a join (epoch 0) gives a rebalance timeout, an empty owned list and a
    non-empty subscription; a static leave (-2) names its instance; other negative epochs
    are invalid; a server assignor must be one the broker has (UNSUPPORTED_ASSIGNOR)."""
    require_non_empty(group_id, "group-id")
    require_non_empty(instance_id, "instance-id")
    require_member_id_present(member_id)
    if member_epoch == JOIN_EPOCH:
        if rebalance_timeout_ms == -1:
            raise RuleViolation(E.INVALID_REQUEST, "join-gives-rebalance-timeout",
                                "RebalanceTimeoutMs must be provided in first request")
        if owned is None or len(owned) != 0:
            raise RuleViolation(E.INVALID_REQUEST, "join-owns-nothing",
                                "TopicPartitions must be empty when (re-)joining")
        if not subscription:
            raise RuleViolation(E.INVALID_REQUEST, "join-gives-subscription",
                                "SubscribedTopicNames must be set in first request")
    elif member_epoch == STATIC_LEAVE_EPOCH:
        if instance_id is None:
            raise RuleViolation(E.INVALID_REQUEST, "static-leave-gives-instance-id",
                                "InstanceId can't be null")
    elif member_epoch < LEAVE_EPOCH:
        raise RuleViolation(E.INVALID_REQUEST, "member-epoch-valid", "MemberEpoch is invalid")
    if server_assignor is not None and server_assignor not in known_assignors:
        raise RuleViolation(E.UNSUPPORTED_ASSIGNOR, "server-assignor-supported",
                            f"ServerAssignor {server_assignor} is not supported; supported: "
                            + ", ".join(sorted(known_assignors)))


# --- group and member (engine) ----------------------------------------------------

def require_group_exists_or_joining(group_exists: bool, member_epoch: int,
                                    missing: ErrorCode = E.GROUP_ID_NOT_FOUND) -> None:
    """Only a join (epoch 0) creates a group. Kafka answers GROUP_ID_NOT_FOUND; the draft's
    ConnectGroupHeartbeat lists no such error, so a connect handler passes
    UNKNOWN_MEMBER_ID (the member cannot exist in a group that does not)."""
    if not group_exists and member_epoch != JOIN_EPOCH:
        raise RuleViolation(missing, "group-exists", "the group does not exist")


def require_group_not_full(members: Collection[str], member_id: str, max_size: int) -> None:
    """group.consumer.max.size: a new member may not join a full group."""
    if len(members) >= max_size and member_id not in members:
        raise RuleViolation(E.GROUP_MAX_SIZE_REACHED, "group-not-full",
                            f"the group has reached its maximum size of {max_size}")


def require_member_known(members: Collection[str], member_id: str) -> None:
    """A heartbeat with a non-zero epoch (and a leave) must name a member of the group."""
    if member_id not in members:
        raise RuleViolation(E.UNKNOWN_MEMBER_ID, "member-known",
                            f"member {member_id} is not a member of the group")


def require_member_epoch_current(current: CurrentAssignment[U], received_epoch: int,
                                 owned: frozenset[U] | None, *,
                                 rejoin_at_zero: bool) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``, FENCED_MEMBER_EPOCH unless:
    - the epoch is the member's epoch; or
    - it is the member's *previous* epoch and the member reports owning a subset of what
      it was given (the response that moved it on was lost: accepted, not fenced); or
    - it is 0 and ``rejoin_at_zero`` (KAFKA-19233: a fenced member rejoins under its id
      with epoch 0; Kafka before that fix fenced such a rejoin).
    """
    if received_epoch == current.member_epoch:
        return
    if received_epoch == JOIN_EPOCH and rejoin_at_zero:
        return
    if received_epoch > current.member_epoch:
        raise RuleViolation(E.FENCED_MEMBER_EPOCH, "member-epoch-not-ahead",
                            f"member epoch {received_epoch} is greater than the coordinator's "
                            f"{current.member_epoch}")
    if received_epoch != current.previous_member_epoch or owned is None \
            or not owned <= current.assigned:
        raise RuleViolation(E.FENCED_MEMBER_EPOCH, "member-epoch-not-behind",
                            f"member epoch {received_epoch} is smaller than the coordinator's "
                            f"{current.member_epoch}")


def require_member_epoch_exact(current: CurrentAssignment[U], received_epoch: int) -> None:
    """PrepareAssignment / InstallAssignment (draft): the epoch is the member's epoch."""
    if received_epoch != current.member_epoch:
        raise RuleViolation(E.FENCED_MEMBER_EPOCH, "member-epoch-matches",
                            f"member epoch {received_epoch}, coordinator has {current.member_epoch}")


def require_selected_member(selected: str | None, member_id: str) -> None:
    """PrepareAssignment / InstallAssignment (draft, step 4): only the member chosen to
    compute the assignment may; the draft answers UNKNOWN_MEMBER_ID otherwise."""
    if selected != member_id:
        raise RuleViolation(E.UNKNOWN_MEMBER_ID, "member-selected-to-assign",
                            f"member {member_id} is not the member selected to compute the assignment")


# --- installed assignments (engine) -----------------------------------------------

def require_install_epoch_usable(install_epoch: int, group_epoch: int, assignment_epoch: int,
                                 known_epochs: Collection[int]) -> None:
    """An installed assignment is for a group epoch the coordinator handed out (not a
    future one), newer than the current target (never move the target back), whose
    membership the coordinator still knows."""
    if install_epoch > group_epoch:
        raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "install-epoch-not-ahead",
                            f"group epoch {install_epoch} is ahead of the group's {group_epoch}")
    if install_epoch <= assignment_epoch:
        raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "install-epoch-newer-than-target",
                            f"group epoch {install_epoch} is not newer than the target's "
                            f"{assignment_epoch}")
    if install_epoch not in known_epochs:
        raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "install-epoch-known",
                            f"the membership at group epoch {install_epoch} is no longer known")


def require_assigned_members_exist(assignment: Mapping[str, object],
                                   members_at_epoch: Collection[str], epoch: int) -> None:
    """Assignment validation, "all workers exist" (ERRATA 20): as of the install's epoch."""
    unknown = sorted(set(assignment) - set(members_at_epoch))
    if unknown:
        raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "assignment-members-exist",
                            f"not members at group epoch {epoch}: {', '.join(unknown)}")


def require_units_assigned_once(assignment: Mapping[str, Collection[U]]) -> None:
    """Assignment validation, "a connector/task is assigned only once"."""
    if sum(map(len, assignment.values())) == len(frozenset().union(*assignment.values())):
        return  # no unit twice (the union, in C, is the cheap test; the loop names one)
    seen: dict[U, str] = {}
    for member_id in sorted(assignment):
        for unit in sorted_units(assignment[member_id]):
            if unit in seen:
                raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "unit-assigned-once",
                                    f"{unit} is assigned to {seen[unit]} and {member_id}")
            seen[unit] = member_id


__all__ = [
    "JOIN_EPOCH", "LEAVE_EPOCH", "STATIC_LEAVE_EPOCH", "require_non_empty",
    "require_member_id_present", "require_consumer_heartbeat_shape",
    "require_group_exists_or_joining", "require_group_not_full", "require_member_known",
    "require_member_epoch_current", "require_member_epoch_exact", "require_selected_member",
    "require_install_epoch_usable", "require_assigned_members_exist",
    "require_units_assigned_once",
]
