"""No unit (connector or task) is owned by two members of one group at one generation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .rounds import Group, violation

REQUIREMENT = "CONN-INV-01"
NAME = "double-ownership"


def check(g: Group) -> Iterator[dict[str, Any]]:
    for r in g.judged_rounds:
        owner: dict[str, str] = {}
        for m in sorted(r.syncs, key=lambda m: r.syncs[m].ex.at):
            for unit in sorted(r.after.get(m, ())):
                other = owner.setdefault(unit, m)
                if other != m:
                    yield violation(NAME, r.syncs[m].ex,
                                    f"{unit} owned by {other} and {m} at generation {r.generation}",
                                    generation=r.generation, members=(other, m), unit=unit)
