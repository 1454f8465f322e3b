"""The group a request names, found as Kafka finds it: a missing group, or one of another
type, is GROUP_ID_NOT_FOUND with Kafka's message for each."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from ...protocol.error_codes import ErrorCode
from ..errors import RuleViolation

if TYPE_CHECKING:
    from ..view import CoordinatorView

G = TypeVar("G")


def not_found_message(group_id: str, group: object | None, kind: str) -> str:
    """Kafka's message for no group of type ``kind`` (``classic``, ``consumer``, ``connect``)."""
    return (f"Group {group_id} not found." if group is None
            else f"Group {group_id} is not a {kind} group.")


def typed_group(coord: CoordinatorView, group_id: str, cls: type[G], kind: str) -> G:
    """The group of that id if it is a ``cls``; else GROUP_ID_NOT_FOUND under rule
    ``group-exists`` (none) or ``group-is-<kind>`` (another type)."""
    group = coord.groups.get(group_id)
    if not isinstance(group, cls):
        rule = "group-exists" if group is None else f"group-is-{kind}"
        raise RuleViolation(ErrorCode.GROUP_ID_NOT_FOUND, rule, not_found_message(group_id, group, kind))
    return group
