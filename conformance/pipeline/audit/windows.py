"""What the row rules' Spark forms share (``row_rule``): the window over a group's rows
before this one, and the violation row. Every window partitions by (source, group id)
first, so a member window reuses the group shuffle (a sort, no new exchange of data), and
every rule adds its window columns to one frame: one shuffle and two sorts for all of
them, not one each."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from ..tables import VIOLATION

GROUP = ["source", "group_id"]


def before(*extra: str) -> WindowSpec:
    """The rows of the group (and ``extra`` keys) strictly before this one, in wire order."""
    return (Window.partitionBy(*GROUP, *extra).orderBy("at", "ref")
            .rowsBetween(Window.unboundedPreceding, -1))


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
