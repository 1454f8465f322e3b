"""The draft's connect group on top of the generic engine: its request rules, assignor
selection by version range, the selection of the member that computes the target, and
the mapping between the ConnectGroup* messages and the engine's values.

Facts: the draft (ConnectGroupHeartbeat Request Validation and Handling; Assignment
Process, Assignor Selection and Worker Selection; ConnectGroupInstallAssignment) as
corrected by ``schemas/ERRATA.md`` (entries 2, 13, 16, 17, 19, 20, 25, 27).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...protocol import Registry, Struct
from ...protocol.error_codes import ErrorCode
from .engine import EngineConfig, GroupEngine, Heartbeat, HeartbeatResult
from ..errors import DraftErrorCode, RuleViolation
from .member import AssignmentPayload, ClientAssignor, MemberMetadata, MemberTarget
from .target import Installed
from .units import ConnectUnit, join_connect_units, split_connect_units
from .validation import JOIN_EPOCH, LEAVE_EPOCH, require_member_id_present, require_non_empty

E = ErrorCode


# --- request rules ----------------------------------------------------------------

def require_connect_heartbeat_shape(*, group_id: str, member_id: str, member_epoch: int,
                                    instance_id: str | None, rebalance_timeout_ms: int,
                                    server_assignor: str | None,
                                    client_assignors: Sequence[ClientAssignor] | None,
                                    tasks: Iterable[tuple[str, int]] = ()) -> None:
    """ConnectGroupHeartbeat, Request Validation (INVALID_REQUEST), in the draft's order,
    then the server-assignor rule (ERRATA 27: a connect coordinator has none, so any
    ServerAssignor is UNSUPPORTED_ASSIGNOR)."""
    require_non_empty(group_id, "group-id")
    require_member_id_present(member_id)
    if member_epoch < LEAVE_EPOCH:
        raise RuleViolation(E.INVALID_REQUEST, "member-epoch-at-least-minus-one",
                            "MemberEpoch must be >= -1")
    require_non_empty(instance_id, "instance-id")
    if member_epoch == JOIN_EPOCH and rebalance_timeout_ms <= 0:
        raise RuleViolation(E.INVALID_REQUEST, "join-gives-rebalance-timeout",
                            "RebalanceTimeoutMs must be larger than zero in the first heartbeat")
    if server_assignor is not None and client_assignors is not None:
        raise RuleViolation(E.INVALID_REQUEST, "one-kind-of-assignor",
                            "ServerAssignor and ClientAssignors cannot be used together")
    for assignor in client_assignors or ():
        require_assignor_valid(assignor)
    for connector, task in tasks:
        if task < 0:
            raise RuleViolation(E.INVALID_REQUEST, "task-id-not-negative",
                                f"task {connector}/{task} has a negative id (ERRATA 2)")
    if server_assignor is not None:
        raise RuleViolation(E.UNSUPPORTED_ASSIGNOR, "no-server-assignor",
                            "a connect group has no server-side assignor (ERRATA 27)")


def require_assignor_valid(a: ClientAssignor) -> None:
    """The draft's per-assignor rules."""
    if not a.name.strip():
        raise RuleViolation(E.INVALID_REQUEST, "assignor-name-not-empty", "Assignor.Name is empty")
    if a.minimum_version < -1:
        raise RuleViolation(E.INVALID_REQUEST, "assignor-minimum-version",
                            "Assignor.MinimumVersion must be >= -1")
    if a.maximum_version < 0 or a.maximum_version < a.minimum_version:
        raise RuleViolation(E.INVALID_REQUEST, "assignor-maximum-version",
                            "Assignor.MaximumVersion must be >= 0 and >= MinimumVersion")
    if not a.minimum_version <= a.version <= a.maximum_version:
        raise RuleViolation(E.INVALID_REQUEST, "assignor-version-in-range",
                            "Assignor.Version must be within [MinimumVersion, MaximumVersion]")


# --- assignor and worker selection --------------------------------------------------

def _by_assignors(members: Mapping[str, MemberMetadata]) -> Counter[tuple[ClientAssignor, ...]]:
    """How many members declare each assignor list. Workers of one group mostly declare the
    same list: the rules below then look at a few lists, not at every member (and build
    nothing per member)."""
    return Counter(md.client_assignors for md in members.values())


def _selected(lists: Counter[tuple[ClientAssignor, ...]]) -> str | None:
    if not lists:
        return None
    common = set.intersection(*({a.name for a in lst} for lst in lists))
    if not common:
        return None
    votes: Counter[str] = Counter()
    for lst, count in lists.items():
        votes[next(a.name for a in lst if a.name in common)] += count
    return min(votes, key=lambda name: (-votes[name], name))


def selected_assignor(members: Mapping[str, MemberMetadata]) -> str | None:
    """The assignor every member supports; among several, a vote as in the classic
    protocol: each member votes for its first such assignor, most votes wins, ties by
    name. None when the members share none."""
    return _selected(_by_assignors(members))


def eligible_members(members: Mapping[str, MemberMetadata]) -> list[str]:
    """Members whose version range (for the selected assignor) covers every other
    member's (draft, Worker Selection: A [1-5], B [3-4], C [2-4] -> A), sorted."""
    lists = _by_assignors(members)
    name = _selected(lists)
    if name is None:
        return []
    ranges = {lst: next((a.minimum_version, a.maximum_version) for a in lst if a.name == name)
              for lst in lists}
    low = min(lo for lo, _ in ranges.values())
    high = max(hi for _, hi in ranges.values())
    covering = {lst for lst, (lo, hi) in ranges.items() if lo <= low and hi >= high}
    return sorted(mid for mid, md in members.items() if md.client_assignors in covering)


def connect_selector(members: Mapping[str, MemberMetadata], previous: str | None) -> str | None:
    """ERRATA 19: keep the previous selection while it is eligible (Connect's leader is
    sticky), otherwise the eligible member with the smallest id."""
    eligible = eligible_members(members)
    if previous is not None and previous in eligible:
        return previous
    return eligible[0] if eligible else None


def require_assignors_compatible(engine: GroupEngine[ConnectUnit], member_id: str,
                                 client_assignors: tuple[ClientAssignor, ...] | None) -> None:
    """UNSUPPORTED_ASSIGNOR when admitting this member's assignors would leave the group
    with no common assignor or no member covering every range (ERRATA 19). The member
    is not admitted; the group is unchanged."""
    if engine.has_member(member_id) and client_assignors in (
            None, engine.member(member_id).metadata.client_assignors):
        # Unchanged assignors (every full heartbeat repeats them): the group as it is.
        eligible = engine.of_members(eligible_members)
    else:
        members = {mid: engine.member(mid).metadata for mid in engine.member_ids()}
        previous = members.get(member_id, MemberMetadata())
        assignors = client_assignors if client_assignors is not None else previous.client_assignors
        members[member_id] = MemberMetadata(client_assignors=assignors)
        eligible = eligible_members(members)
    if not eligible:
        raise RuleViolation(E.UNSUPPORTED_ASSIGNOR, "assignor-versions-overlap",
                            "no member's assignor version range covers every other member's")


def connect_policy() -> Installed:
    return Installed(selector=connect_selector)


def new_connect_engine(group_id: str, **config: int | bool) -> GroupEngine[ConnectUnit]:
    return GroupEngine(EngineConfig.connect(group_id, **config), connect_policy())


# --- messages <-> engine values ---------------------------------------------------

def units_of(cat: Any) -> frozenset[ConnectUnit]:
    """A ``ConnectorsAndTasks`` struct as units (task ids must not be negative)."""
    return join_connect_units(cat.connectors, ((t.connector_id, t.task_id) for t in cat.tasks))


def tasks_of(cat: Any) -> list[tuple[str, int]]:
    return [(t.connector_id, t.task_id) for t in (cat.tasks if cat is not None else ())]


def heartbeat_from_request(req: Any, client_id: str = "", client_host: str = "") -> Heartbeat[ConnectUnit]:
    """A decoded ConnectGroupHeartbeatRequest as the engine's ``Heartbeat``."""
    assignors = None
    if req.client_assignors is not None:
        assignors = tuple(ClientAssignor(a.name, a.minimum_version, a.maximum_version, a.reason,
                                         a.version, bytes(a.metadata))
                          for a in req.client_assignors)
    owned = units_of(req.connectors_and_tasks) if req.connectors_and_tasks is not None else None
    return Heartbeat(member_id=req.member_id, member_epoch=req.member_epoch,
                     instance_id=req.instance_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
                     client_assignors=assignors, owned=owned, client_id=client_id,
                     client_host=client_host)


def heartbeat_response(reg: Registry, result: HeartbeatResult[ConnectUnit]) -> Struct:
    """The ConnectGroupHeartbeatResponse for an engine result: an error, or the epoch,
    interval and assignment; a member selected to compute gets COMPUTE_ASSIGNMENT with
    every other field valid (ERRATA 17)."""
    mt = reg["ConnectGroupHeartbeatResponse"]
    cls = mt.cls
    if result.error:
        return mt.new(error_code=int(result.error), error_message=result.message)
    assignment = None
    if result.assignment is not None:
        connectors, tasks = split_connect_units(result.assignment.units)
        cat = cls.ConnectorsAndTasks(
            connectors=list(connectors),
            tasks=[cls.ConnectorTaskId(connector_id=c, task_id=t) for c, t in tasks])
        p = result.assignment.payload
        assignment = cls.Assignment(error=p.error, connectors_and_tasks=cat, version=p.version,
                                    metadata=p.metadata)
    code = DraftErrorCode.COMPUTE_ASSIGNMENT if result.compute_assignment else ErrorCode.NONE
    return mt.new(error_code=int(code), member_epoch=result.member_epoch,
                  heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


def install_targets(req: Any) -> dict[str, MemberTarget[ConnectUnit]]:
    """A ConnectGroupInstallAssignmentRequest's members as engine targets. A negative
    task id is INVALID_ASSIGNMENT (ERRATA 20); a member listed twice too."""
    out: dict[str, MemberTarget[ConnectUnit]] = {}
    for m in req.members:
        for connector, task in tasks_of(m.connectors_and_tasks):
            if task < 0:
                raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "task-id-not-negative",
                                    f"task {connector}/{task} has a negative id")
        if m.member_id in out:
            raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "member-listed-once",
                                f"member {m.member_id} appears twice")
        units = units_of(m.connectors_and_tasks)
        listed = len(m.connectors_and_tasks.connectors) + len(m.connectors_and_tasks.tasks)
        if listed != len(units):
            raise RuleViolation(DraftErrorCode.INVALID_ASSIGNMENT, "unit-assigned-once",
                                f"member {m.member_id} lists a connector or task twice")
        out[m.member_id] = MemberTarget(units, AssignmentPayload(req.error, m.version,
                                                                 bytes(m.metadata)))
    return out


__all__ = [
    "require_connect_heartbeat_shape", "require_assignor_valid", "selected_assignor",
    "eligible_members", "connect_selector", "require_assignors_compatible", "connect_policy",
    "new_connect_engine", "units_of", "tasks_of", "heartbeat_from_request",
    "heartbeat_response", "install_targets",
]
