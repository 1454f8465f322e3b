"""KIP-415's scheduled delay: work lost with a departed worker is not reassigned before the
delay the leader announced expires, and is reassigned by the first rebalance after it. A
leader that announces no delay (``scheduled.rebalance.max.delay.ms`` 0, or the delay over)
and revokes nothing starts no later round, so it gives the lost work out in that round
(Connect before 3.5.2/3.6.1/3.7.0 left it unassigned with ScheduledDelay 0: KAFKA-15693)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .rounds import Group, Round, violation

REQUIREMENT = "CONN-INV-03"
NAME = "scheduled-delay-honoured"


def _owned(r: Round) -> set[str]:
    return set().union(*r.after.values()) if r.after else set()


def _left_unassigned(g: Group, r: Round, lost: set[str], departed: set[str]) -> Iterator[dict[str, Any]]:
    syncs = list(r.syncs.values())
    if (not lost or not g.judged(r) or not syncs or not all(s.incremental for s in syncs)
            or any(s.revoked for s in syncs) or not r.members <= set(r.syncs)):
        return
    s = min(syncs, key=lambda s: s.ex.at)
    for unit in sorted(lost):
        yield violation(NAME, s.ex, f"lost {unit} left unassigned at generation {r.generation} with no "
                        f"ScheduledDelay and nothing revoked (no later round will give it out)",
                        generation=r.generation, members=departed, unit=unit)


def check(g: Group) -> Iterator[dict[str, Any]]:
    rs = g.rounds
    for i, r in enumerate(rs):
        if i == 0:
            continue
        delayed = [s for s in r.syncs.values() if s.incremental and s.delay_ms > 0]
        prev = rs[i - 1]
        departed = set(prev.after) - r.members if r.members else set()
        lost = set().union(*(prev.after[m] for m in departed)) - _owned(r) if departed else set()
        if not delayed:
            yield from _left_unassigned(g, r, lost, departed)
            continue
        first = min(delayed, key=lambda s: s.ex.at)
        if not lost or first.ex.resp_ms is None:
            continue
        deadline = first.ex.resp_ms + first.delay_ms
        for later in rs[i + 1:]:
            if later.last_sync_ms is not None and later.last_sync_ms < deadline:
                if not g.judged(later):
                    continue
                for m, s in sorted(later.syncs.items()):
                    for unit in sorted(s.assigned & lost):
                        yield violation(NAME, s.ex, f"lost {unit} reassigned to {m} at generation "
                                        f"{later.generation}, {deadline - later.last_sync_ms:.0f} ms "
                                        f"before the {first.delay_ms} ms delay announced at generation "
                                        f"{r.generation} expired", generation=later.generation,
                                        members=(m,), unit=unit)
            elif later.first_join_ms is not None and later.first_join_ms >= deadline and later.syncs:
                if not g.judged(later):
                    break
                for unit in sorted(lost - _owned(later)):
                    s = min(later.syncs.values(), key=lambda s: s.ex.at)
                    yield violation(NAME, s.ex, f"lost {unit} still unassigned at generation "
                                    f"{later.generation}, after the {first.delay_ms} ms delay "
                                    f"announced at generation {r.generation} expired",
                                    generation=later.generation, members=departed, unit=unit)
                break
