"""The draft's assignor selection: a worker is admitted only if the group keeps an assignor
every member names with version ranges that meet. Judged in both readings the project
knows (the draft's "ranges overlap" and ERRATA 19's "one member's range covers every
other's"), so only an answer wrong under both is a violation: an acceptance where the
ranges do not even overlap, or an UNSUPPORTED_ASSIGNOR where some member covers them all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import Group, live_heartbeats, violation

NAME = "draft-assignor-selection"
# Admitted without an overlap (the draft's validation rule); refused although a member's
# range covers every other's (refused outside the condition the draft's worker selection names).
ADMITTED, REFUSED = "C848-HB-VAL-12", "C848-ASSIGNOR-03"
REQUIREMENTS = (ADMITTED, REFUSED)
UNSUPPORTED_ASSIGNOR = 112
Ranges = dict[str, tuple[int, int]]  # assignor name -> (minimum, maximum) version


def _ranges(assignors: list[dict[str, Any]]) -> Ranges:
    return {a["name"]: (a["min_version"], a["max_version"]) for a in assignors}


def _common(members: dict[str, Ranges]) -> dict[str, list[tuple[int, int]]]:
    names = set.intersection(*(set(r) for r in members.values()))
    return {n: [r[n] for r in members.values()] for n in sorted(names)}


def overlap(members: dict[str, Ranges]) -> bool:
    """Some assignor every member names, with one version all of them support."""
    return any(max(lo for lo, _ in rs) <= min(hi for _, hi in rs) for rs in _common(members).values())


def covered(members: dict[str, Ranges]) -> bool:
    """Every shared assignor has a member whose range covers all the others' (ERRATA 19)."""
    common = _common(members)
    return bool(common) and all(
        any(lo <= min(x for x, _ in rs) and hi >= max(y for _, y in rs) for lo, hi in rs)
        for rs in common.values())


def check(g: Group) -> Iterator[dict[str, Any]]:
    members: dict[str, Ranges] = {}  # members that named assignors, by their latest accepted list
    for e in live_heartbeats(g, members):
        m = e.member_id
        if not e.assignors or e.error_code not in (0, UNSUPPORTED_ASSIGNOR):
            continue  # nothing new to judge, or another error came first
        group = {**members, m: _ranges(e.assignors)}
        if e.error_code == 0:
            if len(group) > 1 and not overlap(group):
                yield violation(NAME, e, f"{m} admitted at epoch {e.resp_member_epoch} although no "
                                "assignor every member names has a version all of them support",
                                generation=e.resp_member_epoch, members=sorted(group), requirement=ADMITTED)
            members[m] = group[m]
        elif covered(group):
            yield violation(NAME, e, f"{m} refused with UNSUPPORTED_ASSIGNOR although a member's "
                            "version range covers every other member's", generation=e.member_epoch,
                            members=sorted(group), requirement=REFUSED)
