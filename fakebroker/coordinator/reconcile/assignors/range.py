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
        out: dict[str, set[U]] = {m.member_id: set() for m in ordered}
        for key in sorted(spec.catalog):
            units = spec.catalog[key]
            subscribers = [m for m in ordered if key in m.subscription]
            if not subscribers or not units:
                continue
            quota, extra = divmod(len(units), len(subscribers))
            start = 0
            for index, member in enumerate(subscribers):
                size = quota + (1 if index < extra else 0)
                out[member.member_id].update(units[start:start + size])
                start += size
        return {mid: frozenset(units) for mid, units in sorted(out.items())}


__all__ = ["RangeAssignor", "NAME"]
