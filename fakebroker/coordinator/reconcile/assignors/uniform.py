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
    # A member keeping exactly its current units gets that set back (not copied, nothing
    # built for it); the others a list of what they keep, filled up below.
    out: dict[str, frozenset[U] | list[U]] = {}
    room: list[tuple[str, int]] = []
    claimed: set[U] = set()  # a unit two members claim is kept by the first only
    for member in members:
        limit = quota + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        current = member.current
        if len(current) == limit and current <= valid and current.isdisjoint(claimed):
            claimed.update(current)
            out[member.member_id] = current
            continue
        keep = sorted((current & valid) - claimed)
        claimed.update(keep)
        out[member.member_id] = keep[:limit]
        unassigned.extend(keep[limit:])
        if len(keep) < limit:
            room.append((member.member_id, limit - len(keep)))
    cursor = 0
    for member_id, space in room:
        take = unassigned[cursor:cursor + space]
        out[member_id].extend(take)  # type: ignore[union-attr]  # a list: it had room
        cursor += len(take)
    if cursor < len(unassigned):
        raise AssignorError(f"{len(unassigned) - cursor} units were left unassigned")
    return {mid: out[mid] if isinstance(out[mid], frozenset) else frozenset(out[mid])
            for mid in sorted(out)}


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
    return {mid: frozenset(out[mid]) for mid in sorted(out)}


__all__ = ["UniformAssignor", "NAME", "MAX_BALANCE_ROUNDS"]
