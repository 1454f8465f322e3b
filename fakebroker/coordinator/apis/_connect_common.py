"""Shared by the ConnectGroupPrepareAssignment and ConnectGroupInstallAssignment handlers:
their common Request Validation and group lookup (Request Handling, step 1), and their
error answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol.error_codes import ErrorCode
from ..errors import RuleViolation
from ..modern import ConnectGroup
from ..reconcile.validation import require_member_id_present, require_non_empty
from ._group_lookup import typed_group

if TYPE_CHECKING:
    from ..view import CoordinatorView

E = ErrorCode


def validate(b: Any) -> None:
    """INVALID_REQUEST: GroupId and MemberId non-empty, MemberEpoch >= 0 (draft order)."""
    require_non_empty(b.group_id, "group-id")
    require_member_id_present(b.member_id)
    if b.member_epoch < 0:
        raise RuleViolation(E.INVALID_REQUEST, "member-epoch-not-negative", "MemberEpoch must be >= 0")


def connect_group(coord: CoordinatorView, b: Any) -> ConnectGroup:
    """The connect group a valid request names (GROUP_ID_NOT_FOUND when there is none)."""
    validate(b)
    return typed_group(coord, b.group_id, ConnectGroup, "connect")


def error_response(coord: CoordinatorView, name: str, r: RuleViolation) -> Any:
    return coord.registry[name].new(error_code=int(r.error), error_message=r.message or None)
