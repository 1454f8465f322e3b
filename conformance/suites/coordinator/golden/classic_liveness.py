"""Golden scenarios of a member's liveness: Heartbeat, the session, rebalance and
new-member timers, and LeaveGroup."""

from __future__ import annotations

import uuid
from typing import Any

from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.testing.client import ScriptedClient

from .classic_common import (CONNECT, DELAY, EVENTS, EVENTS_ID, MIN_SESSION, connect_metadata,
                             first_member, joined_not_synced, probe, rebalancing, refused_alike,
                             second_member_joined, static_member, two_members)
from .registry import golden
from .session import Session


# ============================================================================ Heartbeat

refused_alike("Heartbeat", ScriptedClient.heartbeat, {
    "empty-group": "CLS-HB-06", "no-group": "CLS-HB-08", "unknown-member": "CLS-HB-03",
    "other-generation": "CLS-HB-01", "fenced-instance": "CLS-HB-09"})


probe("CLS-HB-02", "Heartbeat", "REBALANCE_IN_PROGRESS",
      "A Heartbeat while the group prepares a rebalance is answered REBALANCE_IN_PROGRESS.",
      send=lambda c, g, m: c.heartbeat(g, m, 1), setup="rebalancing")


probe("CLS-HB-04", "Heartbeat", "NONE", "A Heartbeat of a member of a Stable group, with its generation, is answered NONE.",
      send=lambda c, g, m: c.heartbeat(g, m, 1), setup="member")


probe("CLS-HB-05", "Heartbeat", "NONE",
      "A Heartbeat between a member's JoinGroup answer and its SyncGroup (CompletingRebalance) is answered NONE.",
      send=lambda c, g, m: c.heartbeat(g, m, 1), setup="joined")


# ============================================================================ timers

@golden("CLS-SESS-01", "Heartbeat", "UNKNOWN_MEMBER_ID",
        "A member that does not heartbeat within its session timeout is removed and the group rebalances: the others get REBALANCE_IN_PROGRESS, the removed member UNKNOWN_MEMBER_ID.")
async def timer_session_expiry(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2, session_ms=MIN_SESSION)
    await s.advance(3000)
    s.check((await w1.heartbeat(g, m1, 2)).error_code == 0, "w1 is alive")
    await s.advance(3500)  # w2 expired at 6000
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "w1 must rejoin")
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.UNKNOWN_MEMBER_ID, "w2 is gone")
    j = await w1.join(g, m1, session_ms=MIN_SESSION)
    s.check(j.generation_id == 3 and [m.member_id for m in j.members] == [m1], f"{j}")


@golden("CLS-SESS-02", "Heartbeat", "NONE",
        "Heartbeats within the session timeout keep a member in the group indefinitely.")
async def timer_heartbeats_keep_alive(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await first_member(s, g, w1, session_ms=MIN_SESSION)
    for _ in range(4):
        await s.advance(4000)
        s.check((await w1.heartbeat(g, m1, 1)).error_code == 0, "alive")
    d = await w1.describe(g)
    s.check(d.groups[0].group_state == "Stable" and len(d.groups[0].members) == 1, f"{d}")


@golden("CLS-REB-01", "JoinGroup", "NONE",
        "A member that does not rejoin within the rebalance timeout is removed when the join phase ends; the generation goes on without it.")
async def timer_rebalance_timeout(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2, session_ms=MIN_SESSION, rebalance_ms=5000)
    parked = await w1.join_later(g, m1, session_ms=MIN_SESSION, rebalance_ms=5000)
    for _ in range(2):
        await s.advance(2000)
        s.check((await w2.heartbeat(g, m2, 2)).error_code == E.REBALANCE_IN_PROGRESS, "w2 ignores it")
    await s.advance(1000)  # 5000: the join phase ends
    j = await s.result(parked)
    s.check(j.generation_id == 3 and [m.member_id for m in j.members] == [m1], f"{j}")
    await s.advance(500)
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.UNKNOWN_MEMBER_ID, "w2 was removed")


@golden("CLS-REB-02", "SyncGroup", "NONE",
        "Members that do not send SyncGroup within the rebalance timeout after the join phase are removed and the group rebalances.")
async def timer_sync_timeout(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2, _, _ = await second_member_joined(s, g, w1, w2, session_ms=MIN_SESSION, rebalance_ms=5000)
    await w1.sync(g, m1, 2, assignments={m1: b"A1", m2: b"A2"})  # w2 never syncs
    await s.advance(3000)
    s.check((await w1.heartbeat(g, m1, 2)).error_code == 0, "stable so far")
    await s.advance(2500)  # the sync deadline (5000) passed
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.UNKNOWN_MEMBER_ID, "w2 removed")


@golden("CLS-REB-04", "JoinGroup", "UNKNOWN_MEMBER_ID",
        "A new member whose first JoinGroup is still parked after the new-member join timeout (5 minutes) is removed; its JoinGroup is answered UNKNOWN_MEMBER_ID.",
        virtual_only="waits Kafka's fixed 5-minute new-member join timeout")
async def timer_new_member_timeout(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await first_member(s, g, w1, session_ms=400_000, rebalance_ms=600_000)
    _, parked = await (await s.client("w2")).new_member(g, session_ms=MIN_SESSION, rebalance_ms=600_000)
    await s.advance(299_999)
    s.check(s.parked(parked), "still waiting for w1 to rejoin")
    await s.advance(1)
    j = await s.result(parked)
    s.check(j.error_code == E.UNKNOWN_MEMBER_ID, f"{j}")
    s.check((await w1.heartbeat(g, m1, 1)).error_code == E.REBALANCE_IN_PROGRESS, "still rebalancing")


@golden("CLS-SESS-03", "JoinGroup", "UNKNOWN_MEMBER_ID",
        "A member id handed out with MEMBER_ID_REQUIRED expires after the session timeout; a JoinGroup with it afterwards is refused with UNKNOWN_MEMBER_ID.")
async def timer_pending_member_expires(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    pending = (await w1.join(g, session_ms=MIN_SESSION)).member_id
    await s.advance(MIN_SESSION + 500)
    j = await w1.join(g, pending, session_ms=MIN_SESSION)
    s.check(j.error_code == E.UNKNOWN_MEMBER_ID, f"{j}")


@golden("CLS-JOIN-34", "JoinGroup", "NONE",
        "While members keep joining during the initial rebalance delay, the delay is extended (up to the rebalance timeout); all join the same first generation.",
        settings=DELAY)
async def timer_initial_delay_extends(s: Session) -> None:
    g = s.group()
    _, p1 = await (await s.client("w1")).new_member(g)
    await s.advance(1000)
    _, p2 = await (await s.client("w2")).new_member(g)
    await s.advance(2000)  # 3000: the first delay ends, but w2 arrived within it
    s.check(s.parked(p1) and s.parked(p2), "the delay is extended")
    await s.advance(3000)
    j1, j2 = await s.result(p1), await s.result(p2)
    s.check((j1.generation_id, j2.generation_id, len(j1.members)) == (1, 1, 2), f"{j1} {j2}")


# ============================================================================ LeaveGroup

probe("CLS-LEAVE-06", "LeaveGroup", "INVALID_GROUP_ID", "A LeaveGroup with an empty group id is refused with INVALID_GROUP_ID.",
      send=lambda c, g, m: c.leave("", "w1-x"), group=False)


@golden("CLS-LEAVE-07", "LeaveGroup", "UNKNOWN_MEMBER_ID",
        "A LeaveGroup v3+ for a group that does not exist answers NONE with UNKNOWN_MEMBER_ID for each member.")
async def leave_unknown_group_batch(s: Session) -> None:
    r = await (await s.client("w1")).leave(s.group(), "w1-x", ("", "inst-9"))
    s.check(r.error_code == 0 and [m.error_code for m in r.members] == [25, 25], f"{r}")


probe("CLS-LEAVE-08", "LeaveGroup", "UNKNOWN_MEMBER_ID",
      "A LeaveGroup v0-2 for a group that does not exist is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.leave(g, "w1-x", version=2))


@golden("CLS-LEAVE-04", "LeaveGroup", "UNKNOWN_MEMBER_ID",
        "In a LeaveGroup batch each member is answered on its own: an unknown one gets UNKNOWN_MEMBER_ID while the others leave.")
async def leave_batch_partly_unknown(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    r = await w1.leave(g, m2, "w9-not-a-member")
    s.check(r.error_code == 0 and [m.error_code for m in r.members] == [0, 25], f"{r}")
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")


def _first_answer(r: Any) -> tuple[int, int]:
    """A LeaveGroup's error and its first member's (v3+: each member is answered on its own)."""
    return r.error_code, r.members[0].error_code


probe("CLS-LEAVE-09", "LeaveGroup", "FENCED_INSTANCE_ID",
      "A LeaveGroup naming a static member's group.instance.id with another member id answers that member FENCED_INSTANCE_ID.",
      send=lambda c, g, m: c.leave(g, ("inst-1-impostor", "inst-1")), setup="static", by="w2",
      answer=_first_answer, want=(0, E.FENCED_INSTANCE_ID))


probe("CLS-LEAVE-10", "LeaveGroup", "UNKNOWN_MEMBER_ID",
      "Removing a member by group.instance.id alone (no member id) when no member has that instance id answers UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.leave(g, ("", "ghost")), setup="member", by="admin",
      answer=_first_answer, want=(0, E.UNKNOWN_MEMBER_ID))


@golden("CLS-LEAVE-01", "LeaveGroup", "NONE",
        "A member leaving a Stable group starts a rebalance: the others get REBALANCE_IN_PROGRESS and form a new generation without it.")
async def leave_rebalances(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    r = await w2.leave(g, m2, reason="shutting down")
    s.check(r.error_code == 0 and r.members[0].error_code == 0, f"{r}")
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    j = await w1.join(g, m1)
    s.check(j.generation_id == 3 and [m.member_id for m in j.members] == [m1], f"{j}")


@golden("CLS-LEAVE-11", "LeaveGroup", "NONE",
        "A static member can be removed by its group.instance.id alone (an administrator's LeaveGroup).")
async def leave_by_instance(s: Session) -> None:
    g = s.group()
    await static_member(s, g, await s.client("w1"), "inst-1")
    admin = await s.client("admin")
    r = await admin.leave(g, ("", "inst-1"))
    s.check(r.error_code == 0 and r.members[0].error_code == 0, f"{r}")
    d = await admin.describe(g)
    s.check((d.groups[0].group_state, d.groups[0].members) == ("Empty", []), f"{d}")


@golden("CLS-LEAVE-05", "LeaveGroup", "NONE",
        "When the last member leaves (v0-2: one member id), the group becomes Empty.")
async def leave_last_member(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await first_member(s, g, w1)
    r = await w1.leave(g, m1, version=2)
    s.check(r.error_code == 0, f"{r}")
    d = await w1.describe(g)
    s.check((d.groups[0].group_state, d.groups[0].members) == ("Empty", []), f"{d}")


@golden("CLS-LEAVE-12", "LeaveGroup", "NONE",
        "A member that leaves while its JoinGroup is parked has that JoinGroup answered UNKNOWN_MEMBER_ID.")
async def leave_with_parked_join(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    parked = await w1.join_later(g, m1)
    r = await (await s.client("w1")).leave(g, m1)
    s.check(r.members[0].error_code == 0, f"{r}")
    j = await s.result(parked)
    s.check(j.error_code == E.UNKNOWN_MEMBER_ID, f"{j}")
