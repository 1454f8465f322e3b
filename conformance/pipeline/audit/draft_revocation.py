"""The draft's connect groups: a unit is given to a member only after every other member
that owned it acknowledged the revocation (its heartbeat no longer lists the unit), left,
or was fenced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import Group, live_heartbeats, violation

NAME = "draft-revocation-acknowledged"
REQUIREMENT = "C848-RECON-03"


def check(g: Group) -> Iterator[dict[str, Any]]:
    owned: dict[str, set[str]] = {}  # member -> what its latest heartbeat said it owns
    for e in live_heartbeats(g, owned):
        m = e.member_id
        if e.owned is not None:
            owned[m] = e.units("owned")
        if e.error_code != 0:
            continue
        for unit in sorted(e.units("assigned")):
            for other in sorted(o for o, units in owned.items() if o != m and unit in units):
                yield violation(NAME, e, f"{unit} given to {m} at epoch {e.resp_member_epoch} while "
                                f"{other} has not acknowledged its revocation",
                                generation=e.resp_member_epoch, members=(other, m), unit=unit)
