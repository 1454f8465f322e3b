"""A member silent for longer than its session timeout is fenced: its next Heartbeat,
SyncGroup or OffsetCommit is not accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .group import Ex, violation

NAME = "session-timeout-fenced"
CHECKED = ("Heartbeat", "SyncGroup", "OffsetCommit")
# On a real clock the coordinator's expiry timer and the capture's timestamps differ by
# scheduling noise; on a virtual clock they agree exactly.
REAL_SLACK_MS, REAL_SLACK_RATIO = 1000.0, 0.1


def check(exs: list[Ex]) -> Iterator[dict[str, Any]]:
    timeout: dict[str, int] = {}
    active: dict[str, float] = {}  # member -> last time it was heard or answered
    for e in exs:
        m = e.resp_member_id if e.api == "JoinGroup" else e.member_id
        if not m:
            continue
        if e.api == "JoinGroup" and e.error_code == 0 and e.session_timeout_ms:
            timeout[m] = e.session_timeout_ms
        elif e.api == "LeaveGroup":
            timeout.pop(m, None)
        elif e.api in CHECKED and m in timeout and m in active and e.req_ms is not None \
                and e.error_code == 0:
            t = timeout[m]
            slack = 0.0 if e.virtual else max(REAL_SLACK_MS, REAL_SLACK_RATIO * t)
            gap = e.req_ms - active[m]
            if gap > t + slack:
                yield violation(NAME, e, f"{e.api} from {m} accepted after {gap:.0f} ms of silence, "
                                f"past its {t} ms session timeout", generation=e.generation,
                                members=(m,))
        stamps = [x for x in (e.req_ms, e.resp_ms) if x is not None]
        if stamps:
            active[m] = max([active.get(m, 0.0), *stamps])
