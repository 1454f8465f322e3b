"""Shared by the ConnectGroupPrepareAssignment and ConnectGroupInstallAssignment handlers:
their common Request Validation and their group lookup (Request Handling, step 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.error_codes import ErrorCode
from ..modern import ConnectGroup
from ..errors import RuleViolation
from ..reconcile.validation import require_member_id_present, require_non_empty

if TYPE_CHECKING:
    from ..view import CoordinatorView

E = ErrorCode


def validate(b: Any) -> None:
    """INVALID_REQUEST: GroupId and MemberId non-empty, MemberEpoch >= 0 (draft order)."""
    require_non_empty(b.group_id, "group-id")
    require_member_id_present(b.member_id)
    if b.member_epoch < 0:
        raise RuleViolation(E.INVALID_REQUEST, "member-epoch-not-negative", "MemberEpoch must be >= 0")


def connect_group(coord: CoordinatorView, group_id: str) -> ConnectGroup:
    """Step 1: GROUP_ID_NOT_FOUND when there is no connect group of that id."""
    group = coord.groups.get(group_id)
    if group is None:
        raise RuleViolation(E.GROUP_ID_NOT_FOUND, "group-exists", f"Group {group_id} not found.")
    if not isinstance(group, ConnectGroup):
        raise RuleViolation(E.GROUP_ID_NOT_FOUND, "group-is-connect",
                            f"Group {group_id} is not a connect group.")
    return group


def error_response(coord: CoordinatorView, name: str, r: RuleViolation) -> Any:
    return coord.registry[name].new(error_code=int(r.error), error_message=r.message or None)
