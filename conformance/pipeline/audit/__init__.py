"""The audit: every invariant (one module each) over every group's exchanges.

Two engines, each rule written once: the invariants that read every exchange (heartbeats
included) are row rules (``row_rule.RowRule``, a declarative form whose Python ``check`` and
Spark window expressions both come from it); the ones that follow a group's rounds
(ownership carried from generation to generation) run in Python (``check``) over the
group's JoinGroup, SyncGroup and draft heartbeat rows only. ``audit_group`` runs every
``check`` in plain Python: the single-process baseline, and the oracle the tests hold the
Spark side to. Shuffles: one by (source, group id) for all the windows, one for the rounds."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..ingest.frames import in_groups
from ..tables import VIOLATION
from ...invariants import balanced, double_ownership, revocation_ends, revoke_before_reassign, scheduled_delay
from . import (assignor_selection, draft_revocation, generations_monotonic, row_rule, session_timeout,
               stale_generation, windows)
from .group import Group, exchanges

ROW_CHECKS = (stale_generation, session_timeout)
# The classic rounds' rules are the worker suite's invariants too (``conformance.invariants``);
# the draft's worker-side epoch rule (C848-INV-01) is not the audit's: the golden transcripts'
# scripted members send invalid epochs on purpose, to see the coordinator refuse them.
ROUND_CHECKS = (double_ownership, generations_monotonic, revoke_before_reassign, scheduled_delay, balanced,
                revocation_ends, draft_revocation, assignor_selection)
CHECKS: dict[str, Callable[[Group], Iterator[dict[str, Any]]]] = {
    m.NAME: m.check for m in (*ROUND_CHECKS, *ROW_CHECKS)}
# Each rule's catalogue id, or the ids a rule names per violation (``REQUIREMENTS``: by the
# API, or by which side of the rule broke): the suites' ids, one language for both.
DEFAULT_REQUIREMENT: dict[str, str | None] = {m.NAME: getattr(m, "REQUIREMENT", None)
                                              for m in (*ROUND_CHECKS, *ROW_CHECKS)}
AUDITED = frozenset(r for m in (*ROUND_CHECKS, *ROW_CHECKS)
                    for r in getattr(m, "REQUIREMENTS", None) or (m.REQUIREMENT,))


ROUND_APIS = ("JoinGroup", "SyncGroup", "ConnectGroupHeartbeat")
# What the round checks read (``group.Ex`` attributes): the rest stays in the JVM.
ROUND_COLUMNS = ("source", "source_kind", "group_id", "ref", "resp_ref", "req_time", "resp_time",
                 "req_vtime_ms", "resp_vtime_ms", "api", "error_code", "member_id", "generation",
                 "resp_generation", "resp_member_id", "leader", "protocol_name", "assignment_version",
                 "assigned", "revoked", "scheduled_delay_ms", "owned", "member_epoch",
                 "resp_member_epoch", "assignors", "plan", "meta_version")


def audit_group(records: list[dict[str, Any]], checks: Any = None) -> list[dict[str, Any]]:
    """Violations in one group's exchanges, plain Python (every check unless ``checks``)."""
    g = Group(exchanges(records))
    return [{**v, "requirement": v["requirement"] or DEFAULT_REQUIREMENT[v["invariant"]]}
            for check in (checks or CHECKS.values()) for v in check(g)]


def _audit_rounds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return audit_group(rows, [m.check for m in ROUND_CHECKS])


def audit(exchanges_df: DataFrame) -> DataFrame:
    """Violations of every group in the exchanges."""
    groups = exchanges_df.where(F.col("group_id").isNotNull())
    rounds = in_groups(groups.where(F.col("api").isin(*ROUND_APIS)).select(*ROUND_COLUMNS),
                       ["source", "group_id"], "ref", _audit_rounds, VIOLATION)
    return rounds.unionByName(row_violations(groups))


def row_violations(exchanges_df: DataFrame) -> DataFrame:
    """Violations of the row rules (``ROW_CHECKS``), each rule's Spark form over one frame."""
    step, columns = row_rule.prepared(exchanges_df), []
    for m in ROW_CHECKS:
        step, column = m.RULE.spark(step)
        columns.append(column)
    return windows.found(step, columns)
