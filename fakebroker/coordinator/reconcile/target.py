"""Where a group's target assignment comes from.

Whenever the group epoch is ahead of the assignment epoch a new target is due. Two ways:

- ``ServerAssigned`` (consumer groups, KIP-848): the coordinator computes it at once, in
  the heartbeat that finds it due, with a server-side assignor chosen by the members
  (the most requested one; ties by name; else the default). The units come from a
  ``resolver`` mapping each subscribed key (topic name) to its units.
- ``Installed`` (connect groups, the draft): one member is selected to compute it; the
  engine flags that member's heartbeats (COMPUTE_ASSIGNMENT) until a target for a newer
  epoch is installed. ``selector`` picks the member: sticky while eligible, else the
  smallest eligible member id (ERRATA 19); ``connect.py`` supplies the draft's
  version-range eligibility.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic

from .assignors import Assignor, AssignmentSpec, AssignorMember, kafka_assignors
from .member import MemberMetadata, MemberTarget
from .units import EMPTY, U

#: key -> its units in order (empty when the key names nothing, e.g. a missing topic).
Resolver = Callable[[str], tuple[U, ...]]

#: (members' metadata by id, previously selected member or None) -> selected member or None
Selector = Callable[[Mapping[str, MemberMetadata], "str | None"], "str | None"]


def sticky_smallest_id(members: Mapping[str, MemberMetadata], previous: str | None) -> str | None:
    """Keep the previous selection while it is a member, else the smallest member id."""
    if previous is not None and previous in members:
        return previous
    return min(members) if members else None


@dataclass
class ServerAssigned(Generic[U]):
    resolver: Resolver[U]
    assignors: dict[str, Assignor] = field(default_factory=kafka_assignors)  # type: ignore[type-arg]
    default: str = "uniform"

    def choose(self, members: Mapping[str, MemberMetadata]) -> str:
        """Kafka's ``computePreferredServerAssignor``: the most requested, ties by name."""
        counts = Counter(md.server_assignor for md in members.values()
                         if md.server_assignor is not None)
        if not counts:
            return self.default
        return min(counts, key=lambda name: (-counts[name], name))

    def catalog_for(self, members: Mapping[str, MemberMetadata]) -> dict[str, tuple[U, ...]]:
        """The units of every key some member subscribes to (keys without units left out)."""
        keys = sorted({key for md in members.values() for key in md.subscription})
        out: dict[str, tuple[U, ...]] = {}
        for key in keys:
            units = tuple(self.resolver(key))
            if units:
                out[key] = units
        return out

    def compute(self, members: Mapping[str, MemberMetadata],
                current_target: Mapping[str, MemberTarget[U]],
                catalog: Mapping[str, tuple[U, ...]]) -> tuple[str, dict[str, frozenset[U]]]:
        name = self.choose(members)
        ids = sorted(members)  # not sorted(items()): no (id, metadata) pair per member
        none: MemberTarget[U] = MemberTarget()
        spec = AssignmentSpec(
            members=tuple(AssignorMember(
                member_id=mid, instance_id=members[mid].instance_id,
                subscription=members[mid].subscription,
                current=current_target.get(mid, none).units)
                for mid in ids),
            catalog=catalog)
        assignment = self.assignors[name].assign(spec)
        return name, {mid: assignment.get(mid, EMPTY) for mid in ids}


@dataclass
class Installed:
    selector: Selector = sticky_smallest_id


TargetPolicy = ServerAssigned | Installed  # type: ignore[type-arg]

__all__ = ["Resolver", "Selector", "sticky_smallest_id", "ServerAssigned", "Installed",
           "TargetPolicy"]
