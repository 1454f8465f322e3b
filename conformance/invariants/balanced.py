"""KIP-415 (Motivation: imbalance is tolerated only for a while; the worked scenarios of
"Deferred Resolution of Imbalance"): once a round settles, its assignment is balanced, under
every protocol (the eager one balances at once). The KIP's own examples count the work as a
whole (its "worker leaves" scenario ends with connectors 2 and 0, work 3 and 2), Apache
Connect counts connectors and tasks each on its own (from 2.8: 2 and 0 never, 1 connector
and 1 task beside nothing may be): an assignment balanced either way holds, one balanced
neither way (work and one of the kinds each spread wider than one) breaks the rule.

A round has settled when its leader ends the rebalance there: every member got its
assignment, none revokes anything, none announces a ScheduledDelay (KIP-415 tolerates
imbalance while a delay holds lost work back, and a leader may defer a revocation behind
one) and none carries an error (CONFIG_MISMATCH: the members rejoin). Lost work given out in
such a round is therefore spread over the members that can take it, or the counts differ by
more than one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .rounds import Group, Round, violation

REQUIREMENT = "CONN-INV-04"
NAME = "balanced-when-settled"


def kinds(units: set[str]) -> tuple[set[str], set[str]]:
    """(connectors, tasks) of ``units`` in the exchanges' names (``conn``, ``conn-3``, see
    ``fakebroker.exchange.fields.unit_names``): a name ending in a dash and a number is a
    task (a connector named so would be counted as a task: the names keep no more)."""
    tasks = {u for u in units if u.rpartition("-")[0] and u.rpartition("-")[2].isdigit()}
    return units - tasks, tasks


def settled(r: Round) -> bool:
    syncs = r.syncs.values()
    return (bool(r.members) and r.members <= set(r.syncs)
            and not any(s.revoked or s.delay_ms > 0 or (s.ex.assignment_error or 0) != 0 for s in syncs))


def spreads(work: Mapping[str, set[str]]) -> dict[str, dict[str, int]] | None:
    """Each member's count of connectors, of tasks and of both (``work``: member -> unit
    names) when the work is balanced neither way, else None."""
    counts = {m: kinds(set(units)) for m, units in sorted(work.items())}
    spread = {what: {m: len(c[i]) for m, c in counts.items()} for i, what in enumerate(("connectors", "tasks"))}
    spread["work"] = {m: len(c[0]) + len(c[1]) for m, c in counts.items()}
    wide = [what for what, n in spread.items() if n and max(n.values()) - min(n.values()) > 1]
    return spread if "work" in wide and len(wide) > 1 else None


def check(g: Group) -> Iterator[dict[str, Any]]:
    for r in g.judged_rounds:
        if not settled(r):
            continue
        spread = spreads({m: r.after.get(m, set()) for m in r.members})
        if spread is not None:
            n = spread["work"]
            hi, lo = max(n, key=lambda m: (n[m], m)), min(n, key=lambda m: (n[m], m))
            shown = "; ".join(f"{what} " + ", ".join(f"{m}={k}" for m, k in c.items()) for what, c in spread.items())
            yield violation(NAME, r.syncs[hi].ex, f"settled at generation {r.generation} unbalanced: "
                            f"{n[hi]} units on {hi}, {n[lo]} on {lo} ({shown})",
                            generation=r.generation, members=(hi, lo))
