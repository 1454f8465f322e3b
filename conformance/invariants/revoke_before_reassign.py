"""KIP-415: a unit that moves between workers is revoked from the old owner in one round
and assigned to the new owner in a later round, never in the same one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .rounds import Group, violation

REQUIREMENT = "CONN-INV-02"
NAME = "revoke-before-reassign"


def check(g: Group) -> Iterator[dict[str, Any]]:
    for r in g.judged_rounds:
        for m, s in sorted(r.syncs.items()):
            if not s.incremental:
                continue  # eager: every member gives up everything when it rejoins
            for unit in sorted(s.assigned):
                for other in sorted(r.members - {m}):
                    if unit in r.before.get(other, ()):
                        how = ("revoked in the same round" if unit in (r.syncs[other].revoked
                               if other in r.syncs else ()) else "never revoked")
                        yield violation(NAME, s.ex, f"{unit} assigned to {m} at generation "
                                        f"{r.generation} while {other} still owned it ({how})",
                                        generation=r.generation, members=(other, m), unit=unit)
