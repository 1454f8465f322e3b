"""A SyncGroup, Heartbeat or OffsetCommit from a known member carrying a generation older
than the group's current one is refused (ILLEGAL_GENERATION; or UNKNOWN_MEMBER_ID if the
member was removed, or a coordinator-level error), never accepted."""

from __future__ import annotations

from .expr import col, fmt, lookup, when
from .row_rule import Prior, RowRule

NAME = "stale-generation-refused"
# Each API's own requirement: a generation other than the group's is refused with ILLEGAL_GENERATION.
BY_API = {"SyncGroup": "CLS-SYNC-01", "Heartbeat": "CLS-HB-01", "OffsetCommit": "CLS-COMMIT-07"}
CHECKED = tuple(BY_API)
REQUIREMENTS = tuple(BY_API.values())

# A JoinGroup the coordinator answered with a generation.
JOINED = (col("api") == "JoinGroup") & (col("error_code") == 0) & col("resp_generation").is_not_null()
# The group's current generation: the highest answered so far.
CURRENT = Prior("stale_current", "max", when(JOINED, col("resp_generation")))
# Where the current generation's first answer was sent.
SINCE = Prior("stale_since", "max", when(
    JOINED & (CURRENT.value.is_null() | (col("resp_generation") > CURRENT.value)), col("at")))
# Whether the member joined the group (1) before.
MEMBER = Prior("stale_member", "max", when(JOINED, 1), by=("m",))

_gen = col("generation")

RULE = RowRule(
    NAME, (CURRENT, SINCE, MEMBER),
    broken=(col("api").isin(*CHECKED) & CURRENT.value.is_not_null() & _gen.is_not_null() & (_gen >= 0)
            & (_gen < CURRENT.value) & MEMBER.value.is_not_null() & (col("error_code") == 0)
            & (col("ref") > SINCE.value)),
    requirement=lookup(BY_API, col("api")), generation=_gen, members=(col("member_id"),),
    detail=fmt("%s with generation %d accepted (error 0) while the group is at generation %d; expected "
               "ILLEGAL_GENERATION (22)", col("api"), _gen, CURRENT.value))
check = RULE.check
