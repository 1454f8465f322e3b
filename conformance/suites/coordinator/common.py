"""Steps several classic coordinator cases share."""

from __future__ import annotations

from typing import Any

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


async def rebalance_round(ctx: CoordinatorContext, members: list[ScriptedMember],
                          **join_kw: Any) -> Generation:
    """Every member rejoins (with its current id) and syncs: the next generation."""
    gen = await ctx.join_all(members, new=False, **join_kw)
    return await ctx.sync_all(gen, members)


async def heartbeat_error(ctx: CoordinatorContext, m: ScriptedMember, **kw: Any) -> int:
    r = await m.heartbeat(**kw)
    return int(r.error_code)
