"""A SyncGroup, Heartbeat or OffsetCommit from a known member carrying a generation older
than the group's current one is refused (ILLEGAL_GENERATION; or UNKNOWN_MEMBER_ID if the
member was removed, or a coordinator-level error), never accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import Ex, violation

NAME = "stale-generation-refused"
CHECKED = ("SyncGroup", "Heartbeat", "OffsetCommit")


def check(exs: list[Ex]) -> Iterator[dict[str, Any]]:
    current: int | None = None
    since = 0  # where the current generation's first answer was sent
    members: set[str] = set()
    for e in exs:
        if e.api == "JoinGroup" and e.error_code == 0 and e.resp_generation is not None:
            if current is None or e.resp_generation > current:
                current, since = e.resp_generation, e.at
            members.add(e.resp_member_id)
        elif (e.api in CHECKED and current is not None and e.generation is not None
              and 0 <= e.generation < current and e.member_id in members
              and e.error_code == 0 and e.ref > since):
            yield violation(NAME, e, f"{e.api} with generation {e.generation} accepted (error 0) "
                            f"while the group is at generation {current}; expected "
                            "ILLEGAL_GENERATION (22)", generation=e.generation, members=(e.member_id,))
