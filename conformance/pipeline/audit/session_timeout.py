"""A member silent for longer than its session timeout is fenced: its next Heartbeat,
SyncGroup or OffsetCommit is not accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from . import windows as W
from .group import Group, violation

NAME = "session-timeout-fenced"
REQUIREMENT = "CLS-SESS-01"
CHECKED = ("Heartbeat", "SyncGroup", "OffsetCommit")
# On a real clock the coordinator's expiry timer and the capture's timestamps differ by
# scheduling noise; on a virtual clock they agree exactly.
REAL_SLACK_MS, REAL_SLACK_RATIO = 1000.0, 0.1


def check(g: Group) -> Iterator[dict[str, Any]]:
    timeout: dict[str, int] = {}
    active: dict[str, float] = {}  # member -> last time it was heard or answered
    for e in g.exs:
        m = e.resp_member_id if e.api == "JoinGroup" else e.member_id
        if not m:
            continue
        if e.api == "JoinGroup" and e.error_code == 0 and e.session_timeout_ms:
            timeout[m] = e.session_timeout_ms
        elif e.api == "LeaveGroup":
            timeout.pop(m, None)
        elif e.api in CHECKED and m in timeout and m in active and e.req_ms is not None \
                and e.error_code == 0:
            t = timeout[m]
            slack = 0.0 if e.virtual else max(REAL_SLACK_MS, REAL_SLACK_RATIO * t)
            gap = e.req_ms - active[m]
            if gap > t + slack:
                yield violation(NAME, e, f"{e.api} from {m} accepted after {gap:.0f} ms of silence, "
                                f"past its {t} ms session timeout", generation=e.generation,
                                members=(m,))
        stamps = [x for x in (e.req_ms, e.resp_ms) if x is not None]
        if stamps:
            active[m] = max([active.get(m, 0.0), *stamps])


def spark_check(ex: DataFrame) -> tuple[DataFrame, Column]:
    """The same rule over ``windows.prepared`` exchanges, as window expressions: per member,
    the latest JoinGroup's timeout (-1 after a LeaveGroup) and the last time it was heard;
    ``ex`` with those columns, and each row's violation (``windows.violation``)."""
    api = F.col("api")
    marker = (F.when((api == "JoinGroup") & (F.col("error_code") == 0) & (F.col("session_timeout_ms") != 0),
                     F.col("session_timeout_ms"))
              .when(api == "LeaveGroup", F.lit(-1)))
    w = W.before("m")
    step = (ex.withColumn("_t", F.last(marker, ignorenulls=True).over(w))
            .withColumn("_active", F.max(F.greatest("req_ms", "resp_ms")).over(w)))
    t = F.col("_t")
    slack = F.when(F.col("req_vtime_ms").isNotNull(), F.lit(0.0)).otherwise(
        F.greatest(F.lit(REAL_SLACK_MS), REAL_SLACK_RATIO * t))
    gap = F.col("req_ms") - F.col("_active")
    bad = (F.col("m").isNotNull() & (F.col("m") != "") & api.isin(*CHECKED) & (t > 0)
           & (F.col("error_code") == 0) & (gap > t + slack))
    return step, W.violation(bad, NAME, F.lit(REQUIREMENT), F.col("generation"), F.array("m"), F.format_string(
        "%s from %s accepted after %.0f ms of silence, past its %d ms session timeout", "api", "m", gap, t))
