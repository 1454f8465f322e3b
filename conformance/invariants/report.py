"""The invariants' findings: each worker case records what every invariant found in its
exchanges (``findings``, kept in the case's record); a run turns them into one result per
invariant and sub-protocol (``conformance.harness.invariant_results``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import BY_REQUIREMENT, group, rounds_judged, violations

KEEP = 3  # violations kept per invariant and case: the first is the evidence, a few show the pattern


def findings(rows: list[dict[str, Any]], leaders: Iterable[str]) -> dict[str, dict[str, Any]]:
    """What each invariant found in one case's exchange rows, rounds led by ``leaders`` only."""
    g = group(rows, leaders)
    judged = rounds_judged(g)
    return {rid: {"rounds": judged, "violations": found[:KEEP], "more": max(0, len(found) - KEEP)}
            for rid, found in violations(g).items()}


def is_invariant(requirement_id: str) -> bool:
    return requirement_id in BY_REQUIREMENT
