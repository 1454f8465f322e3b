"""A SyncGroup, Heartbeat or OffsetCommit from a known member carrying a generation older
than the group's current one is refused (ILLEGAL_GENERATION; or UNKNOWN_MEMBER_ID if the
member was removed, or a coordinator-level error), never accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from . import windows as W
from .group import Group, violation

NAME = "stale-generation-refused"
# Each API's own requirement: a generation other than the group's is refused with ILLEGAL_GENERATION.
BY_API = {"SyncGroup": "CLS-SYNC-01", "Heartbeat": "CLS-HB-01", "OffsetCommit": "CLS-COMMIT-07"}
CHECKED = tuple(BY_API)
REQUIREMENTS = tuple(BY_API.values())


def check(g: Group) -> Iterator[dict[str, Any]]:
    current: int | None = None
    since = 0  # where the current generation's first answer was sent
    members: set[str] = set()
    for e in g.exs:
        if e.api == "JoinGroup" and e.error_code == 0 and e.resp_generation is not None:
            if current is None or e.resp_generation > current:
                current, since = e.resp_generation, e.at
            members.add(e.resp_member_id)
        elif (e.api in CHECKED and current is not None and e.generation is not None
              and 0 <= e.generation < current and e.member_id in members
              and e.error_code == 0 and e.ref > since):
            yield violation(NAME, e, f"{e.api} with generation {e.generation} accepted (error 0) "
                            f"while the group is at generation {current}; expected "
                            "ILLEGAL_GENERATION (22)", generation=e.generation, members=(e.member_id,),
                            requirement=BY_API[e.api])


def spark_check(ex: DataFrame) -> tuple[DataFrame, Column]:
    """The same rule over ``windows.prepared`` exchanges, as window expressions: ``ex`` with
    the window columns it reads, and each row's violation (``windows.violation``)."""
    joins = F.when(W.joined(), F.col("resp_generation"))
    step = ex.withColumn("_prev", F.max(joins).over(W.before()))
    raised = W.joined() & (F.col("_prev").isNull() | (F.col("resp_generation") > F.col("_prev")))
    step = (step.withColumn("_raised", raised)
            .withColumn("_since", F.max(F.when(F.col("_raised"), F.col("at"))).over(W.before()))
            .withColumn("_member", F.max(W.joined().cast("int")).over(W.before("m"))))
    current = F.col("_prev")  # the highest generation answered before this row
    bad = (F.col("api").isin(*CHECKED) & current.isNotNull() & F.col("generation").isNotNull()
           & (F.col("generation") >= 0) & (F.col("generation") < current)
           & (F.col("_member") == 1) & (F.col("error_code") == 0) & (F.col("ref") > F.col("_since")))
    return step, W.violation(bad, NAME, F.create_map(*[F.lit(x) for kv in BY_API.items() for x in kv])[F.col("api")],
                             F.col("generation"), F.array("member_id"), F.format_string(
        "%s with generation %d accepted (error 0) while the group is at generation %d; expected "
        "ILLEGAL_GENERATION (22)", "api", "generation", current))
