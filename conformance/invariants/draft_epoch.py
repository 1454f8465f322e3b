"""The draft's ConnectGroupHeartbeat (MemberEpoch: "the current member epoch; 0 to join the
group; -1 to leave the group"): a member heartbeats with the epoch the coordinator last gave
it, 0 to (re)join, or -1 to leave; never an epoch it was not given, nor an older one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fakebroker.coordinator.errors import DraftErrorCode

from .rounds import FENCED, Group, violation

REQUIREMENT = "C848-INV-01"
NAME = "draft-member-epoch-current"
# Answers that give the member its epoch: a success, and COMPUTE_ASSIGNMENT (the draft's
# code, its other fields valid: ERRATA 17), which the worker suite's coordinator answers with
# the draft's own number (the fake broker's, which coordinates the workers under test).
GRANTING = frozenset({0, int(DraftErrorCode.COMPUTE_ASSIGNMENT)})


def check(g: Group) -> Iterator[dict[str, Any]]:
    # member -> the epoch its last successful answer gave it; a member whose grant this
    # recording does not hold (an answer not recorded, an id the answer handed out) is not
    # judged: no violation concluded from what was not seen.
    given: dict[str, int] = {}
    for e in g.exs:
        if e.api != "ConnectGroupHeartbeat" or e.member_epoch is None:
            continue
        m, sent = e.member_id or e.resp_member_id, e.member_epoch
        if not m:
            continue
        if sent not in (0, -1) and g.judges_member(m) and m in given and sent != given[m]:
            yield violation(NAME, e, f"member {m} heartbeated with epoch {sent}; the coordinator last gave it "
                            f"{given[m]} (0 joins, -1 leaves)", generation=sent, members=(m,))
        if sent == -1 or e.error_code in FENCED:
            given.pop(m, None)
        elif e.error_code in GRANTING and e.resp_member_epoch is not None:
            given[m] = e.resp_member_epoch
