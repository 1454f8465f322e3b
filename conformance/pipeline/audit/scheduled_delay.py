"""KIP-415's scheduled delay: work lost with a departed worker is not reassigned before the
delay the leader announced expires, and is reassigned by the first rebalance after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import Group, Round, violation

NAME = "scheduled-delay-honoured"


def _owned(r: Round) -> set[str]:
    return set().union(*r.after.values()) if r.after else set()


def check(g: Group) -> Iterator[dict[str, Any]]:
    rs = g.rounds
    for i, r in enumerate(rs):
        delayed = [s for s in r.syncs.values() if s.incremental and s.delay_ms > 0]
        if i == 0 or not delayed:
            continue
        prev = rs[i - 1]
        departed = set(prev.after) - r.members if r.members else set()
        lost = set().union(*(prev.after[m] for m in departed)) - _owned(r) if departed else set()
        first = min(delayed, key=lambda s: s.ex.at)
        if not lost or first.ex.resp_ms is None:
            continue
        deadline = first.ex.resp_ms + first.delay_ms
        for later in rs[i + 1:]:
            if later.last_sync_ms is not None and later.last_sync_ms < deadline:
                for m, s in sorted(later.syncs.items()):
                    for unit in sorted(s.assigned & lost):
                        yield violation(NAME, s.ex, f"lost {unit} reassigned to {m} at generation "
                                        f"{later.generation}, {deadline - later.last_sync_ms:.0f} ms "
                                        f"before the {first.delay_ms} ms delay announced at generation "
                                        f"{r.generation} expired", generation=later.generation,
                                        members=(m,), unit=unit)
            elif later.first_join_ms is not None and later.first_join_ms >= deadline and later.syncs:
                for unit in sorted(lost - _owned(later)):
                    s = min(later.syncs.values(), key=lambda s: s.ex.at)
                    yield violation(NAME, s.ex, f"lost {unit} still unassigned at generation "
                                    f"{later.generation}, after the {first.delay_ms} ms delay "
                                    f"announced at generation {r.generation} expired",
                                    generation=later.generation, members=departed, unit=unit)
                break
