"""What the invariants checked by Spark's own window functions share: the wire order of a
group's exchanges, each row's member, and the violation row. Both windows partition by
(source, group id) first, so the member window reuses the group shuffle (a sort, no new
exchange of data), and every check adds its window columns to one frame: one shuffle and
two sorts for all of them, not one each."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from ..tables import VIOLATION

GROUP = ["source", "group_id"]


def prepared(ex: DataFrame) -> DataFrame:
    """Exchanges of groups with ``at`` (where it happened: the answer's line/frame, else the
    request's), ``req_ms``/``resp_ms`` (virtual clock first) and ``m`` (the member a row
    speaks for: JoinGroup's answer names it, every other request carries it)."""
    return (ex.where(F.col("group_id").isNotNull())
            .withColumn("at", F.coalesce("resp_ref", "ref"))
            .withColumn("req_ms", F.coalesce(F.col("req_vtime_ms").cast("double"), F.col("req_time") * 1000.0))
            .withColumn("resp_ms", F.coalesce(F.col("resp_vtime_ms").cast("double"), F.col("resp_time") * 1000.0))
            .withColumn("m", F.when(F.col("api") == "JoinGroup", F.col("resp_member_id"))
                        .otherwise(F.col("member_id"))))


def before(*extra: str) -> WindowSpec:
    """The rows of the group (and ``extra`` keys) strictly before this one, in wire order."""
    return (Window.partitionBy(*GROUP, *extra).orderBy("at", "ref")
            .rowsBetween(Window.unboundedPreceding, -1))


def joined() -> Column:
    """A JoinGroup the coordinator answered with a generation."""
    return (F.col("api") == "JoinGroup") & (F.col("error_code") == 0) & F.col("resp_generation").isNotNull()


def violation(bad: Column, invariant: str, requirement: Column, generation: Column, members: Column,
              detail: Column) -> Column:
    """The violation row (``group.violation``'s shape, as a struct) of a row where ``bad``
    holds, else null: every check's column is computed in one pass over the windows."""
    return F.when(bad, F.struct(
        F.lit(invariant).alias("invariant"), requirement.alias("requirement"), "source", "source_kind", F.col("at").alias("ref"),
        F.when(F.col("source_kind") == "pcap", "frame").otherwise("line").alias("ref_kind"),
        "group_id", generation.cast("int").alias("generation"),
        F.array_sort(F.filter(members, lambda x: x.isNotNull() & (x != ""))).alias("members"),
        F.lit(None).cast("string").alias("unit"), detail.alias("detail")))


def found(step: DataFrame, columns: list[Column]) -> DataFrame:
    """The violation rows of ``columns`` (``violation`` each) over ``step``, one scan."""
    return (step.select(F.explode(F.filter(F.array(*columns), lambda v: v.isNotNull())).alias("v"))
            .select("v.*").select(*VIOLATION.fieldNames()))
