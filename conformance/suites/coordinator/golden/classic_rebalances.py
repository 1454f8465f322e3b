"""Golden scenarios of whole Connect rebalances the protocol documents: workers joining,
leaving and bouncing, the leader leaving, a rolling upgrade of the protocol."""

from __future__ import annotations

import uuid
from typing import Any

from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.testing.client import ScriptedClient

from .classic_common import (CONNECT, DELAY, EVENTS, EVENTS_ID, MIN_SESSION, connect_metadata,
                             first_member, joined_not_synced, probe, rebalancing,
                             second_member_joined, static_member, two_members)
from .registry import golden
from .session import Session


# ============================================================================ documented scenarios

async def connect_pair_assigned(s: Session, g: str, leader: tuple[ScriptedClient, str, Any],
                                follower: tuple[ScriptedClient, str, Any]) -> None:
    """Two Connect workers answered the same generation (client, member id, JoinGroup answer
    each): the first leads under 'sessioned' with both workers' metadata, the follower gets
    none; the follower's SyncGroup waits for the leader's, which gives it its share."""
    (w1, m1, j1), (w2, m2, j2) = leader, follower
    s.check((j1.leader, j1.protocol_name, len(j1.members), j2.members) == (m1, "sessioned", 2, []),
            f"{j1} {j2}")
    parked = await w2.sync_later(g, m2, j1.generation_id)
    await w1.sync(g, m1, j1.generation_id, assignments={m1: b"conn-a", m2: b"conn-a-task-0"})
    s.check((await s.result(parked)).assignment == b"conn-a-task-0", "the follower's share")


@golden("CLS-JOIN-31", "JoinGroup", "NONE",
        "Two Connect workers form a group: both join within the initial delay with Connect's metadata, the first is the leader and gets both workers' metadata, the follower's SyncGroup waits for the leader's, both get their assignments.", settings=DELAY)
async def scenario_two_workers(s: Session) -> None:
    g = s.group()
    w1, w2 = await s.client("worker-1"), await s.client("worker-2")
    m1, p1 = await w1.new_member(g, protocols=CONNECT)
    m2, p2 = await w2.new_member(g, protocols=CONNECT)
    await s.advance(6000)
    j1, j2 = await s.result(p1), await s.result(p2)
    await connect_pair_assigned(s, g, (w1, m1, j1), (w2, m2, j2))


@golden("CLS-JOIN-31.2", "JoinGroup", "NONE",
        "Two Connect workers form a group on a coordinator with no initial delay: the first forms a generation alone, the second's join starts a rebalance the first learns of from its heartbeat; rejoined, the first is the leader and gets both workers' metadata, the follower's SyncGroup waits for the leader's, both get their assignments.")
async def scenario_two_workers_no_delay(s: Session) -> None:
    # The same requirement as CLS-JOIN-31 without its initial delay: it is not about the delay.
    g = s.group()
    w1, w2 = await s.client("worker-1"), await s.client("worker-2")
    m1, m2, j1, j2 = await second_member_joined(s, g, w1, w2, protocols=CONNECT)
    await connect_pair_assigned(s, g, (w1, m1, j1), (w2, m2, j2))


async def third_joins(s: Session, *, heartbeats: bool) -> tuple[
        str, tuple[ScriptedClient, ScriptedClient, ScriptedClient], tuple[str, str, str], tuple[Any, Any, Any]]:
    """w3 asks to join a Stable group of w1 and w2 (generation 2); w1 and w2 (after learning of
    the rebalance from their heartbeats, with ``heartbeats``) rejoin. Returns the group, the
    three clients, their member ids and their JoinGroup answers (generation 3)."""
    g = s.group()
    w1, w2, w3 = await s.client("w1"), await s.client("w2"), await s.client("w3")
    m1, m2 = await two_members(s, g, w1, w2)
    m3, p3 = await w3.new_member(g)
    if heartbeats:
        for c, m in ((w1, m1), (w2, m2)):
            s.check((await c.heartbeat(g, m, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    p1 = await w1.join_later(g, m1)
    j2 = await w2.join(g, m2)
    j1, j3 = await s.result(p1), await s.result(p3)
    return g, (w1, w2, w3), (m1, m2, m3), (j1, j2, j3)


@golden("CLS-JOIN-32", "JoinGroup", "NONE",
        "A worker joins a Stable group: every member learns of the rebalance from its heartbeat, rejoins, and a generation of three follows.")
async def scenario_worker_joins(s: Session) -> None:
    _, _, (m1, _, _), (j1, j2, j3) = await third_joins(s, heartbeats=True)
    s.check({j.generation_id for j in (j1, j2, j3)} == {3} and j1.leader == m1 and len(j1.members) == 3, f"{j1}")


@golden("CLS-LEAVE-01.2", "LeaveGroup", "NONE",
        "A worker leaves a group of three: the remaining two rejoin and form the next generation.")
async def scenario_worker_leaves(s: Session) -> None:
    g, (w1, w2, w3), (m1, m2, m3), _ = await third_joins(s, heartbeats=False)
    r = await w3.leave(g, m3)
    s.check(r.members[0].error_code == 0, f"{r}")
    s.check((await w1.heartbeat(g, m1, 3)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    p1 = await w1.join_later(g, m1)
    await w2.join(g, m2)
    j1 = await s.result(p1)
    s.check(j1.generation_id == 4 and sorted(m.member_id for m in j1.members) == sorted([m1, m2]), f"{j1}")


@golden("CLS-JOIN-33", "JoinGroup", "NONE",
        "A worker bounces (restarts without leaving): its new incarnation joins with a new id, the old id never rejoins and is dropped when the join phase times out.")
async def scenario_worker_bounces(s: Session) -> None:
    g, w1, w2 = await s.pair()
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


@golden("CLS-LEAD-04", "LeaveGroup", "NONE",
        "The leader leaves: the remaining worker rejoins and leads the next generation.")
async def scenario_leader_leaves(s: Session) -> None:
    g, w1, w2 = await s.pair()
    m1, m2 = await two_members(s, g, w1, w2)
    await w1.leave(g, m1)
    s.check((await w2.heartbeat(g, m2, 2)).error_code == E.REBALANCE_IN_PROGRESS, "rebalance")
    j = await w2.join(g, m2)
    s.check((j.generation_id, j.leader, len(j.members)) == (3, m2, 1), f"{j}")


@golden("CLS-VOTE-04", "JoinGroup", "NONE",
        "A rolling upgrade of the protocol: the group keeps the old protocol until every member supports the new one, then switches on the next rebalance.")
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


@golden("CLS-VOTE-03", "JoinGroup", "NONE",
        "A worker that only speaks the eager protocol ('default') makes the whole group use it.", settings=DELAY)
async def scenario_eager_worker(s: Session) -> None:
    g = s.group()
    _, p1 = await (await s.client("w1")).new_member(g, protocols=CONNECT)
    _, p2 = await (await s.client("w2")).new_member(g, protocols=CONNECT[2:])
    await s.advance(6000)
    j1, j2 = await s.result(p1), await s.result(p2)
    s.check((j1.protocol_name, j2.protocol_name) == ("default", "default"), f"{j1} {j2}")
