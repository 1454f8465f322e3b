"""The group invariants: rules that hold in every round, whatever a case is about. One
definition each (a module with ``REQUIREMENT``, its catalogue id; ``NAME``, the audit's name
for it; ``check(Group)``, the violations), read by both the Spark audit of recorded
exchanges (``conformance.pipeline.audit``) and the worker suite, which checks every case's
exchanges with them and reports each under its own id (``conformance.invariants.report``)."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from . import balanced, double_ownership, draft_epoch, revocation_ends, revoke_before_reassign, scheduled_delay
from .rounds import Group, in_wire_order

INVARIANTS: tuple[ModuleType, ...] = (double_ownership, revoke_before_reassign, scheduled_delay, balanced,
                                      revocation_ends, draft_epoch)
BY_REQUIREMENT: dict[str, ModuleType] = {m.REQUIREMENT: m for m in INVARIANTS}


def group(rows: Iterable[dict[str, Any]], leaders: Iterable[str] | None = None) -> Group:
    """One group's exchange rows (clean Python values, the exchanges table's columns) in wire
    order; ``leaders``: judge only what these members did (None: everyone)."""
    return Group(in_wire_order(rows), frozenset(leaders) if leaders is not None else None)


def violations(g: Group) -> dict[str, list[dict[str, Any]]]:
    """Every invariant's violations in the group, by requirement id."""
    return {m.REQUIREMENT: list(m.check(g)) for m in INVARIANTS}


def rounds_judged(g: Group) -> int:
    """How many rounds (classic generations a judged member led, and the draft's heartbeats a
    judged member sent) the invariants had to judge: evidence that they saw any."""
    return (sum(1 for r in g.rounds if r.syncs and g.judged(r))
            + sum(1 for e in g.exs if e.api == "ConnectGroupHeartbeat" and g.judges_member(e.member_id)))
