"""Kafka's server-side ``range`` assignor (KIP-848), for any unit.

For each key (topic), its units are split into contiguous runs among the members that
subscribe to it: with n units and k subscribers each gets n // k, and the first n % k get
one more. Members are ordered static first (by instance id), then dynamic (by member id),
so that with equal subscriptions and equal unit counts every member gets the same unit
numbers of every key (co-partitioning), and static members keep their ranges across
restarts. The assignment is not sticky otherwise: it depends only on the member order.
"""

from __future__ import annotations

from .base import AssignmentSpec, AssignorMember
from ..units import U

NAME = "range"


def _order(member: AssignorMember[U]) -> tuple[int, str]:
    if member.instance_id is not None:
        return (0, member.instance_id)
    return (1, member.member_id)


class RangeAssignor:
    name = NAME

    def assign(self, spec: AssignmentSpec[U]) -> dict[str, frozenset[U]]:
        ordered = sorted(spec.members, key=_order)
        # Each key's runs first (subscriber -> where its run starts and ends), then each
        # member's units in one go: no set per member kept alive through the whole pass,
        # and a member whose units are unchanged gets its current set back.
        runs: list[tuple[tuple[U, ...], dict[str, tuple[int, int]]]] = []
        for key in sorted(spec.catalog):
            units = spec.catalog[key]
            subscribers = [m.member_id for m in ordered if key in m.subscription]
            if not subscribers or not units:
                continue
            quota, extra = divmod(len(units), len(subscribers))
            bounds: dict[str, tuple[int, int]] = {}
            start = 0
            for index, member_id in enumerate(subscribers):
                size = quota + (1 if index < extra else 0)
                bounds[member_id] = (start, start + size)
                start += size
            runs.append((units, bounds))
        out: dict[str, frozenset[U]] = {}
        for member in ordered:
            mid = member.member_id
            mine = frozenset(u for units, bounds in runs if mid in bounds
                             for u in units[bounds[mid][0]:bounds[mid][1]])
            out[mid] = member.current if mine == member.current else mine
        return {mid: out[mid] for mid in sorted(out)}


__all__ = ["RangeAssignor", "NAME"]
