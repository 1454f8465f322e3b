"""A row rule's two forms (``row_rule.RowRule``: the Python ``check`` and the Spark window
columns) agree, violation for violation and word for word, on generated groups: seeded
(derandomized) hypothesis rows with nulls in every field, members' first rows, equal
timestamps and gaps that end in half a millisecond (Java rounds those up, Python evenly)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Weighted to what the rules read: a few members joining and heartbeating, some of it refused.
APIS = (None, "JoinGroup", "JoinGroup", "SyncGroup", "Heartbeat", "Heartbeat", "OffsetCommit", "LeaveGroup",
        "OffsetFetch")
MEMBERS = (None, "", "w1", "w1", "w2", "w2")


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Null about one time in four."""
    return st.one_of(st.none(), values, values, values)


@st.composite
def group_rows(draw: st.DrawFn, source: str, group: str) -> list[dict[str, Any]]:
    """One group's exchanges; refs unique (the wire order is total), answers at or after their
    requests; clocks that mostly go forward, in steps of 0 (equal timestamps) and up, on the
    wall clock in 62.5 ms units (exact: gaps of 62.5 ms, 187.5 ms, ... round half up in Java)."""
    virtual = draw(st.booleans())
    rows, ref, wall, vtime = [], 0, 0.0, 0
    for _ in range(draw(st.integers(1, 16))):
        ref += draw(st.integers(1, 3))
        wall += draw(st.integers(-4, 40)) * 64 / 1024
        vtime += draw(st.integers(-1, 8)) * 250
        member = draw(st.sampled_from(MEMBERS))
        rows.append({
            "source": source, "source_kind": draw(st.sampled_from(("transcript", "pcap"))), "group_id": group,
            "ref": ref, "resp_ref": draw(_maybe(st.integers(ref, ref + 4))),
            "req_time": draw(_maybe(st.just(wall))), "resp_time": draw(_maybe(st.just(wall + 0.0625))),
            "req_vtime_ms": draw(_maybe(st.just(vtime))) if virtual else None,
            "resp_vtime_ms": draw(_maybe(st.just(vtime + draw(st.sampled_from((0, 250)))))) if virtual else None,
            "api": draw(st.sampled_from(APIS)), "error_code": draw(st.sampled_from((None, 0, 0, 0, 0, 22, 25))),
            "member_id": member,
            "resp_member_id": draw(st.one_of(st.just(member), st.just(member), st.sampled_from(MEMBERS))),
            "generation": draw(st.sampled_from((None, -1, 0, 1, 2, 3))),
            "resp_generation": draw(st.sampled_from((None, 0, 1, 2, 3))),
            "session_timeout_ms": draw(st.sampled_from((None, 0, 50, 100, 100, 1000))),
        })
    return rows


@st.composite
def corpora(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    return [draw(group_rows(f"s{i % 3}.jsonl", f"g{i}")) for i in range(draw(st.integers(20, 60)))]


def _key(v: dict[str, Any]) -> tuple:
    return (v["invariant"], v["requirement"], v["source"], v["source_kind"], v["ref"], v["ref_kind"],
            v["group_id"], v["generation"], tuple(v["members"]), v["unit"], v["detail"])


def test_python_and_spark_forms_agree(spark):
    from conformance.pipeline.audit import ROW_CHECKS, row_violations
    from conformance.pipeline.audit.group import Group, exchanges
    from conformance.pipeline.tables import EXCHANGE
    names = EXCHANGE.fieldNames()
    found: dict[tuple[str, bool], int] = {(m.NAME, virtual): 0 for m in ROW_CHECKS for virtual in (False, True)}

    @settings(max_examples=12, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(corpora())
    def agree(groups: list[list[dict[str, Any]]]) -> None:
        python_side = []
        for rows in groups:
            for m in ROW_CHECKS:
                vs = [_key(v) for v in m.RULE.check(Group(exchanges(rows)))]
                found[m.NAME, any(r["req_vtime_ms"] is not None for r in rows)] += len(vs)
                python_side += vs
        python_side.sort(key=repr)  # nulls among the fields: no order of their own
        df = spark.createDataFrame([tuple(r.get(n) for n in names) for rows in groups for r in rows], EXCHANGE)
        spark_side = sorted((_key(v.asDict(recursive=True)) for v in row_violations(df).collect()), key=repr)
        assert spark_side == python_side

    agree()
    # The agreement is not that of two empty lists: every rule fired, on both clocks.
    assert all(found.values()), found


@pytest.mark.parametrize("template,values", [
    ("%.0f", [62.5]), ("%.0f", [187.5]), ("%.0f", [-2.5]), ("%.0f", [0.49999999999999994]),
    ("%.2f", [1.005]), ("%.2f", [0.125]), ("%.0f ms", [None]), ("%.2f|%f", [None, None]), ("%s from %s", ["Heartbeat", None]),
    ("%d of %d%%", [3, None]),
])
def test_fmt_is_javas_format_string(spark, template, values):
    """``fmt``'s Python form prints what Spark's ``format_string`` prints (Java's Formatter)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from conformance.pipeline.audit.expr import java_format
    types = {float: DoubleType(), int: LongType(), str: StringType(), type(None): DoubleType()}
    schema = StructType([StructField(f"v{i}", types[type(v)]) for i, v in enumerate(values)])
    row = spark.createDataFrame([tuple(values)], schema).select(
        F.format_string(template, *schema.fieldNames()).alias("s")).first()
    assert java_format(template, values) == row.s


def test_prior_columns_are_unique():
    """The rules share one frame: no prior's column shadows another's, a derived or an exchange column."""
    from conformance.pipeline.audit import ROW_CHECKS
    from conformance.pipeline.audit.row_rule import DERIVED
    from conformance.pipeline.tables import EXCHANGE
    names = [p.name for m in ROW_CHECKS for p in m.RULE.priors]
    assert len(set(names)) == len(names)
    assert not set(names) & (set(DERIVED) | set(EXCHANGE.fieldNames()))
