"""The draft's connect groups: a unit is given to a member only after every other member
that owned it acknowledged the revocation (its heartbeat no longer lists the unit), left,
or was fenced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import Ex, violation

NAME = "draft-revocation-acknowledged"
FENCED = {25, 110}


def check(exs: list[Ex]) -> Iterator[dict[str, Any]]:
    owned: dict[str, set[str]] = {}  # member -> what its latest heartbeat said it owns
    for e in exs:
        if e.api != "ConnectGroupHeartbeat" or not e.member_id:
            continue
        m = e.member_id
        if (e.member_epoch is not None and e.member_epoch < 0) or e.error_code in FENCED:
            owned.pop(m, None)
            continue
        if e.owned is not None:
            owned[m] = e.units("owned")
        if e.error_code != 0:
            continue
        for unit in sorted(e.units("assigned")):
            for other in sorted(o for o, units in owned.items() if o != m and unit in units):
                yield violation(NAME, e, f"{unit} given to {m} at epoch {e.resp_member_epoch} while "
                                f"{other} has not acknowledged its revocation",
                                generation=e.resp_member_epoch, members=(other, m), unit=unit)
