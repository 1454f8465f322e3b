"""ConnectGroupInstallAssignment (v0; the draft).

Request Validation (INVALID_REQUEST: GroupId, MemberId non-empty, MemberEpoch >= 0; the
draft's "Partitions and ConnectorsAndTasks are set" rule is dropped, ERRATA 11), then
Request Handling: the group exists (GROUP_ID_NOT_FOUND), the member exists
(UNKNOWN_MEMBER_ID), at its current epoch (FENCED_MEMBER_EPOCH), and is the selected
member (UNKNOWN_MEMBER_ID); then assignment validation against the membership at the
install's GroupEpoch (INVALID_ASSIGNMENT, ERRATA 20): that epoch was handed out, is newer
than the current target and still known; every member listed existed then, and is listed
once; no connector or task is assigned twice; no task id is negative. A valid assignment
becomes the target at GroupEpoch; a non-zero Error keeps every member's connectors and
tasks and carries the error to each of them (ERRATA 25). A refused install changes
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...protocol import Struct
from ..context import RequestContext
from ..errors import RuleViolation
from ..reconcile.connect import install_targets
from ._connect_common import connect_group, error_response

if TYPE_CHECKING:
    from ..view import CoordinatorView

RESPONSE = "ConnectGroupInstallAssignmentResponse"


def handle(coord: CoordinatorView, ctx: RequestContext, body: Struct,
           prepared: object | None = None) -> None:
    b: Any = body
    try:
        group = connect_group(coord, b)
        engine = group.engine
        engine.require_installer(b.member_id, b.member_epoch)
        targets = install_targets(b)
        installed = engine.install_assignment(b.member_id, b.member_epoch, b.group_epoch, targets,
                                              coord.env.now_ms, error=b.error)
        group.settle(installed)
    except RuleViolation as r:
        coord.env.reply(ctx, error_response(coord, RESPONSE, r))
        return
    coord.env.reply(ctx, coord.registry[RESPONSE].new())
