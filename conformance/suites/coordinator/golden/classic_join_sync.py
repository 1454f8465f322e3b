"""Golden scenarios of JoinGroup and SyncGroup: joining, the protocol vote, the leader's
assignment reaching every member."""

from __future__ import annotations

import uuid
from typing import Any

from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.testing.client import ScriptedClient

from .classic_common import (CONNECT, DELAY, EVENTS, EVENTS_ID, MIN_SESSION, connect_metadata,
                             first_member, follower_waiting, joined_not_synced, probe, rebalancing,
                             refused_alike, second_member_joined, static_member, two_members)
from .registry import golden
from .session import Session


# ============================================================================ JoinGroup

probe("CLS-JOIN-06", "JoinGroup", "INVALID_GROUP_ID", "A JoinGroup with an empty group id is refused with INVALID_GROUP_ID.",
      send=lambda c, g, m: c.join(""), group=False)


probe("CLS-JOIN-03", "JoinGroup", "INVALID_SESSION_TIMEOUT",
      "A session timeout below group.min.session.timeout.ms is refused with INVALID_SESSION_TIMEOUT.",
      send=lambda c, g, m: c.join(g, session_ms=MIN_SESSION - 1))


probe("CLS-JOIN-04", "JoinGroup", "INVALID_SESSION_TIMEOUT",
      "A session timeout above group.max.session.timeout.ms is refused with INVALID_SESSION_TIMEOUT.",
      send=lambda c, g, m: c.join(g, session_ms=1_800_001))


probe("CLS-JOIN-18", "JoinGroup", "UNKNOWN_MEMBER_ID",
      "A JoinGroup with a member id for a group that does not exist is refused with UNKNOWN_MEMBER_ID (only a member without an id creates a group).",
      send=lambda c, g, m: c.join(g, "w1-not-a-member"))


@golden("CLS-JOIN-01", "JoinGroup", "MEMBER_ID_REQUIRED",
        "A JoinGroup v4+ without a member id is answered MEMBER_ID_REQUIRED with a new member id (the client id, '-', a unique suffix).")
async def join_member_id_required(s: Session) -> None:
    w1 = await s.client("w1")
    j = await w1.join(s.group())
    s.check(j.error_code == E.MEMBER_ID_REQUIRED and j.member_id.startswith("w1-"), f"{j}")


probe("CLS-JOIN-08", "JoinGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A member whose protocol type differs from the group's is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.join(g, protocol_type="consumer"), setup="member", by="w2")


probe("CLS-JOIN-09", "JoinGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A member that supports none of the protocols every member supports is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.join(g, protocols=(("default", b"\x00\x00"),)),
      setup="member", by="w2")


probe("CLS-JOIN-19", "JoinGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A first member with an empty protocol type is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.join(g, protocol_type=""))


probe("CLS-JOIN-20", "JoinGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A first member that lists no protocol is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.join(g, protocols=()))


probe("CLS-JOIN-07", "JoinGroup", "UNKNOWN_MEMBER_ID",
      "A JoinGroup with a member id the group does not know is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.join(g, "w2-not-a-member"), setup="member", by="w2")


probe("CLS-JOIN-21", "JoinGroup", "GROUP_MAX_SIZE_REACHED",
      "A new member of a group that has group.max.size members is refused with GROUP_MAX_SIZE_REACHED.",
      settings={"max_group_size": 1},
      send=lambda c, g, m: c.join(g), setup="member", by="w2")


probe("CLS-JOIN-22", "JoinGroup", "FENCED_INSTANCE_ID",
      "A JoinGroup naming a static member's group.instance.id with another member id is refused with FENCED_INSTANCE_ID.",
      send=lambda c, g, m: c.join(g, "inst-1-impostor", instance="inst-1"), setup="static", by="w2")


probe("CLS-JOIN-23", "JoinGroup", "UNKNOWN_MEMBER_ID",
      "A JoinGroup with a member id and a group.instance.id no member has is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.join(g, m, instance="ghost"), setup="member")


@golden("CLS-JOIN-24", "JoinGroup", "UNKNOWN_SERVER_ERROR",
        "A JoinGroup with a pending member id (from MEMBER_ID_REQUIRED) and a group.instance.id is refused with UNKNOWN_SERVER_ERROR (a pending id is never static).")
async def join_pending_with_instance(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    pending = (await w1.join(g)).member_id
    j = await w1.join(g, pending, instance="inst-1")
    s.check(j.error_code == E.UNKNOWN_SERVER_ERROR, f"{j}")


@golden("CLS-JOIN-25", "JoinGroup", "NONE",
        "The first member of a new group, after MEMBER_ID_REQUIRED, is answered generation 1 as the leader, with the chosen protocol and every member's metadata.")
async def join_first_member(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    member, parked = await w1.new_member(g)
    j = await s.result(parked)
    s.check((j.error_code, j.generation_id, j.leader, j.member_id, j.protocol_name, j.protocol_type)
            == (0, 1, member, member, "sessioned", "connect"), f"{j}")
    s.check([m.member_id for m in j.members] == [member], f"{j.members}")


@golden("CLS-JOIN-12", "JoinGroup", "NONE",
        "A JoinGroup v0-3 without a member id is given one directly (no MEMBER_ID_REQUIRED).")
async def join_old_version(s: Session) -> None:
    j = await (await s.client("w1")).join(s.group(), version=3)
    s.check(j.error_code == 0 and j.member_id.startswith("w1-") and j.generation_id == 1, f"{j}")


@golden("CLS-VOTE-02", "JoinGroup", "NONE",
        "The protocol is chosen by vote: each member votes for its first protocol that every member supports; the most votes win.", settings=DELAY)
async def join_protocol_vote(s: Session) -> None:
    g = s.group()
    prefs = {"w1": ("sessioned", "compatible", "default"), "w2": ("sessioned", "compatible", "default"),
             "w3": ("compatible", "sessioned", "default")}
    parked = []
    for name, order in prefs.items():
        c = await s.client(name)
        _, p = await c.new_member(g, protocols=tuple((n, connect_metadata(f"http://{name}/")) for n in order))
        parked.append(p)
    await s.advance(6000)  # the initial delay, extended once because members kept arriving
    answers = [await s.result(p) for p in parked]
    s.check({a.protocol_name for a in answers} == {"sessioned"}, f"{answers}")
    s.check(len(answers[0].members) == 3, f"{answers[0]}")


@golden("CLS-JOIN-26", "JoinGroup", "NONE",
        "The leader's JoinGroup answer lists every member with its metadata for the chosen protocol; a follower's lists none.")
async def join_leader_and_follower(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2, j1, j2 = await second_member_joined(s, g, w1, w2)
    s.check(sorted(m.member_id for m in j1.members) == sorted([m1, m2]) and j2.members == [], f"{j1} {j2}")  # type: ignore[attr-defined]


@golden("CLS-JOIN-15", "JoinGroup", "NONE",
        "A follower rejoining a Stable group with unchanged metadata gets the current generation; no rebalance starts.")
async def join_follower_rejoins_unchanged(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    j = await w2.join(g, m2)
    s.check((j.error_code, j.generation_id, j.leader) == (0, 2, m1), f"{j}")
    hb = await w1.heartbeat(g, m1, 2)
    s.check(hb.error_code == 0, f"no rebalance: {hb}")


@golden("CLS-JOIN-16", "JoinGroup", "NONE",
        "The leader rejoining a Stable group starts a rebalance: the others must rejoin, and a new generation follows.")
async def join_leader_rejoins(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    parked = await w1.join_later(g, m1)
    s.check(s.parked(parked), "the leader waits for the others")
    hb = await w2.heartbeat(g, m2, 2)
    s.check(hb.error_code == E.REBALANCE_IN_PROGRESS, f"{hb}")
    j2 = await w2.join(g, m2)
    j1 = await s.result(parked)
    s.check((j1.generation_id, j2.generation_id) == (3, 3), f"{j1} {j2}")


@golden("CLS-JOIN-27", "JoinGroup", "NONE",
        "A member rejoining a Stable group with changed metadata starts a rebalance; the leader then sees the new metadata.")
async def join_metadata_changes(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    parked = await w2.join_later(g, m2, protocols=(("sessioned", b"\x00\x02changed"),))
    hb = await w1.heartbeat(g, m1, 2)
    s.check(hb.error_code == E.REBALANCE_IN_PROGRESS, f"{hb}")
    j1 = await w1.join(g, m1)
    await s.result(parked)
    meta = {m.member_id: m.metadata for m in j1.members}
    s.check(j1.generation_id == 3 and meta[m2] == b"\x00\x02changed", f"{j1}")


@golden("CLS-STATIC-01", "JoinGroup", "NONE",
        "A static member (group.instance.id, v5+) is given a member id at once, prefixed by its instance id.")
async def join_static_member(s: Session) -> None:
    j = await (await s.client("w1")).join(s.group(), instance="inst-1", version=5)
    s.check(j.error_code == 0 and j.member_id.startswith("inst-1-") and j.generation_id == 1, f"{j}")


@golden("CLS-JOIN-28", "JoinGroup", "NONE",
        "A static member that restarts (rejoins without its member id) in a Stable group gets a new member id in the same generation without a rebalance; v9 tells a restarted leader to skip the assignment; the old id is fenced.")
async def join_static_restart(s: Session) -> None:
    g = s.group()
    old = await static_member(s, g, await s.client("w1"), "inst-1")
    again = await s.client("w1")
    j = await again.join(g, instance="inst-1")
    s.check(j.error_code == 0 and j.member_id != old and j.generation_id == 1, f"{j}")
    s.check(j.skip_assignment and j.leader == j.member_id, f"{j}")
    hb = await again.heartbeat(g, old, 1, instance="inst-1")
    s.check(hb.error_code == E.FENCED_INSTANCE_ID, f"{hb}")


@golden("CLS-JOIN-29", "JoinGroup", "NONE",
        "The first join of an empty group waits group.initial.rebalance.delay.ms before it is answered.",
        settings=DELAY)
async def join_initial_delay(s: Session) -> None:
    w1 = await s.client("w1")
    _, parked = await w1.new_member(s.group())
    await s.advance(2999)
    s.check(s.parked(parked), "still in the initial delay")
    await s.advance(1)
    j = await s.result(parked)
    s.check(j.error_code == 0 and j.generation_id == 1, f"{j}")


@golden("CLS-JOIN-30", "JoinGroup", "NONE",
        "A member rejoining with unchanged metadata while the group awaits its SyncGroups (it lost its JoinGroup answer) gets the current generation again.")
async def join_rejoin_completing(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await joined_not_synced(s, g, w1)
    j = await w1.join(g, m1)
    s.check((j.error_code, j.generation_id, j.leader) == (0, 1, m1) and len(j.members) == 1, f"{j}")


# ============================================================================ SyncGroup

refused_alike("SyncGroup", ScriptedClient.sync, {
    "empty-group": "CLS-SYNC-10", "no-group": "CLS-SYNC-12", "unknown-member": "CLS-SYNC-02",
    "other-generation": "CLS-SYNC-01", "fenced-instance": "CLS-SYNC-13"})


probe("CLS-SYNC-11", "SyncGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A SyncGroup v5+ without ProtocolType or ProtocolName is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.sync(g, m, 1, protocol_type=None, protocol_name=None), setup="joined")


probe("CLS-SYNC-08", "SyncGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A SyncGroup v5+ whose ProtocolName differs from the group's protocol is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.sync(g, m, 1, protocol_name="compatible"), setup="joined")


probe("CLS-SYNC-03", "SyncGroup", "REBALANCE_IN_PROGRESS",
      "A SyncGroup while the group prepares a rebalance is refused with REBALANCE_IN_PROGRESS (the member must rejoin).",
      send=lambda c, g, m: c.sync(g, m, 1), setup="rebalancing")


@golden("CLS-SYNC-14", "SyncGroup", "REBALANCE_IN_PROGRESS",
        "A follower's SyncGroup parked for the leader's is answered REBALANCE_IN_PROGRESS when a new member starts a rebalance.")
async def sync_parked_then_rebalance(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2, parked = await follower_waiting(s, g, w1, w2)
    await (await s.client("w3")).new_member(g)
    r = await s.result(parked)
    s.check(r.error_code == E.REBALANCE_IN_PROGRESS, f"{r}")


@golden("CLS-SYNC-05", "SyncGroup", "NONE",
        "A follower's SyncGroup waits for the leader's; the leader's assignments then answer every member with its own assignment.")
async def sync_follower_waits(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2, parked = await follower_waiting(s, g, w1, w2)
    r1 = await w1.sync(g, m1, 2, assignments={m1: b"for-w1", m2: b"for-w2"})
    r2 = await s.result(parked)
    s.check((r1.assignment, r2.assignment) == (b"for-w1", b"for-w2"), f"{r1} {r2}")
    s.check((r2.protocol_type, r2.protocol_name) == ("connect", "sessioned"), f"{r2}")


@golden("CLS-SYNC-07", "SyncGroup", "NONE",
        "A SyncGroup in a Stable group is answered at once with the member's stored assignment.")
async def sync_stable(s: Session) -> None:
    g, w1, w2 = await s.pair()
    _, m2 = await two_members(s, g, w1, w2)
    r = await w2.sync(g, m2, 2)
    s.check((r.error_code, r.assignment) == (0, b"A2"), f"{r}")


@golden("CLS-SYNC-06", "SyncGroup", "NONE",
        "A member the leader assigned nothing gets an empty assignment.")
async def sync_no_assignment(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2, _, _ = await second_member_joined(s, g, w1, w2)
    await w1.sync(g, m1, 2, assignments={m1: b"everything"})
    r = await w2.sync(g, m2, 2)
    s.check((r.error_code, r.assignment) == (0, b""), f"{r}")
