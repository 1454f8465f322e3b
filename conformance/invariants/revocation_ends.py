"""KIP-415 (Proposed Changes): a revocation is followed by one more round in which the
revoked work is given out, and the group settles; a leader that revokes in round after
round while nobody joins or leaves never lets it settle (endless revocation)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .rounds import Group, violation

REQUIREMENT = "CONN-INV-05"
NAME = "revocation-ends"
# Rounds of one membership that may each revoke: the one a join or leave starts, and the
# follow-up of a leader that defers part of its revocation (Connect from 3.4.0 spaces such
# rounds by a delay); a third in a row with nobody joining or leaving is a loop.
MAX_REVOKING = 2


def check(g: Group) -> Iterator[dict[str, Any]]:
    streak: list[int] = []  # generations of the current run of revoking rounds, one membership
    members: set[str] | None = None
    for r in g.rounds:
        if not r.syncs:
            continue
        revoking = any(s.incremental and s.revoked for s in r.syncs.values())
        if r.members != members or not revoking:
            streak = []
        members = set(r.members)
        if not revoking or not g.judged(r):
            continue
        streak.append(r.generation)
        if len(streak) == MAX_REVOKING + 1:
            s = min((s for s in r.syncs.values() if s.revoked), key=lambda s: s.ex.at)
            yield violation(NAME, s.ex, f"revocations in {len(streak)} rounds in a row with the same "
                            f"members (generations {', '.join(map(str, streak))}; nobody joined or left)",
                            generation=r.generation, members=sorted(r.members))
