"""Kafka's server-side ``uniform`` assignor (KIP-848's default), for any unit.

Balance first, then stickiness: no member gets more than one unit above another that
could have taken it, and within that bound members keep what the current target gives
them.

Homogeneous groups (every member subscribes to the same keys) follow Kafka's homogeneous
builder: with T units and M members each member's quota is T // M, the first T % M members
(in member-id order) get one more; each member keeps its current units up to its quota
(in unit order); the units nobody kept, then the ones over quota, fill the members below
quota in member-id order.

Heterogeneous groups keep every still-subscribed unit, give each free unit to the eligible
member holding the fewest (ties: member id), then move units from members more than one
above the least-loaded eligible member, for at most ``MAX_BALANCE_ROUNDS`` rounds. This
has the properties of Kafka's heterogeneous builder, not its exact moves.
"""

from __future__ import annotations

from itertools import filterfalse

from .base import AssignmentSpec, AssignorError, subscribed_units
from ..units import U

NAME = "uniform"
MAX_BALANCE_ROUNDS = 16


class UniformAssignor:
    name = NAME

    def assign(self, spec: AssignmentSpec[U]) -> dict[str, frozenset[U]]:
        if not spec.members:
            return {}
        if spec.is_homogeneous():
            return _homogeneous(spec)
        return _heterogeneous(spec)


def _homogeneous(spec: AssignmentSpec[U]) -> dict[str, frozenset[U]]:
    members = sorted(spec.members, key=lambda m: m.member_id)
    universe = subscribed_units(members[0], spec.catalog)
    if not universe:
        return {m.member_id: frozenset() for m in members}
    # Set operations in C over the units (they run once per member or once in all); only
    # the free units are listed in universe order.
    valid = frozenset(universe)
    held_anywhere = frozenset().union(*(m.current for m in members)) & valid
    unassigned: list[U] = list(filterfalse(held_anywhere.__contains__, universe))
    quota, extra = divmod(len(universe), len(members))
    out: dict[str, list[U]] = {}
    kept_whole: dict[str, frozenset[U]] = {}  # members keeping exactly their current units
    room: list[tuple[str, int]] = []
    claimed: set[U] = set()  # a unit two members claim is kept by the first only
    for member in members:
        limit = quota + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        keep = sorted((member.current & valid) - claimed)
        claimed.update(keep)
        out[member.member_id] = keep[:limit]
        unassigned.extend(keep[limit:])
        if len(keep) < limit:
            room.append((member.member_id, limit - len(keep)))
        elif len(keep) == limit == len(member.current):
            kept_whole[member.member_id] = member.current  # handed back, not copied
    cursor = 0
    for member_id, space in room:
        take = unassigned[cursor:cursor + space]
        out[member_id].extend(take)
        cursor += len(take)
    if cursor < len(unassigned):
        raise AssignorError(f"{len(unassigned) - cursor} units were left unassigned")
    return {mid: kept_whole[mid] if mid in kept_whole else frozenset(units)
            for mid, units in sorted(out.items())}


def _heterogeneous(spec: AssignmentSpec[U]) -> dict[str, frozenset[U]]:
    members = sorted(spec.members, key=lambda m: m.member_id)
    eligible: dict[U, list[str]] = {}
    order: list[U] = []
    for key in sorted(spec.catalog):
        subscribers = [m.member_id for m in members if key in m.subscription]
        for unit in spec.catalog[key]:
            if subscribers and unit not in eligible:
                eligible[unit] = subscribers
                order.append(unit)
    owner: dict[U, str] = {}
    for member in members:
        for unit in sorted(member.current):
            if member.member_id in eligible.get(unit, ()) and unit not in owner:
                owner[unit] = member.member_id
    load = {m.member_id: 0 for m in members}
    for member_id in owner.values():
        load[member_id] += 1

    def least(candidates: list[str]) -> str:
        return min(candidates, key=lambda mid: (load[mid], mid))

    for unit in order:
        if unit not in owner:
            chosen = least(eligible[unit])
            owner[unit] = chosen
            load[chosen] += 1
    for _ in range(MAX_BALANCE_ROUNDS):
        moved = False
        for unit in order:
            current = owner[unit]
            best = least(eligible[unit])
            if load[current] > load[best] + 1:
                owner[unit] = best
                load[current] -= 1
                load[best] += 1
                moved = True
        if not moved:
            break
    out: dict[str, set[U]] = {m.member_id: set() for m in members}
    for unit, member_id in owner.items():
        out[member_id].add(unit)
    return {mid: frozenset(units) for mid, units in sorted(out.items())}


__all__ = ["UniformAssignor", "NAME", "MAX_BALANCE_ROUNDS"]
