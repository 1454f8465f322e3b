"""The classic protocol's validation rules, one function per rule, each named for it.

A ``require_*`` function returns None when the rule holds and raises ``RuleViolation``
(with the error code Apache Kafka answers) when it does not. The order in which the API
handlers call them is Kafka's order, so the first broken rule decides the error. The
catalogue requirement a rule enforces, per API, is ``coordinator.requirements.ENFORCES``
(``RuleViolation.requirements(api)``): ``group-id-not-empty`` is CLS-JOIN-06 for JoinGroup.
"""

from __future__ import annotations

from typing import Protocol

from ...protocol.error_codes import ErrorCode
from ..config import CoordinatorConfig
from ..errors import RuleViolation
from .member import ClassicMember
from .state import ClassicGroupState

S = ClassicGroupState


class GroupView(Protocol):
    """What the rules read of a classic group (``classic.group.ClassicGroup``, which calls
    ``require_offset_commit_allowed``: the rules name only this much of it)."""

    state: ClassicGroupState
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    members: dict[str, ClassicMember]

    def supports_protocols(self, protocol_type: str, protocol_names: frozenset[str]) -> bool: ...

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None: ...

    def has_member(self, member_id: str) -> bool: ...

    def member(self, member_id: str) -> ClassicMember: ...

    def num_awaiting_join(self) -> int: ...


def require_group_id_not_empty(group_id: str | None) -> None:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup: an empty group id is INVALID_GROUP_ID."""
    if not group_id:
        raise RuleViolation(ErrorCode.INVALID_GROUP_ID, "group-id-not-empty")


def require_session_timeout_in_bounds(session_timeout_ms: int, config: CoordinatorConfig) -> None:
    """JoinGroup: group.min.session.timeout.ms <= session timeout <= group.max.session.timeout.ms."""
    if not config.min_session_timeout_ms <= session_timeout_ms <= config.max_session_timeout_ms:
        raise RuleViolation(
            ErrorCode.INVALID_SESSION_TIMEOUT, "session-timeout-in-bounds",
            f"{session_timeout_ms} ms is outside [{config.min_session_timeout_ms}, "
            f"{config.max_session_timeout_ms}]")


def require_sync_protocol_fields_present(api_version: int, protocol_type: str | None,
                                         protocol_name: str | None) -> None:
    """SyncGroup v5+: ProtocolType and ProtocolName are mandatory."""
    if api_version >= 5 and (protocol_type is None or protocol_name is None):
        raise RuleViolation(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "sync-protocol-fields-present")


def require_group_not_dead(group: GroupView) -> None:
    """A Dead group is being unloaded: the member must find the coordinator again."""
    if group.state is S.DEAD:
        raise RuleViolation(ErrorCode.COORDINATOR_NOT_AVAILABLE, "group-not-dead")


def require_protocols_supported(group: GroupView, protocol_type: str,
                                protocol_names: frozenset[str]) -> None:
    """JoinGroup: same protocol type as the group, and one protocol every member supports
    (an Empty group only needs a non-empty type and at least one protocol)."""
    if not group.supports_protocols(protocol_type, protocol_names):
        raise RuleViolation(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocols-supported",
                            f"type {protocol_type!r}, protocols {sorted(protocol_names)}")


def require_member_identity(group: GroupView, member_id: str,
                            group_instance_id: str | None) -> None:
    """The member id is known, and a static member's instance id maps to it
    (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID)."""
    group.validate_member(member_id, group_instance_id)


def require_generation_matches(group: GroupView, generation_id: int) -> None:
    """SyncGroup, Heartbeat: the request's generation is the group's."""
    if generation_id != group.generation_id:
        raise RuleViolation(ErrorCode.ILLEGAL_GENERATION, "generation-matches",
                            f"request has {generation_id}, group has {group.generation_id}")


def require_protocol_consistent(group: GroupView, protocol_type: str | None,
                                protocol_name: str | None) -> None:
    """SyncGroup v5+: a given ProtocolType / ProtocolName must equal the group's."""
    if _inconsistent(protocol_type, group.protocol_type) or \
            _inconsistent(protocol_name, group.protocol_name):
        raise RuleViolation(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol-consistent",
                            f"request ({protocol_type!r}, {protocol_name!r}), group "
                            f"({group.protocol_type!r}, {group.protocol_name!r})")


def _inconsistent(requested: str | None, actual: str | None) -> bool:
    return requested is not None and actual is not None and requested != actual


def require_not_rebalancing(group: GroupView) -> None:
    """SyncGroup: during PreparingRebalance the member must rejoin."""
    if group.state is S.PREPARING_REBALANCE:
        raise RuleViolation(ErrorCode.REBALANCE_IN_PROGRESS, "not-preparing-rebalance")


def group_accepts_joining_member(group: GroupView, member_id: str, max_size: int) -> bool:
    """group.max.size: new members are refused once the group is full. While preparing a
    rebalance the count is of members already rejoined, so the last to rejoin are refused."""
    if group.state in (S.EMPTY, S.DEAD):
        return True
    if group.state is S.PREPARING_REBALANCE:
        if group.has_member(member_id) and group.member(member_id).is_awaiting_join:
            return True
        return group.num_awaiting_join() < max_size
    return group.has_member(member_id) or len(group.members) < max_size


def require_offset_commit_allowed(group: GroupView, member_id: str,
                                  group_instance_id: str | None, generation_id: int) -> None:
    """OffsetCommit to a classic group (Kafka's ClassicGroup.validateOffsetCommit):
    - Dead: COORDINATOR_NOT_AVAILABLE;
    - generation < 0 on an Empty group: a simple (admin / manual) commit, accepted;
    - with a member id, instance id or generation: the member must be known and the
      generation current;
    - otherwise only an Empty group accepts it (UNKNOWN_MEMBER_ID);
    - CompletingRebalance: REBALANCE_IN_PROGRESS."""
    if group.state is S.DEAD:
        raise RuleViolation(ErrorCode.COORDINATOR_NOT_AVAILABLE, "group-not-dead")
    if generation_id < 0 and group.state is S.EMPTY:
        return
    if generation_id >= 0 or member_id != "" or group_instance_id is not None:
        require_member_identity(group, member_id, group_instance_id)
        require_generation_matches(group, generation_id)
    elif group.state is not S.EMPTY:
        raise RuleViolation(ErrorCode.UNKNOWN_MEMBER_ID, "simple-commit-needs-empty-group")
    if group.state is S.COMPLETING_REBALANCE:
        raise RuleViolation(ErrorCode.REBALANCE_IN_PROGRESS, "commit-not-completing-rebalance")


def offset_metadata_within_limit(metadata: str | None, max_bytes: int) -> bool:
    """offset.metadata.max.bytes (Kafka compares the string's length in UTF-16 units)."""
    if metadata is None:
        return True
    return len(metadata.encode("utf-16-le")) // 2 <= max_bytes
