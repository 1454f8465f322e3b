"""Golden scenarios: for every rule of the classic group APIs, the shortest request sequence
that exercises it, with the outcome the rule requires checked as it runs.

Timeouts are kept short (sessions at the 6 s minimum, rebalance timeouts of a few seconds,
500 ms or more between a deadline and the next request) so that the transcripts also replay
on a real-time coordinator; the one that needs Kafka's fixed 5-minute new-member timeout is
virtual-only.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from ...protocol.error_codes import ErrorCode as E
from ...protocol import default_registry
from .catalogue import rule
from ...testing.client import ScriptedClient
from .session import Session

MIN_SESSION = 6000  # group.min.session.timeout.ms's default: the shortest a client may ask
EVENTS = "events"  # the golden broker's topic (3 partitions)
EVENTS_ID = uuid.uuid5(uuid.NAMESPACE_URL, f"fakebroker-topic:{EVENTS}")
DELAY = {"initial_rebalance_delay_ms": 3000}


def connect_metadata(url: str, offset: int = 5) -> bytes:
    """Connect's worker metadata (v1: url, config offset, no allocation yet)."""
    return default_registry()["ConnectProtocolMetadata"].encode_versioned(
        default_registry()["ConnectProtocolMetadata"].new(url=url, config_offset=offset, allocation=None), 1)


CONNECT = (("sessioned", connect_metadata("http://w:8083/")),
           ("compatible", connect_metadata("http://w:8083/")),
           ("default", connect_metadata("http://w:8083/")))


# ---------------------------------------------------------------------------- helpers

async def first_member(s: Session, g: str, c: ScriptedClient, **kw: object) -> str:
    """A group of one: the two-step join and the leader's sync. Stable, generation 1."""
    member, parked = await c.new_member(g, **kw)
    j = await s.result(parked)
    s.check((j.error_code, j.generation_id, j.leader) == (0, 1, member), f"first join: {j}")
    r = await c.sync(g, member, 1, assignments={member: b"A1"}, protocol_name=j.protocol_name)
    s.check((r.error_code, r.assignment) == (0, b"A1"), f"first sync: {r}")
    return member


async def static_member(s: Session, g: str, c: ScriptedClient, instance: str) -> str:
    """A static member alone in its group (joins at once, no MEMBER_ID_REQUIRED)."""
    j = await c.join(g, instance=instance)
    s.check(j.error_code == 0 and j.member_id.startswith(instance + "-"), f"static join: {j}")
    r = await c.sync(g, j.member_id, 1, instance=instance, assignments={j.member_id: b"S1"})
    s.check(r.error_code == 0, f"static sync: {r}")
    return str(j.member_id)


async def second_member_joined(s: Session, g: str, w1: ScriptedClient, m1: str, w2: ScriptedClient,
                               **kw: object) -> tuple[str, object, object]:
    """w2 joins w1's Stable group: w1 learns of the rebalance from its heartbeat and
    rejoins; generation 2 is answered to both (not yet synced)."""
    m2, parked = await w2.new_member(g, **kw)
    s.check(s.parked(parked), "the newcomer waits for the rebalance")
    hb = await w1.heartbeat(g, m1, 1)
    s.check(hb.error_code == E.REBALANCE_IN_PROGRESS, f"w1 heartbeat: {hb}")
    j1 = await w1.join(g, m1, **kw)
    j2 = await s.result(parked)
    s.check((j1.generation_id, j2.generation_id, j1.leader) == (2, 2, m1), f"gen 2: {j1} {j2}")
    return m2, j1, j2


async def two_members(s: Session, g: str, w1: ScriptedClient, w2: ScriptedClient, **kw: object) -> tuple[str, str]:
    """w1 and w2 in a Stable group, generation 2, w1 leading."""
    m1 = await first_member(s, g, w1, **kw)
    m2, j1, _ = await second_member_joined(s, g, w1, m1, w2, **kw)
    name = j1.protocol_name  # type: ignore[attr-defined]
    follower = await w2.sync_later(g, m2, 2, protocol_name=name)
    r1 = await w1.sync(g, m1, 2, assignments={m1: b"A1", m2: b"A2"}, protocol_name=name)
    r2 = await s.result(follower)
    s.check((r1.assignment, r2.assignment) == (b"A1", b"A2"), f"gen 2 syncs: {r1} {r2}")
    return m1, m2


async def joined_not_synced(s: Session, g: str, c: ScriptedClient) -> str:
    """A group of one in CompletingRebalance: joined, no SyncGroup yet."""
    member, parked = await c.new_member(g)
    j = await s.result(parked)
    s.check(j.error_code == 0 and j.generation_id == 1, f"join: {j}")
    return member


async def rebalancing(s: Session, g: str, c: ScriptedClient) -> str:
    """A group of one, Stable, that a second member (w2) has just asked to join."""
    member = await first_member(s, g, c)
    await (await s.client("w2")).new_member(g)
    return member


SETUPS: dict[str, Callable[[Session, str, ScriptedClient], Awaitable[str]]] = {
    "member": first_member, "joined": joined_not_synced, "rebalancing": rebalancing,
    "static": lambda s, g, c: static_member(s, g, c, "inst-1"),
}


def probe(id: str, api: str, expect: str, title: str,
          send: Callable[[ScriptedClient, str, str], Awaitable[Any]], *, setup: str | None = None,
          by: str | None = None, answer: Callable[[Any], Any] = lambda r: r.error_code,
          want: Any = None, group: bool = True, **rule_kw: Any) -> None:
    """Register the scenario of a rule one request shows. After ``setup`` (one of SETUPS, run
    by client w1 in the scenario's group), client ``by`` (w1 itself if None) sends
    ``send(client, group, the setup's member id)``; ``answer(response)`` must equal ``want``
    (by default the code of the error ``expect`` names). ``group=False``: the request names
    no group of the scenario's (an empty group id), so none is bound."""
    expected = E[expect] if want is None else want

    async def scenario(s: Session) -> None:
        g = s.group() if group else ""
        c = await s.client("w1" if setup is not None else by or "w1")
        member = await SETUPS[setup](s, g, c) if setup is not None else ""
        if setup is not None and by is not None:
            c = await s.client(by)
        r = await send(c, g, member)
        s.check(answer(r) == expected, f"{r}")

    rule(id, api, expect, title, **rule_kw)(scenario)


# ============================================================================ JoinGroup

probe("CLS-JOIN-06", "JoinGroup", "INVALID_GROUP_ID", "A JoinGroup with an empty group id is refused with INVALID_GROUP_ID.",
      send=lambda c, g, m: c.join(""), group=False)


probe("CLS-JOIN-03", "JoinGroup", "INVALID_SESSION_TIMEOUT",
      "A session timeout below group.min.session.timeout.ms is refused with INVALID_SESSION_TIMEOUT.", source="design",
      send=lambda c, g, m: c.join(g, session_ms=MIN_SESSION - 1))


probe("CLS-JOIN-04", "JoinGroup", "INVALID_SESSION_TIMEOUT",
      "A session timeout above group.max.session.timeout.ms is refused with INVALID_SESSION_TIMEOUT.", source="design",
      send=lambda c, g, m: c.join(g, session_ms=1_800_001))


probe("CLS-JOIN-18", "JoinGroup", "UNKNOWN_MEMBER_ID",
      "A JoinGroup with a member id for a group that does not exist is refused with UNKNOWN_MEMBER_ID (only a member without an id creates a group).",
      send=lambda c, g, m: c.join(g, "w1-not-a-member"))


@rule("CLS-JOIN-01", "JoinGroup", "MEMBER_ID_REQUIRED",
      "A JoinGroup v4+ without a member id is answered MEMBER_ID_REQUIRED with a new member id (the client id, '-', a unique suffix).", source="kip-394")
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
      "A JoinGroup naming a static member's group.instance.id with another member id is refused with FENCED_INSTANCE_ID.", source="kip-345",
      send=lambda c, g, m: c.join(g, "inst-1-impostor", instance="inst-1"), setup="static", by="w2")


probe("CLS-JOIN-23", "JoinGroup", "UNKNOWN_MEMBER_ID",
      "A JoinGroup with a member id and a group.instance.id no member has is refused with UNKNOWN_MEMBER_ID.", source="kip-345",
      send=lambda c, g, m: c.join(g, m, instance="ghost"), setup="member")


@rule("CLS-JOIN-24", "JoinGroup", "UNKNOWN_SERVER_ERROR",
      "A JoinGroup with a pending member id (from MEMBER_ID_REQUIRED) and a group.instance.id is refused with UNKNOWN_SERVER_ERROR (a pending id is never static).")
async def join_pending_with_instance(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    pending = (await w1.join(g)).member_id
    j = await w1.join(g, pending, instance="inst-1")
    s.check(j.error_code == E.UNKNOWN_SERVER_ERROR, f"{j}")


@rule("CLS-JOIN-25", "JoinGroup", "NONE",
      "The first member of a new group, after MEMBER_ID_REQUIRED, is answered generation 1 as the leader, with the chosen protocol and every member's metadata.",
      source="kip-394", also=("CLS-JOIN-01",))
async def join_first_member(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    member, parked = await w1.new_member(g)
    j = await s.result(parked)
    s.check((j.error_code, j.generation_id, j.leader, j.member_id, j.protocol_name, j.protocol_type)
            == (0, 1, member, member, "sessioned", "connect"), f"{j}")
    s.check([m.member_id for m in j.members] == [member], f"{j.members}")


@rule("CLS-JOIN-12", "JoinGroup", "NONE",
      "A JoinGroup v0-3 without a member id is given one directly (no MEMBER_ID_REQUIRED).", source="kip-394")
async def join_old_version(s: Session) -> None:
    j = await (await s.client("w1")).join(s.group(), version=3)
    s.check(j.error_code == 0 and j.member_id.startswith("w1-") and j.generation_id == 1, f"{j}")


@rule("CLS-VOTE-02", "JoinGroup", "NONE",
      "The protocol is chosen by vote: each member votes for its first protocol that every member supports; the most votes win.",
      source="design", settings=DELAY)
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


@rule("CLS-JOIN-26", "JoinGroup", "NONE",
      "The leader's JoinGroup answer lists every member with its metadata for the chosen protocol; a follower's lists none.", source="spec-002")
async def join_leader_and_follower(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1 = await first_member(s, g, w1)
    m2, j1, j2 = await second_member_joined(s, g, w1, m1, w2)
    s.check(sorted(m.member_id for m in j1.members) == sorted([m1, m2]) and j2.members == [], f"{j1} {j2}")  # type: ignore[attr-defined]


@rule("CLS-JOIN-15", "JoinGroup", "NONE",
      "A follower rejoining a Stable group with unchanged metadata gets the current generation; no rebalance starts.")
async def join_follower_rejoins_unchanged(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    j = await w2.join(g, m2)
    s.check((j.error_code, j.generation_id, j.leader) == (0, 2, m1), f"{j}")
    hb = await w1.heartbeat(g, m1, 2)
    s.check(hb.error_code == 0, f"no rebalance: {hb}")


@rule("CLS-JOIN-16", "JoinGroup", "NONE",
      "The leader rejoining a Stable group starts a rebalance: the others must rejoin, and a new generation follows.")
async def join_leader_rejoins(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    parked = await w1.join_later(g, m1)
    s.check(s.parked(parked), "the leader waits for the others")
    hb = await w2.heartbeat(g, m2, 2)
    s.check(hb.error_code == E.REBALANCE_IN_PROGRESS, f"{hb}")
    j2 = await w2.join(g, m2)
    j1 = await s.result(parked)
    s.check((j1.generation_id, j2.generation_id) == (3, 3), f"{j1} {j2}")


@rule("CLS-JOIN-27", "JoinGroup", "NONE",
      "A member rejoining a Stable group with changed metadata starts a rebalance; the leader then sees the new metadata.")
async def join_metadata_changes(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    parked = await w2.join_later(g, m2, protocols=(("sessioned", b"\x00\x02changed"),))
    hb = await w1.heartbeat(g, m1, 2)
    s.check(hb.error_code == E.REBALANCE_IN_PROGRESS, f"{hb}")
    j1 = await w1.join(g, m1)
    await s.result(parked)
    meta = {m.member_id: m.metadata for m in j1.members}
    s.check(j1.generation_id == 3 and meta[m2] == b"\x00\x02changed", f"{j1}")


@rule("CLS-STATIC-01", "JoinGroup", "NONE",
      "A static member (group.instance.id, v5+) is given a member id at once, prefixed by its instance id.", source="kip-345")
async def join_static_member(s: Session) -> None:
    j = await (await s.client("w1")).join(s.group(), instance="inst-1", version=5)
    s.check(j.error_code == 0 and j.member_id.startswith("inst-1-") and j.generation_id == 1, f"{j}")


@rule("CLS-JOIN-28", "JoinGroup", "NONE",
      "A static member that restarts (rejoins without its member id) in a Stable group gets a new member id in the same generation without a rebalance; v9 tells a restarted leader to skip the assignment; the old id is fenced.",
      source="kip-345", also=("CLS-HB-09",))
async def join_static_restart(s: Session) -> None:
    g = s.group()
    old = await static_member(s, g, await s.client("w1"), "inst-1")
    again = await s.client("w1")
    j = await again.join(g, instance="inst-1")
    s.check(j.error_code == 0 and j.member_id != old and j.generation_id == 1, f"{j}")
    s.check(j.skip_assignment and j.leader == j.member_id, f"{j}")
    hb = await again.heartbeat(g, old, 1, instance="inst-1")
    s.check(hb.error_code == E.FENCED_INSTANCE_ID, f"{hb}")


@rule("CLS-JOIN-29", "JoinGroup", "NONE",
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


@rule("CLS-JOIN-30", "JoinGroup", "NONE",
      "A member rejoining with unchanged metadata while the group awaits its SyncGroups (it lost its JoinGroup answer) gets the current generation again.")
async def join_rejoin_completing(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await joined_not_synced(s, g, w1)
    j = await w1.join(g, m1)
    s.check((j.error_code, j.generation_id, j.leader) == (0, 1, m1) and len(j.members) == 1, f"{j}")


# ============================================================================ SyncGroup

probe("CLS-SYNC-11", "SyncGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A SyncGroup v5+ without ProtocolType or ProtocolName is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.sync(g, m, 1, protocol_type=None, protocol_name=None), setup="joined")


probe("CLS-SYNC-10", "SyncGroup", "INVALID_GROUP_ID", "A SyncGroup with an empty group id is refused with INVALID_GROUP_ID.",
      send=lambda c, g, m: c.sync("", "w1-x", 1), group=False)


probe("CLS-SYNC-12", "SyncGroup", "UNKNOWN_MEMBER_ID", "A SyncGroup for a group that does not exist is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.sync(g, "w1-x", 1))


probe("CLS-SYNC-02", "SyncGroup", "UNKNOWN_MEMBER_ID", "A SyncGroup from a member the group does not know is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.sync(g, "w2-not-a-member", 1), setup="member", by="w2")


probe("CLS-SYNC-01", "SyncGroup", "ILLEGAL_GENERATION",
      "A SyncGroup with a generation other than the group's is refused with ILLEGAL_GENERATION.", source="design",
      send=lambda c, g, m: c.sync(g, m, 2), setup="member")


probe("CLS-SYNC-08", "SyncGroup", "INCONSISTENT_GROUP_PROTOCOL",
      "A SyncGroup v5+ whose ProtocolName differs from the group's protocol is refused with INCONSISTENT_GROUP_PROTOCOL.",
      send=lambda c, g, m: c.sync(g, m, 1, protocol_name="compatible"), setup="joined")


probe("CLS-SYNC-03", "SyncGroup", "REBALANCE_IN_PROGRESS",
      "A SyncGroup while the group prepares a rebalance is refused with REBALANCE_IN_PROGRESS (the member must rejoin).", source="design",
      send=lambda c, g, m: c.sync(g, m, 1), setup="rebalancing")


probe("CLS-SYNC-13", "SyncGroup", "FENCED_INSTANCE_ID",
      "A SyncGroup naming a static member's group.instance.id with another member id is refused with FENCED_INSTANCE_ID.", source="kip-345",
      send=lambda c, g, m: c.sync(g, "inst-1-impostor", 1, instance="inst-1"),
      setup="static", by="w2")


@rule("CLS-SYNC-14", "SyncGroup", "REBALANCE_IN_PROGRESS",
      "A follower's SyncGroup parked for the leader's is answered REBALANCE_IN_PROGRESS when a new member starts a rebalance.")
async def sync_parked_then_rebalance(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1 = await first_member(s, g, w1)
    m2, _, _ = await second_member_joined(s, g, w1, m1, w2)
    parked = await w2.sync_later(g, m2, 2)
    s.check(s.parked(parked), "the follower waits for the leader")
    await (await s.client("w3")).new_member(g)
    r = await s.result(parked)
    s.check(r.error_code == E.REBALANCE_IN_PROGRESS, f"{r}")


@rule("CLS-SYNC-05", "SyncGroup", "NONE",
      "A follower's SyncGroup waits for the leader's; the leader's assignments then answer every member with its own assignment.", source="spec-002")
async def sync_follower_waits(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1 = await first_member(s, g, w1)
    m2, _, _ = await second_member_joined(s, g, w1, m1, w2)
    parked = await w2.sync_later(g, m2, 2)
    s.check(s.parked(parked), "the follower waits for the leader")
    r1 = await w1.sync(g, m1, 2, assignments={m1: b"for-w1", m2: b"for-w2"})
    r2 = await s.result(parked)
    s.check((r1.assignment, r2.assignment) == (b"for-w1", b"for-w2"), f"{r1} {r2}")
    s.check((r2.protocol_type, r2.protocol_name) == ("connect", "sessioned"), f"{r2}")


@rule("CLS-SYNC-07", "SyncGroup", "NONE",
      "A SyncGroup in a Stable group is answered at once with the member's stored assignment.")
async def sync_stable(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    _, m2 = await two_members(s, g, w1, w2)
    r = await w2.sync(g, m2, 2)
    s.check((r.error_code, r.assignment) == (0, b"A2"), f"{r}")


@rule("CLS-SYNC-06", "SyncGroup", "NONE",
      "A member the leader assigned nothing gets an empty assignment.")
async def sync_no_assignment(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1 = await first_member(s, g, w1)
    m2, _, _ = await second_member_joined(s, g, w1, m1, w2)
    await w1.sync(g, m1, 2, assignments={m1: b"everything"})
    r = await w2.sync(g, m2, 2)
    s.check((r.error_code, r.assignment) == (0, b""), f"{r}")


# ============================================================================ Heartbeat

probe("CLS-HB-06", "Heartbeat", "INVALID_GROUP_ID", "A Heartbeat with an empty group id is refused with INVALID_GROUP_ID.",
      send=lambda c, g, m: c.heartbeat("", "w1-x", 1), group=False)


probe("CLS-HB-08", "Heartbeat", "UNKNOWN_MEMBER_ID", "A Heartbeat for a group that does not exist is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.heartbeat(g, "w1-x", 1))


probe("CLS-HB-03", "Heartbeat", "UNKNOWN_MEMBER_ID", "A Heartbeat from a member the group does not know is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.heartbeat(g, "w2-not-a-member", 1), setup="member", by="w2")


probe("CLS-HB-01", "Heartbeat", "ILLEGAL_GENERATION",
      "A Heartbeat with a generation other than the group's is refused with ILLEGAL_GENERATION.", source="design",
      send=lambda c, g, m: c.heartbeat(g, m, 2), setup="member")  # the next: a previous one may be -1


probe("CLS-HB-02", "Heartbeat", "REBALANCE_IN_PROGRESS",
      "A Heartbeat while the group prepares a rebalance is answered REBALANCE_IN_PROGRESS.", source="design",
      send=lambda c, g, m: c.heartbeat(g, m, 1), setup="rebalancing")


probe("CLS-HB-09", "Heartbeat", "FENCED_INSTANCE_ID",
      "A Heartbeat naming a static member's group.instance.id with another member id is refused with FENCED_INSTANCE_ID.", source="kip-345",
      send=lambda c, g, m: c.heartbeat(g, "inst-1-impostor", 1, instance="inst-1"),
      setup="static", by="w2")


probe("CLS-HB-04", "Heartbeat", "NONE", "A Heartbeat of a member of a Stable group, with its generation, is answered NONE.",
      send=lambda c, g, m: c.heartbeat(g, m, 1), setup="member")


probe("CLS-HB-05", "Heartbeat", "NONE",
      "A Heartbeat between a member's JoinGroup answer and its SyncGroup (CompletingRebalance) is answered NONE.",
      send=lambda c, g, m: c.heartbeat(g, m, 1), setup="joined")


# ============================================================================ timers

@rule("CLS-SESS-01", "Heartbeat", "UNKNOWN_MEMBER_ID",
      "A member that does not heartbeat within its session timeout is removed and the group rebalances: the others get REBALANCE_IN_PROGRESS, the removed member UNKNOWN_MEMBER_ID.",
      source="spec-002")
async def timer_session_expiry(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2, session_ms=MIN_SESSION)
    await s.advance(3000)
    s.check((await w1.heartbeat(g, m1, 2)).error_code == 0, "w1 is alive")
    await s.advance(3500)  # w2 expired at 6000
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "w1 must rejoin")
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.UNKNOWN_MEMBER_ID, "w2 is gone")
    j = await w1.join(g, m1, session_ms=MIN_SESSION)
    s.check(j.generation_id == 3 and [m.member_id for m in j.members] == [m1], f"{j}")


@rule("CLS-SESS-02", "Heartbeat", "NONE",
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


@rule("CLS-REB-01", "JoinGroup", "NONE",
      "A member that does not rejoin within the rebalance timeout is removed when the join phase ends; the generation goes on without it.")
async def timer_rebalance_timeout(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
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


@rule("CLS-REB-02", "SyncGroup", "NONE",
      "Members that do not send SyncGroup within the rebalance timeout after the join phase are removed and the group rebalances.")
async def timer_sync_timeout(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1 = await first_member(s, g, w1, session_ms=MIN_SESSION, rebalance_ms=5000)
    m2, _, _ = await second_member_joined(s, g, w1, m1, w2, session_ms=MIN_SESSION, rebalance_ms=5000)
    await w1.sync(g, m1, 2, assignments={m1: b"A1", m2: b"A2"})  # w2 never syncs
    await s.advance(3000)
    s.check((await w1.heartbeat(g, m1, 2)).error_code == 0, "stable so far")
    await s.advance(2500)  # the sync deadline (5000) passed
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.UNKNOWN_MEMBER_ID, "w2 removed")


@rule("CLS-REB-04", "JoinGroup", "UNKNOWN_MEMBER_ID",
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


@rule("CLS-SESS-03", "JoinGroup", "UNKNOWN_MEMBER_ID",
      "A member id handed out with MEMBER_ID_REQUIRED expires after the session timeout; a JoinGroup with it afterwards is refused with UNKNOWN_MEMBER_ID.",
      source="kip-394")
async def timer_pending_member_expires(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    pending = (await w1.join(g, session_ms=MIN_SESSION)).member_id
    await s.advance(MIN_SESSION + 500)
    j = await w1.join(g, pending, session_ms=MIN_SESSION)
    s.check(j.error_code == E.UNKNOWN_MEMBER_ID, f"{j}")


@rule("CLS-JOIN-34", "JoinGroup", "NONE",
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


@rule("CLS-LEAVE-07", "LeaveGroup", "UNKNOWN_MEMBER_ID",
      "A LeaveGroup v3+ for a group that does not exist answers NONE with UNKNOWN_MEMBER_ID for each member.", source="kip-345")
async def leave_unknown_group_batch(s: Session) -> None:
    r = await (await s.client("w1")).leave(s.group(), "w1-x", ("", "inst-9"))
    s.check(r.error_code == 0 and [m.error_code for m in r.members] == [25, 25], f"{r}")


probe("CLS-LEAVE-08", "LeaveGroup", "UNKNOWN_MEMBER_ID",
      "A LeaveGroup v0-2 for a group that does not exist is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.leave(g, "w1-x", version=2))


@rule("CLS-LEAVE-04", "LeaveGroup", "UNKNOWN_MEMBER_ID",
      "In a LeaveGroup batch each member is answered on its own: an unknown one gets UNKNOWN_MEMBER_ID while the others leave.", source="kip-345")
async def leave_batch_partly_unknown(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    r = await w1.leave(g, m2, "w9-not-a-member")
    s.check(r.error_code == 0 and [m.error_code for m in r.members] == [0, 25], f"{r}")
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")


@rule("CLS-LEAVE-09", "LeaveGroup", "FENCED_INSTANCE_ID",
      "A LeaveGroup naming a static member's group.instance.id with another member id answers that member FENCED_INSTANCE_ID.", source="kip-345")
async def leave_fenced(s: Session) -> None:
    g = s.group()
    await static_member(s, g, await s.client("w1"), "inst-1")
    r = await (await s.client("w2")).leave(g, ("inst-1-impostor", "inst-1"))
    s.check(r.error_code == 0 and r.members[0].error_code == E.FENCED_INSTANCE_ID, f"{r}")


@rule("CLS-LEAVE-10", "LeaveGroup", "UNKNOWN_MEMBER_ID",
      "Removing a member by group.instance.id alone (no member id) when no member has that instance id answers UNKNOWN_MEMBER_ID.", source="kip-345")
async def leave_unknown_instance(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    r = await (await s.client("admin")).leave(g, ("", "ghost"))
    s.check(r.error_code == 0 and r.members[0].error_code == E.UNKNOWN_MEMBER_ID, f"{r}")


@rule("CLS-LEAVE-01", "LeaveGroup", "NONE",
      "A member leaving a Stable group starts a rebalance: the others get REBALANCE_IN_PROGRESS and form a new generation without it.",
      source="kip-415")
async def leave_rebalances(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    r = await w2.leave(g, m2, reason="shutting down")
    s.check(r.error_code == 0 and r.members[0].error_code == 0, f"{r}")
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    j = await w1.join(g, m1)
    s.check(j.generation_id == 3 and [m.member_id for m in j.members] == [m1], f"{j}")


@rule("CLS-LEAVE-11", "LeaveGroup", "NONE",
      "A static member can be removed by its group.instance.id alone (an administrator's LeaveGroup).", source="kip-345")
async def leave_by_instance(s: Session) -> None:
    g = s.group()
    await static_member(s, g, await s.client("w1"), "inst-1")
    admin = await s.client("admin")
    r = await admin.leave(g, ("", "inst-1"))
    s.check(r.error_code == 0 and r.members[0].error_code == 0, f"{r}")
    d = await admin.describe(g)
    s.check((d.groups[0].group_state, d.groups[0].members) == ("Empty", []), f"{d}")


@rule("CLS-LEAVE-05", "LeaveGroup", "NONE",
      "When the last member leaves (v0-2: one member id), the group becomes Empty.")
async def leave_last_member(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await first_member(s, g, w1)
    r = await w1.leave(g, m1, version=2)
    s.check(r.error_code == 0, f"{r}")
    d = await w1.describe(g)
    s.check((d.groups[0].group_state, d.groups[0].members) == ("Empty", []), f"{d}")


@rule("CLS-LEAVE-12", "LeaveGroup", "NONE",
      "A member that leaves while its JoinGroup is parked has that JoinGroup answered UNKNOWN_MEMBER_ID.")
async def leave_with_parked_join(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    parked = await w1.join_later(g, m1)
    r = await (await s.client("w1")).leave(g, m1)
    s.check(r.members[0].error_code == 0, f"{r}")
    j = await s.result(parked)
    s.check(j.error_code == E.UNKNOWN_MEMBER_ID, f"{j}")


# ============================================================================ DescribeGroups

@rule("CLS-DESC-01", "DescribeGroups", "GROUP_ID_NOT_FOUND",
      "DescribeGroups v6 answers a group that does not exist with GROUP_ID_NOT_FOUND and the message 'Group <id> not found.'", source="kip-1043",
      pins={"DescribeGroups": ("Groups[*].ErrorMessage",)})
async def describe_unknown_v6(s: Session) -> None:
    g = s.group()
    d = await (await s.client("admin")).describe(g)
    x = d.groups[0]
    s.check((x.error_code, x.error_message) == (E.GROUP_ID_NOT_FOUND, f"Group {g} not found."), f"{d}")


probe("CLS-DESC-02", "DescribeGroups", "NONE",
      "DescribeGroups v0-5 answers a group that does not exist with no error and the state Dead.",
      send=lambda c, g, m: c.describe(g, version=5),
      by="admin", answer=lambda r: (r.groups[0].error_code, r.groups[0].group_state),
      want=(0, "Dead"))


@rule("CLS-STATE-03", "DescribeGroups", "NONE",
      "A Stable group is described with its state, protocol type, chosen protocol and every member's id, client id, host, metadata and assignment.")
async def describe_stable(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    x = (await (await s.client("admin")).describe(g)).groups[0]
    s.check((x.group_state, x.protocol_type, x.protocol_data) == ("Stable", "connect", "sessioned"), f"{x}")
    got = {m.member_id: (m.client_id, m.member_assignment) for m in x.members}
    s.check(got == {m1: ("w1", b"A1"), m2: ("w2", b"A2")}, f"{x}")


@rule("CLS-DESC-03", "DescribeGroups", "NONE",
      "DescribeGroups v3+ with IncludeAuthorizedOperations reports the operations allowed on the group.",
      pins={"DescribeGroups": ("Groups[*].AuthorizedOperations",)})
async def describe_operations(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    x = (await (await s.client("admin")).describe(g, ops=True)).groups[0]
    s.check(x.authorized_operations > 0, f"{x}")


@rule("CLS-DESC-04", "DescribeGroups", "NONE",
      "A group awaiting its SyncGroups (CompletingRebalance) is described without member metadata or protocol data.")
async def describe_completing(s: Session) -> None:
    g = s.group()
    await joined_not_synced(s, g, await s.client("w1"))
    x = (await (await s.client("admin")).describe(g)).groups[0]
    s.check((x.group_state, x.protocol_data, x.members[0].member_metadata) == ("CompletingRebalance", "", b""), f"{x}")


@rule("CLS-DESC-05", "DescribeGroups", "NONE",
      "One DescribeGroups request describes several groups, each on its own (known and unknown alike).")
async def describe_batch(s: Session) -> None:
    g, absent = s.group("g1"), s.group("g2")
    await first_member(s, g, await s.client("w1"))
    d = await (await s.client("admin")).describe(g, absent)
    s.check([(x.group_id, x.error_code) for x in d.groups] == [(g, 0), (absent, E.GROUP_ID_NOT_FOUND)], f"{d}")


# ============================================================================ ListGroups

@rule("CLS-LIST-01", "ListGroups", "NONE",
      "ListGroups lists a classic group with its protocol type, state (v4+) and type 'classic' (v5+).")
async def list_groups(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    r = await (await s.client("admin")).list_groups()
    mine = [x for x in r.groups if x.group_id == g]
    s.check([(x.protocol_type, x.group_state, x.group_type) for x in mine] == [("connect", "Stable", "classic")], f"{r}")


@rule("CLS-LIST-02", "ListGroups", "NONE",
      "ListGroups v4+ with a states filter lists only groups in those states (compared case-insensitively).")
async def list_groups_by_state(s: Session) -> None:
    stable, empty = s.group("g1"), s.group("g2")
    await first_member(s, stable, await s.client("w1"))
    admin = await s.client("admin")
    await admin.commit(empty, {EVENTS: {0: 1}})  # a simple commit makes an Empty group
    r1 = await admin.list_groups(states=["stable"])
    r2 = await admin.list_groups(states=["Empty"])
    s.check(stable in [x.group_id for x in r1.groups] and empty not in [x.group_id for x in r1.groups], f"{r1}")
    s.check(empty in [x.group_id for x in r2.groups] and stable not in [x.group_id for x in r2.groups], f"{r2}")


@rule("CLS-LIST-03", "ListGroups", "NONE",
      "ListGroups v5 with a types filter lists only groups of those types.")
async def list_groups_by_type(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    admin = await s.client("admin")
    r1 = await admin.list_groups(types=["classic"])  # the type as KIP-848 names it: the requirement pins no case folding
    r2 = await admin.list_groups(types=["consumer"])
    s.check(g in [x.group_id for x in r1.groups] and g not in [x.group_id for x in r2.groups], f"{r1} {r2}")


@rule("CLS-LIST-04", "ListGroups", "NONE", "ListGroups v0-3 lists groups with their protocol type (no state, no type).")
async def list_groups_v3(s: Session) -> None:
    g = s.group()
    await first_member(s, g, await s.client("w1"))
    r = await (await s.client("admin")).list_groups(version=3)
    s.check(any(x.group_id == g and x.protocol_type == "connect" for x in r.groups), f"{r}")


# ============================================================================ OffsetCommit

def _partition_errors(r: object) -> list[int]:
    return [p.error_code for t in r.topics for p in t.partitions]  # type: ignore[attr-defined]


probe("CLS-COMMIT-01", "OffsetCommit", "UNKNOWN_TOPIC_OR_PARTITION",
      "An OffsetCommit for a topic that does not exist answers its partitions UNKNOWN_TOPIC_OR_PARTITION.",
      send=lambda c, g, m: c.commit(g, {"no-such-topic": {0: 5, 1: 6}}),
      by="admin", answer=_partition_errors, want=[3, 3])


@rule("CLS-COMMIT-02", "OffsetCommit", "UNKNOWN_TOPIC_OR_PARTITION",
      "An OffsetCommit for a partition beyond the topic's partitions answers it UNKNOWN_TOPIC_OR_PARTITION; the others are committed.")
async def commit_unknown_partition(s: Session) -> None:
    r = await (await s.client("admin")).commit(s.group(), {EVENTS: {2: 5, 3: 5}})
    got = {p.partition_index: p.error_code for t in r.topics for p in t.partitions}
    s.check(got == {2: 0, 3: E.UNKNOWN_TOPIC_OR_PARTITION}, f"{r}")


probe("CLS-COMMIT-03", "OffsetCommit", "UNKNOWN_TOPIC_ID",
      "An OffsetCommit v10 naming a topic id that does not exist answers its partitions UNKNOWN_TOPIC_ID.", source="kip-848",
      send=lambda c, g, m: c.commit(g, {"x": {0: 5}}, version=10, topic_ids={"x": uuid.UUID(int=42)}),
      by="admin", answer=_partition_errors, want=[E.UNKNOWN_TOPIC_ID])


probe("CLS-COMMIT-04", "OffsetCommit", "GROUP_ID_NOT_FOUND",
      "An OffsetCommit v9+ with a generation to a group that does not exist is refused with GROUP_ID_NOT_FOUND.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="w1-x", generation=1),
      answer=_partition_errors, want=[E.GROUP_ID_NOT_FOUND])


probe("CLS-COMMIT-05", "OffsetCommit", "ILLEGAL_GENERATION",
      "An OffsetCommit v0-8 with a generation to a group that does not exist is refused with ILLEGAL_GENERATION.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="w1-x", generation=1, version=8),
      answer=_partition_errors, want=[E.ILLEGAL_GENERATION])


probe("CLS-COMMIT-06", "OffsetCommit", "UNKNOWN_MEMBER_ID",
      "An OffsetCommit from a member the group does not know is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="w2-not-a-member", generation=1),
      setup="member", by="w2", answer=_partition_errors, want=[E.UNKNOWN_MEMBER_ID])


probe("CLS-COMMIT-07", "OffsetCommit", "ILLEGAL_GENERATION",
      "An OffsetCommit with a generation other than the group's is refused with ILLEGAL_GENERATION.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id=m, generation=7),
      setup="member", answer=_partition_errors, want=[E.ILLEGAL_GENERATION])


probe("CLS-COMMIT-08", "OffsetCommit", "REBALANCE_IN_PROGRESS",
      "An OffsetCommit while the group awaits its SyncGroups (CompletingRebalance) is refused with REBALANCE_IN_PROGRESS.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id=m, generation=1),
      setup="joined", answer=_partition_errors, want=[E.REBALANCE_IN_PROGRESS])


probe("CLS-COMMIT-09", "OffsetCommit", "UNKNOWN_MEMBER_ID",
      "A commit without member or generation (an admin's) to a group that has members is refused with UNKNOWN_MEMBER_ID.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}),
      setup="member", by="admin", answer=_partition_errors, want=[E.UNKNOWN_MEMBER_ID])


probe("CLS-COMMIT-10", "OffsetCommit", "OFFSET_METADATA_TOO_LARGE",
      "A committed offset whose metadata exceeds offset.metadata.max.bytes is refused with OFFSET_METADATA_TOO_LARGE.",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, metadata="m" * 4097),
      by="admin", answer=_partition_errors, want=[E.OFFSET_METADATA_TOO_LARGE])


probe("CLS-COMMIT-11", "OffsetCommit", "FENCED_INSTANCE_ID",
      "An OffsetCommit naming a static member's group.instance.id with another member id is refused with FENCED_INSTANCE_ID.", source="kip-345",
      send=lambda c, g, m: c.commit(g, {EVENTS: {0: 5}}, member_id="inst-1-impostor",
                                         generation=1, instance="inst-1"),
      setup="static", by="w2", answer=_partition_errors, want=[E.FENCED_INSTANCE_ID])


@rule("CLS-COMMIT-12", "OffsetCommit", "NONE",
      "A commit without member or generation to a group that does not exist creates it (Empty) and stores the offsets.")
async def commit_simple(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    r = await admin.commit(g, {EVENTS: {0: 5}})
    s.check(_partition_errors(r) == [0], f"{r}")
    f = await admin.fetch_offsets(g, {EVENTS: [0]})
    s.check(f.topics[0].partitions[0].committed_offset == 5, f"{f}")
    s.check((await admin.describe(g)).groups[0].group_state == "Empty", "an Empty group")


@rule("CLS-COMMIT-13", "OffsetCommit", "NONE",
      "A member of a Stable group commits with its generation; the offset, leader epoch and metadata are stored.")
async def commit_member(s: Session) -> None:
    g = s.group()
    w1 = await s.client("w1")
    m1 = await first_member(s, g, w1)
    r = await w1.commit(g, {EVENTS: {1: 42}}, member_id=m1, generation=1, metadata="note", leader_epoch=3)
    s.check(_partition_errors(r) == [0], f"{r}")
    p = (await w1.fetch_offsets(g, {EVENTS: [1]})).topics[0].partitions[0]
    s.check((p.committed_offset, p.committed_leader_epoch, p.metadata) == (42, 3, "note"), f"{p}")


@rule("CLS-COMMIT-14", "OffsetCommit", "NONE",
      "OffsetCommit v10 and OffsetFetch v10 name topics by id.", source="kip-848")
async def commit_by_topic_id(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    r = await admin.commit(g, {EVENTS: {0: 9}}, version=10, topic_ids={EVENTS: EVENTS_ID})
    s.check(_partition_errors(r) == [0] and r.topics[0].topic_id == EVENTS_ID, f"{r}")
    f = await admin.fetch_offsets(g, {EVENTS: [0]}, version=10, topic_ids={EVENTS: EVENTS_ID})
    s.check(f.groups[0].topics[0].partitions[0].committed_offset == 9, f"{f}")


# ============================================================================ OffsetFetch

@rule("CLS-FETCH-02", "OffsetFetch", "NONE", "OffsetFetch returns the committed offsets of the partitions asked for.")
async def fetch_committed(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    await admin.commit(g, {EVENTS: {0: 5, 2: 7}})
    f = await admin.fetch_offsets(g, {EVENTS: [0, 2]})
    s.check([p.committed_offset for p in f.topics[0].partitions] == [5, 7] and f.error_code == 0, f"{f}")


@rule("CLS-FETCH-03", "OffsetFetch", "NONE",
      "A partition without a committed offset is answered offset -1, leader epoch -1 and empty metadata.")
async def fetch_uncommitted(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    await admin.commit(g, {EVENTS: {0: 5}})
    p = (await admin.fetch_offsets(g, {EVENTS: [1]})).topics[0].partitions[0]
    s.check((p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code) == (-1, -1, "", 0), f"{p}")


@rule("CLS-FETCH-04", "OffsetFetch", "NONE",
      "OffsetFetch for a group that does not exist answers without error, every partition at offset -1.")
async def fetch_unknown_group(s: Session) -> None:
    f = await (await s.client("admin")).fetch_offsets(s.group(), {EVENTS: [0]})
    s.check(f.error_code == 0 and f.topics[0].partitions[0].committed_offset == -1, f"{f}")


@rule("CLS-FETCH-05", "OffsetFetch", "NONE", "OffsetFetch with null topics returns every committed offset of the group.")
async def fetch_all_topics(s: Session) -> None:
    g = s.group()
    admin = await s.client("admin")
    await admin.commit(g, {EVENTS: {0: 5, 1: 6}})
    f = await admin.fetch_offsets(g, None)
    got = sorted((t.name, p.partition_index, p.committed_offset) for t in f.topics for p in t.partitions)
    s.check(got == [(EVENTS, 0, 5), (EVENTS, 1, 6)], f"{f}")


@rule("CLS-FETCH-06", "OffsetFetch", "NONE",
      "OffsetFetch v8+ fetches the offsets of several groups in one request, each answered on its own.", source="kip-709")
async def fetch_batched(s: Session) -> None:
    g1, g2 = s.group("g1"), s.group("g2")
    admin = await s.client("admin")
    await admin.commit(g1, {EVENTS: {0: 5}})
    await admin.commit(g2, {EVENTS: {0: 8}})
    f = await admin.fetch_offsets(g1, {EVENTS: [0]}, version=8, more={g2: {EVENTS: [0]}})
    got = [(g.group_id, g.topics[0].partitions[0].committed_offset) for g in f.groups]
    s.check(got == [(g1, 5), (g2, 8)], f"{f}")


probe("CLS-FETCH-01", "OffsetFetch", "UNKNOWN_TOPIC_ID",
      "OffsetFetch v10 naming a topic id that does not exist answers its partitions UNKNOWN_TOPIC_ID.", source="kip-848",
      send=lambda c, g, m: c.fetch_offsets(g, {"x": [0, 1]}, version=10, topic_ids={"x": uuid.UUID(int=42)}),
      setup="member", by="admin",  # an existing group: the requirement is about the topic id alone
      answer=lambda r: [p.error_code for p in r.groups[0].topics[0].partitions], want=[100, 100])


# ============================================================================ documented scenarios

@rule("CLS-JOIN-31", "JoinGroup", "NONE",
      "Two Connect workers form a group: both join within the initial delay with Connect's metadata, the first is the leader and gets both workers' metadata, the follower's SyncGroup waits for the leader's, both get their assignments.",
      source="spec-002", settings=DELAY, also=("CLS-JOIN-26", "CLS-SYNC-05"))
async def scenario_two_workers(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("worker-1"), await s.client("worker-2")
    m1, p1 = await w1.new_member(g, protocols=CONNECT)
    m2, p2 = await w2.new_member(g, protocols=CONNECT)
    await s.advance(6000)
    j1, j2 = await s.result(p1), await s.result(p2)
    s.check((j1.leader, j1.protocol_name, len(j1.members), j2.members) == (m1, "sessioned", 2, []), f"{j1} {j2}")
    follower = await w2.sync_later(g, m2, 1)
    await w1.sync(g, m1, 1, assignments={m1: b"conn-a", m2: b"conn-a-task-0"})
    s.check((await s.result(follower)).assignment == b"conn-a-task-0", "the follower's share")


@rule("CLS-JOIN-31.2", "JoinGroup", "NONE",
      "Two Connect workers form a group on a coordinator with no initial delay: the first forms a generation alone, the second's join starts a rebalance the first learns of from its heartbeat; rejoined, the first is the leader and gets both workers' metadata, the follower's SyncGroup waits for the leader's, both get their assignments.",
      source="spec-002", also=("CLS-JOIN-26", "CLS-SYNC-05"))
async def scenario_two_workers_no_delay(s: Session) -> None:
    # The same requirement as CLS-JOIN-31 without its initial delay: it is not about the delay.
    g = s.group()
    w1, w2 = await s.client("worker-1"), await s.client("worker-2")
    m1 = await first_member(s, g, w1, protocols=CONNECT)
    m2, j1, j2 = await second_member_joined(s, g, w1, m1, w2, protocols=CONNECT)
    s.check((j1.leader, j1.protocol_name, len(j1.members), j2.members) == (m1, "sessioned", 2, []),  # type: ignore[attr-defined]
            f"{j1} {j2}")
    follower = await w2.sync_later(g, m2, 2)
    await w1.sync(g, m1, 2, assignments={m1: b"conn-a", m2: b"conn-a-task-0"})
    s.check((await s.result(follower)).assignment == b"conn-a-task-0", "the follower's share")


@rule("CLS-JOIN-32", "JoinGroup", "NONE",
      "A worker joins a Stable group: every member learns of the rebalance from its heartbeat, rejoins, and a generation of three follows.",
      source="kip-415")
async def scenario_worker_joins(s: Session) -> None:
    g = s.group()
    w1, w2, w3 = await s.client("w1"), await s.client("w2"), await s.client("w3")
    m1, m2 = await two_members(s, g, w1, w2)
    m3, p3 = await w3.new_member(g)
    for c, m in ((w1, m1), (w2, m2)):
        s.check((await c.heartbeat(g, m, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    p1 = await w1.join_later(g, m1)
    j2 = await w2.join(g, m2)
    j1, j3 = await s.result(p1), await s.result(p3)
    s.check({j.generation_id for j in (j1, j2, j3)} == {3} and j1.leader == m1 and len(j1.members) == 3, f"{j1}")


@rule("CLS-LEAVE-01.2", "LeaveGroup", "NONE",
      "A worker leaves a group of three: the remaining two rejoin and form the next generation.", source="kip-415",
      also=("CLS-LEAVE-01",))
async def scenario_worker_leaves(s: Session) -> None:
    g = s.group()
    w1, w2, w3 = await s.client("w1"), await s.client("w2"), await s.client("w3")
    m1, m2 = await two_members(s, g, w1, w2)
    m3, p3 = await w3.new_member(g)
    p1 = await w1.join_later(g, m1)
    await w2.join(g, m2)
    await s.result(p1)
    await s.result(p3)
    r = await w3.leave(g, m3)
    s.check(r.members[0].error_code == 0, f"{r}")
    s.check((await w1.heartbeat(g, m1, 3)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    p1 = await w1.join_later(g, m1)
    await w2.join(g, m2)
    j1 = await s.result(p1)
    s.check(j1.generation_id == 4 and sorted(m.member_id for m in j1.members) == sorted([m1, m2]), f"{j1}")


@rule("CLS-JOIN-33", "JoinGroup", "NONE",
      "A worker bounces (restarts without leaving): its new incarnation joins with a new id, the old id never rejoins and is dropped when the join phase times out.",
      source="kip-415")
async def scenario_worker_bounces(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2, session_ms=MIN_SESSION, rebalance_ms=4000)
    await w2.close()  # the crash: no LeaveGroup
    again = await s.client("w2")
    m2b, pb = await again.new_member(g, session_ms=MIN_SESSION, rebalance_ms=4000)
    s.check(m2b != m2, "a new member id")
    s.check((await w1.heartbeat(g, m1, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    p1 = await w1.join_later(g, m1, session_ms=MIN_SESSION, rebalance_ms=4000)
    await s.advance(4000)  # the old incarnation never rejoined
    j1, jb = await s.result(p1), await s.result(pb)
    s.check(j1.generation_id == 3 and sorted(m.member_id for m in j1.members) == sorted([m1, m2b]), f"{j1}")


@rule("CLS-LEAD-04", "LeaveGroup", "NONE",
      "The leader leaves: the remaining worker rejoins and leads the next generation.", source="kip-415")
async def scenario_leader_leaves(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2)
    await w1.leave(g, m1)
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    j = await w2.join(g, m2)
    s.check((j.generation_id, j.leader, len(j.members)) == (3, m2, 1), f"{j}")


@rule("CLS-VOTE-04", "JoinGroup", "NONE",
      "A rolling upgrade of the protocol: the group keeps the old protocol until every member supports the new one, then switches on the next rebalance.",
      source="spec-002")
async def scenario_rolling_upgrade(s: Session) -> None:
    g = s.group()
    old = CONNECT[1:]  # compatible, default
    w1, w2 = await s.client("w1"), await s.client("w2")
    m1, m2 = await two_members(s, g, w1, w2, protocols=old)
    # w1 upgrades: its metadata changes, a rebalance follows, but w2 cannot speak sessioned.
    p1 = await w1.join_later(g, m1, protocols=CONNECT)
    j2 = await w2.join(g, m2, protocols=old)
    j1 = await s.result(p1)
    s.check((j1.generation_id, j1.protocol_name) == (3, "compatible"), f"{j1}")
    await w1.sync(g, m1, 3, assignments={}, protocol_name="compatible")
    await w2.sync(g, m2, 3, protocol_name="compatible")
    # w2 upgrades too: now every member supports sessioned and votes for it.
    p2 = await w2.join_later(g, m2, protocols=CONNECT)
    s.check((await w1.heartbeat(g, m1, 3)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    j1 = await w1.join(g, m1, protocols=CONNECT)
    j2 = await s.result(p2)
    s.check((j1.generation_id, j1.protocol_name, j2.protocol_name) == (4, "sessioned", "sessioned"), f"{j1}")


@rule("CLS-VOTE-03", "JoinGroup", "NONE",
      "A worker that only speaks the eager protocol ('default') makes the whole group use it.",
      source="kip-415", settings=DELAY)
async def scenario_eager_worker(s: Session) -> None:
    g = s.group()
    _, p1 = await (await s.client("w1")).new_member(g, protocols=CONNECT)
    _, p2 = await (await s.client("w2")).new_member(g, protocols=CONNECT[2:])
    await s.advance(6000)
    j1, j2 = await s.result(p1), await s.result(p2)
    s.check((j1.protocol_name, j2.protocol_name) == ("default", "default"), f"{j1} {j2}")
