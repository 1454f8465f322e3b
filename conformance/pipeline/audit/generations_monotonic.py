"""Generations (classic) and member epochs (the draft's connect groups) never go backwards
within a group."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import FENCED, Ex, Group, violation

NAME = "generation-monotonic"
CLASSIC, DRAFT = "CLS-JOIN-11", "C848-INV-02"  # generations; the draft's member epochs
REQUIREMENTS = (CLASSIC, DRAFT)


def check(g: Group) -> Iterator[dict[str, Any]]:
    last: Ex | None = None
    epochs: dict[str, Ex] = {}
    for e in g.exs:
        if e.api == "JoinGroup" and e.error_code == 0 and e.resp_generation is not None:
            if last is not None and e.resp_generation < last.resp_generation:
                yield violation(NAME, e, f"JoinGroup answered generation {e.resp_generation} after "
                                f"generation {last.resp_generation} (line/frame {last.at})",
                                generation=e.resp_generation, members=(e.resp_member_id,),
                                requirement=CLASSIC)
            if last is None or e.resp_generation >= last.resp_generation:
                last = e
        elif e.api == "ConnectGroupHeartbeat" and e.member_id:
            if e.member_epoch is not None and e.member_epoch < 0 or e.error_code in FENCED:
                epochs.pop(e.member_id, None)  # left or fenced: a new incarnation may start low
                continue
            if e.error_code != 0 or e.resp_member_epoch is None:
                continue
            prev = epochs.get(e.member_id)
            if prev is not None and e.member_epoch == 0:
                prev = None  # rejoined as a new member
            if prev is not None and e.resp_member_epoch < prev.resp_member_epoch:
                yield violation(NAME, e, f"member {e.member_id} epoch {e.resp_member_epoch} after "
                                f"{prev.resp_member_epoch} (line/frame {prev.at})",
                                generation=e.resp_member_epoch, members=(e.member_id,),
                                requirement=DRAFT)
            epochs[e.member_id] = e
