"""Online migration between a classic ``connect`` group and the draft's connect group type
(draft, "Migration To the New Protocol"; its JoinGroup/SyncGroup/Heartbeat handling
sections are empty, so everything below beyond its three rules is decided here).

Facts used from Apache Kafka 4.x (``GroupMetadataManager.convertToConsumerGroup`` /
``convertToClassicGroup``), followed where they apply: the classic group is replaced by a
group of the new type holding the same members; a downgrade caused by a member leaving
rebuilds the classic group with the remaining members and starts a rebalance so they
rejoin; a malformed embedded protocol makes the conversion fail with GROUP_ID_NOT_FOUND.

Decisions (the lead copies them into ``schemas/ERRATA.md``):

M1. Upgrade trigger. A ConnectGroupHeartbeat at MemberEpoch 0 to a classic group whose
    protocol type is ``connect`` and which has members converts it (replacing ERRATA 48's
    GROUP_ID_NOT_FOUND for that case only; any other non-empty classic group still gets
    GROUP_ID_NOT_FOUND, and a heartbeat at another epoch stays UNKNOWN_MEMBER_ID).
M2. Only a Stable classic group converts. In PreparingRebalance or CompletingRebalance the
    heartbeat is answered REBALANCE_IN_PROGRESS (27, retriable: the worker retries its join)
    and nothing changes; the classic rebalance in flight is left to finish first. (Kafka
    converts in any state and fails the parked joins/syncs instead; the fake keeps the
    smaller rule.)
M3. Epoch. The connect group starts at group epoch = assignment epoch = the classic
    generation, every carried-over member at member epoch = generation and Stable; the
    joining worker then bumps the group epoch to generation + 1 as any join does. An Empty
    classic group (every classic member left) is replaced the same way, with no members
    carried over: its epoch also continues from its generation (draft: "the group epoch
    starts at the current group generation").
M4. Owned work. A carried-over member owns what its last classic assignment says, decoded
    with ``ConnectProtocolMetadata`` / ``ConnectProtocolAssignment``
    (``decode_versioned``) at the group's selected protocol: version 0 (``default``,
    eager) - the assignment's ``Assignment`` is everything it runs; version 1/2
    (``compatible`` / ``sessioned``) - the ``Allocation`` of its JoinGroup metadata plus
    the new ``Assignment`` minus ``Revoked``. Task -1 is the connector instance. A unit
    claimed by two members goes to the longer-standing one (join order). A member
    without an assignment owns nothing. Bytes that do not decode: the heartbeat gets
    GROUP_ID_NOT_FOUND and the group stays classic (Kafka's behaviour for a malformed
    consumer protocol).
M5. Carried-over members' assignors. Each is recorded with one ClientAssignor: the
    classic protocol's name with minimum = maximum = its version (default 0, compatible
    1, sessioned 2). The joining worker is admitted only if the ERRATA 19 rule holds over
    all members (else UNSUPPORTED_ASSIGNOR, group unchanged, still classic). A carried-over
    member is never selected to compute the assignment (it cannot speak
    ConnectGroupPrepareAssignment); selection runs over the new-protocol members only.
M6. Carried-over members' sessions. They get the connect session timeout from the
    conversion; a classic request does not refresh it (the fake does not translate
    classic heartbeats into the engine), so a member that does not migrate is removed by
    session expiry and its work becomes assignable.
M7. Classic requests of a carried-over member to the converted group:
    Heartbeat and SyncGroup (any generation) - REBALANCE_IN_PROGRESS, nothing changes (the
    worker rejoins); JoinGroup with its member id - the member is removed from the connect
    group (its work is released, MemberRemoved reason LEFT) and the join is answered
    UNKNOWN_MEMBER_ID; a later JoinGroup without a member id while new-protocol workers
    remain gets INCONSISTENT_GROUP_PROTOCOL as before. So a classic worker cannot stay in
    a converted group: it must be restarted with the new protocol (a rolling upgrade does
    exactly that). Any other member id keeps the previous answers.
M8. Downgrade. When, after any change (a leave, a fence, a session or rebalance timeout),
    the connect group still has members and every one of them is a carried-over classic
    member, it converts back: a classic ``connect`` group with generation = the group
    epoch, the same selected protocol, those members (with their classic protocols, the
    first in join order as leader), their classic heartbeats rescheduled, then a
    rebalance starts (PreparingRebalance) so they rejoin. A connect group left with no
    members stays an empty connect group (a classic JoinGroup replaces it, as before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.error_codes import ErrorCode
from .classic.group import ClassicGroup
from .classic.member import ClassicMember
from .classic.state import ClassicGroupState
from .events import GroupCreated
from .modern.connect import CONNECT, ConnectGroup, converged_records
from .errors import RuleViolation
from .reconcile import ClientAssignor, ConnectUnit

if TYPE_CHECKING:
    from .view import CoordinatorView

E = ErrorCode
S = ClassicGroupState

#: Connect's classic protocol names and their embedded-protocol versions.
PROTOCOL_VERSIONS = {"default": 0, "compatible": 1, "sessioned": 2}


def is_connect_classic(group: Any) -> bool:
    return isinstance(group, ClassicGroup) and group.protocol_type == CONNECT


def upgrade(coord: CoordinatorView, classic: ClassicGroup) -> ConnectGroup:
    """The connect group ``classic`` becomes (M2-M5); not yet registered (the caller
    ``adopt``s it once the joining heartbeat succeeded). Raises ``RuleViolation``."""
    if not classic.is_empty() and classic.state is not S.STABLE:
        raise RuleViolation(E.REBALANCE_IN_PROGRESS, "migration-from-stable",
                            f"Group {classic.group_id} is rebalancing; retry the join.")
    name = classic.protocol_name or ""
    members: dict[str, tuple[list[ConnectUnit], tuple[ClientAssignor, ...]]] = {}
    claimed: set[ConnectUnit] = set()
    if not classic.is_empty():
        if name not in PROTOCOL_VERSIONS:
            raise RuleViolation(E.GROUP_ID_NOT_FOUND, "migration-protocol-known",
                                f"Cannot upgrade group {classic.group_id}: unknown protocol {name}.")
        assignor = ClientAssignor(name, PROTOCOL_VERSIONS[name], PROTOCOL_VERSIONS[name],
                                  version=PROTOCOL_VERSIONS[name])
        for mid, m in classic.members.items():
            try:
                owned = owned_units(coord, m, name)
            except Exception as exc:  # the codec's decode errors
                raise RuleViolation(E.GROUP_ID_NOT_FOUND, "migration-protocol-decodes",
                                    f"Cannot upgrade group {classic.group_id}: the embedded connect "
                                    f"protocol of {mid} is malformed ({exc}).") from None
            mine = [u for u in owned if u not in claimed]
            claimed.update(mine)
            members[mid] = (mine, (assignor,))
    records = converged_records(classic.group_id, classic.generation_id, members,
                                rebalance_timeout_ms=(classic.rebalance_timeout_ms()
                                                      if members else 60_000))
    carried = dict(classic.members)
    group = ConnectGroup(classic.group_id, coord.env, records,
                         classic_member_ids=frozenset(carried))
    group.classic_members = carried
    group.classic_protocol = name
    return group


def owned_units(coord: CoordinatorView, member: ClassicMember, protocol: str) -> list[ConnectUnit]:
    """M4: what ``member`` runs according to its last classic join and assignment."""
    meta_t = coord.registry["ConnectProtocolMetadata"]
    asg_t = coord.registry["ConnectProtocolAssignment"]
    units: list[ConnectUnit] = []

    def add(entries: Any) -> None:
        for e in entries or ():
            for t in e.tasks:
                u = ConnectUnit(e.connector, t) if t >= 0 else ConnectUnit.instance(e.connector)
                if u not in units:
                    units.append(u)

    if member.assignment:
        version, asg = asg_t.decode_versioned(member.assignment)
        if version >= 1:
            _, meta = meta_t.decode_versioned(member.metadata(protocol))
            if meta.allocation is not None:
                add(asg_t.decode_versioned(bytes(meta.allocation))[1].assignment)
        add(asg.assignment)
        if version >= 1:
            revoked = set()
            for e in asg.revoked or ():
                for t in e.tasks:
                    revoked.add(ConnectUnit(e.connector, t) if t >= 0
                                else ConnectUnit.instance(e.connector))
            units = [u for u in units if u not in revoked]
    return units


def install_downgrade(coord: CoordinatorView, group: ConnectGroup) -> None:
    """Arm M8 on a converted group."""
    group.on_only_classic = lambda: downgrade(coord, group)


def downgrade(coord: CoordinatorView, group: ConnectGroup) -> ClassicGroup:
    """M8: replace ``group`` (whose members are all carried-over classic ones) by a classic
    group at generation = group epoch, rebalancing."""
    gid = group.group_id
    remaining = [m for m in group.classic_members if group.engine.has_member(m)]
    epoch = group.engine.group_epoch
    coord.drop_group(gid, replaced_by="classic")
    classic = ClassicGroup(gid, coord.env)
    classic.generation_id = epoch
    classic.protocol_type = CONNECT
    classic.protocol_name = group.classic_protocol
    for mid in remaining:
        m = group.classic_members[mid]
        m.awaiting_join = m.awaiting_sync = None
        m.is_new = False
        classic.members[mid] = m
        classic._protocol_counts.update(m.protocol_names)
        if m.group_instance_id is not None:
            classic.static_members[m.group_instance_id] = mid
    classic.leader_id = remaining[0]
    classic.previous_state, classic.state = S.COMPLETING_REBALANCE, S.STABLE
    coord.groups[gid] = classic
    coord.env.emit(GroupCreated(gid, coord.env.now_ms, classic.type))
    for m in classic.members.values():
        coord.rebalancer.reschedule_heartbeat(classic, m)
    coord.rebalancer.prepare_rebalance(classic, f"Downgrade group {gid} from connect to classic.")
    return classic


def carried_over(coord: CoordinatorView, group_id: str, member_id: str) -> ConnectGroup | None:
    """The converted connect group ``member_id`` was carried into and still belongs to."""
    group = coord.groups.get(group_id)
    if (isinstance(group, ConnectGroup) and member_id in group.classic_members
            and group.engine.has_member(member_id)):
        return group
    return None


def classic_rejoin(coord: CoordinatorView, group: ConnectGroup, member_id: str) -> None:
    """M7: a carried-over member's JoinGroup removes it from the connect group."""
    result = group.engine.leave(member_id, coord.env.now_ms)
    group.absorb(result.outcome)


__all__ = ["PROTOCOL_VERSIONS", "is_connect_classic", "upgrade", "downgrade", "owned_units",
           "install_downgrade", "carried_over", "classic_rejoin"]
