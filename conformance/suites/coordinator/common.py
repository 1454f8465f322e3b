"""Steps several classic coordinator cases share."""

from __future__ import annotations

from typing import Any

from fakebroker.protocol.error_codes import ErrorCode, error_text
from fakebroker.testing.client import Pending
from fakebroker.testing.member import ScriptedMember

from ...harness.context import CoordinatorContext, Generation
from ...harness.outcomes import Violation


async def stable_group(ctx: CoordinatorContext, n: int, **kw: Any) -> tuple[list[ScriptedMember], Generation]:
    """n members (m1..mn) joined and synced: a Stable group."""
    members = [await ctx.member(f"m{i}") for i in range(1, n + 1)]
    gen = await ctx.form_group(members, **kw)
    return members, gen


def leader_and_followers(members: list[ScriptedMember], gen: Generation) -> tuple[ScriptedMember, list[ScriptedMember]]:
    leader = [m for m in members if m.member_id == gen.leader]
    if len(leader) != 1:
        raise Violation("leader of the generation", "exactly one of the members",
                        f"{gen.leader!r} among {[m.member_id for m in members]}")
    return leader[0], [m for m in members if m is not leader[0]]


async def stable_pair(ctx: CoordinatorContext, **kw: Any) -> tuple[ScriptedMember, ScriptedMember, Generation]:
    """A Stable group of two (m1, m2): its leader, its follower and the generation they synced."""
    members, gen = await stable_group(ctx, 2, **kw)
    leader, (follower,) = leader_and_followers(members, gen)
    return leader, follower, gen


async def joined_pair(ctx: CoordinatorContext) -> tuple[ScriptedMember, ScriptedMember, Generation]:
    """Two members (m1, m2) joined and not yet synced (CompletingRebalance): the leader, the
    follower and the generation they were answered."""
    members = [await ctx.member(f"m{i}") for i in (1, 2)]
    gen = await ctx.join_all(members)
    leader, (follower,) = leader_and_followers(members, gen)
    return leader, follower, gen


async def rebalance_round(ctx: CoordinatorContext, members: list[ScriptedMember],
                          **join_kw: Any) -> Generation:
    """Every member rejoins (with its current id) and syncs: the next generation."""
    gen = await ctx.join_all(members, new=False, **join_kw)
    return await ctx.sync_all(gen, members)


def distinct_previous(ctx: CoordinatorContext, previous: Generation, current: Generation) -> int:
    """The generation a group answered before ``current``, which must differ from it."""
    ctx.check(previous.generation != current.generation, "generation after a rebalance",
              f"other than {previous.generation}", current.generation)
    return previous.generation


async def heartbeat_error(ctx: CoordinatorContext, m: ScriptedMember, **kw: Any) -> int:
    r = await m.heartbeat(**kw)
    return int(r.error_code)


async def answered_without_rebalance(ctx: CoordinatorContext, pending: Pending, witness: ScriptedMember,
                                     what: str) -> Any:
    """Wait for ``pending`` (a JoinGroup the group should answer without a rebalance) within
    the target's rebalance timeout, the ``witness`` member heartbeating meanwhile: a
    REBALANCE_IN_PROGRESS heartbeat is a rebalance seen, and fails ``what``; an answer held
    for a while is no failure by itself. Returns the response; a timeout says what was seen."""
    seen: list[str] = []
    step = max(1, min(1000, ctx.session_ms // 4))
    spent = 0
    while True:
        answered = await ctx.until_answered([pending], 0 if spent == 0 else step)
        hb = await witness.heartbeat()
        seen.append(error_text(hb.error_code))
        if hb.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise Violation(what, "answered without a rebalance",
                            f"a rebalance started: {witness.name}'s heartbeat answered "
                            f"REBALANCE_IN_PROGRESS after {spent} ms")
        if answered:
            return await pending.response()
        spent += step
        if spent >= ctx.rebalance_ms:
            raise Violation(what, f"answered within the rebalance timeout ({ctx.rebalance_ms} ms)",
                            f"no answer after {spent} ms; {witness.name}'s heartbeats meanwhile: "
                            f"{', '.join(sorted(set(seen)))} (no rebalance seen)")
