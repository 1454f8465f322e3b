"""A member silent for longer than its session timeout is fenced: its next Heartbeat,
SyncGroup or OffsetCommit is not accepted."""

from __future__ import annotations

from .expr import col, fmt, greatest, lit, when
from .row_rule import Prior, RowRule

NAME = "session-timeout-fenced"
REQUIREMENT = "CLS-SESS-01"
CHECKED = ("Heartbeat", "SyncGroup", "OffsetCommit")
# On a real clock the coordinator's expiry timer and the capture's timestamps differ by
# scheduling noise; on a virtual clock they agree exactly.
REAL_SLACK_MS, REAL_SLACK_RATIO = 1000.0, 0.1

API = col("api")
# The member's session timeout: its latest accepted JoinGroup's, -1 once it left.
TIMEOUT = Prior("session_timeout", "last", by=("m",), of=when(
    (API == "JoinGroup") & (col("error_code") == 0) & (col("session_timeout_ms") != 0), col("session_timeout_ms"))
    .when(API == "LeaveGroup", -1))
# The last time the member was heard or answered.
ACTIVE = Prior("session_active", "max", greatest(col("req_ms"), col("resp_ms")), by=("m",))

_t = TIMEOUT.value
_slack = when(col("req_vtime_ms").is_not_null(), 0.0).otherwise(greatest(lit(REAL_SLACK_MS), REAL_SLACK_RATIO * _t))
_gap = col("req_ms") - ACTIVE.value

RULE = RowRule(
    NAME, (TIMEOUT, ACTIVE),
    broken=(API.isin(*CHECKED) & col("m").is_not_null() & (col("m") != "") & (_t > 0)
            & (col("error_code") == 0) & (_gap > _t + _slack)),
    requirement=lit(REQUIREMENT), generation=col("generation"), members=(col("m"),),
    detail=fmt("%s from %s accepted after %.0f ms of silence, past its %d ms session timeout",
               API, col("m"), _gap, _t))
check = RULE.check
