"""Mutants: deliberately non-conformant coordinators, made from the fake broker, to measure
the coordinator suite's power. Each one injects a single defect; a target file in
``fixtures/mutants/`` selects it (``[fakebroker] mutant = "<name>"``).

Until the scripting layer's response hooks exist, a mutant is a small ``GroupCoordinator``
subclass: most rewrite one kind of reply on its way out (``rewrite``), a few change one
decision inside the classic group (``MutantGroup``). Every mutant is named for its defect.
The draft's connect coordinator has its own mutants (``DRAFT_MUTANTS``, the section at the
end): they rewrite ConnectGroup* requests or replies, or swap a policy of the group engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fakebroker.coordinator import GroupCoordinator, Reply, RequestContext
from fakebroker.coordinator.classic.group import ClassicGroup
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.coordinator.reconcile import Installed
from fakebroker.coordinator.reconcile.records import GroupMetadataRecord, is_tombstone
from fakebroker.coordinator.reconcile.units import split_connect_units
from fakebroker.protocol import Struct
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.broker import FakeBroker

JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
CONNECT_HB, CONNECT_INSTALL = 1000, 1002  # the draft's APIs (ERRATA 1)


@dataclass(frozen=True)
class Sent:
    api_key: int
    version: int
    group_id: str
    member_id: str


class MutantCoordinator(GroupCoordinator):
    """A coordinator whose replies pass through ``rewrite`` (identity here)."""

    defect = "none"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sent: dict[int, Sent] = {}

    def handle(self, ctx: RequestContext, body: Struct, now_ms: int) -> list[Reply]:
        self._sent[ctx.request_id] = Sent(ctx.api_key, ctx.api_version,
                                          getattr(body, "group_id", ""), getattr(body, "member_id", ""))
        ctx, body = self.rewrite_request(ctx, body)
        return self._out(self.handle_mutated(ctx, body, now_ms))

    def handle_mutated(self, ctx: RequestContext, body: Struct, now_ms: int) -> list[Reply]:
        return super().handle(ctx, body, now_ms)

    def tick(self, now_ms: int) -> list[Reply]:
        return self._out(super().tick(now_ms))

    def _out(self, replies: list[Reply]) -> list[Reply]:
        out = []
        for r in replies:
            sent = self._sent.pop(r.request_id, None)
            out.append(Reply(r.request_id, self.rewrite(sent, r.body)) if sent else r)
        return out

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        return ctx, body

    def rewrite(self, sent: Sent, body: Any) -> Any:
        return body


# ---------------------------------------------------------------- reply rewriters

class HeartbeatOkWhileRebalancing(MutantCoordinator):
    defect = "Heartbeat during PreparingRebalance answered NONE instead of REBALANCE_IN_PROGRESS"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == HEARTBEAT and body.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
            body.error_code = 0
        return body


class IllegalGenerationIgnored(MutantCoordinator):
    defect = "Heartbeat with a wrong generation answered NONE instead of ILLEGAL_GENERATION"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == HEARTBEAT and body.error_code == ErrorCode.ILLEGAL_GENERATION:
            body.error_code = 0
        return body


class SyncOkWhileRebalancing(MutantCoordinator):
    defect = "SyncGroup during PreparingRebalance answered NONE (empty assignment)"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == SYNC and body.error_code == ErrorCode.REBALANCE_IN_PROGRESS:
            body.error_code = 0
        return body


class EveryMemberLeader(MutantCoordinator):
    defect = "every JoinGroup response names its own member as the leader"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == JOIN and body.error_code == 0:
            body.leader = body.member_id
        return body


class MetadataCorrupted(MutantCoordinator):
    defect = "the leader receives each member's metadata with its last byte flipped"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == JOIN and body.error_code == 0:
            for m in body.members:
                md = bytes(m.metadata)
                if md:
                    m.metadata = md[:-1] + bytes([md[-1] ^ 0xFF])
        return body


class AssignmentTruncated(MutantCoordinator):
    defect = "SyncGroup returns the member's assignment without its last byte"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == SYNC and body.error_code == 0 and body.assignment:
            body.assignment = bytes(body.assignment)[:-1]
        return body


class StaticNotFenced(MutantCoordinator):
    defect = "a replaced static member id gets UNKNOWN_MEMBER_ID instead of FENCED_INSTANCE_ID"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if getattr(body, "error_code", 0) == ErrorCode.FENCED_INSTANCE_ID:
            body.error_code = int(ErrorCode.UNKNOWN_MEMBER_ID)
        return body


# ---------------------------------------------------------------- request rewriters

class NoMemberIdRequired(MutantCoordinator):
    defect = "JoinGroup v4+ without a member id is admitted at once (no MEMBER_ID_REQUIRED)"

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        b: Any = body
        if ctx.api_key == JOIN and ctx.api_version >= 4 and b.member_id == "" and b.group_instance_id is None:
            # Take the pre-KIP-394 path; the response is still built for a v4+ request.
            return dataclasses.replace(ctx, api_version=3), body
        return ctx, body


class LeaveWithoutRebalance(MutantCoordinator):
    defect = "LeaveGroup removes the member but starts no rebalance"

    def handle_mutated(self, ctx: RequestContext, body: Struct, now_ms: int) -> list[Reply]:
        if ctx.api_key != LEAVE:
            return super().handle_mutated(ctx, body, now_ms)
        rb = self.rebalancer
        rb.maybe_prepare_rebalance_or_complete_join = lambda *a, **k: None  # type: ignore[method-assign]
        try:
            return super().handle_mutated(ctx, body, now_ms)
        finally:
            del rb.maybe_prepare_rebalance_or_complete_join  # back to the class's method


class SessionsNeverExpire(MutantCoordinator):
    defect = "members that stop heartbeating are never removed"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rb = self.rebalancer
        original = rb.expire_heartbeat

        def expire(group_id: str, member_id: str) -> None:
            group = self.classic_group(group_id)
            if group is not None and group.is_pending(member_id):
                original(group_id, member_id)  # only pending ids still expire
        rb.expire_heartbeat = expire  # type: ignore[method-assign]


class FollowerSyncNotHeld(MutantCoordinator):
    defect = "a follower's SyncGroup is answered at once with an empty assignment instead of waiting for the leader"

    def handle_mutated(self, ctx: RequestContext, body: Struct, now_ms: int) -> list[Reply]:
        replies = super().handle_mutated(ctx, body, now_ms)
        if ctx.api_key == SYNC and not any(r.request_id == ctx.request_id for r in replies):
            group = self.classic_group(getattr(body, "group_id", ""))
            member_id = getattr(body, "member_id", "")
            if group is not None and group.has_member(member_id) and not group.is_leader(member_id):
                group.member(member_id).awaiting_sync = None
                replies.append(Reply(ctx.request_id, self.registry["SyncGroupResponse"].new(
                    error_code=0, protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                    assignment=b"")))
        return replies


# ---------------------------------------------------------------- decisions inside the group

class _GroupMutant(MutantCoordinator):
    group_class: type[ClassicGroup] = ClassicGroup

    def create_classic_group(self, group_id: str) -> ClassicGroup:
        if group_id in self.groups:
            raise ValueError(f"group {group_id!r} already exists")
        group = self.group_class(group_id, self.env)
        self.groups[group_id] = group
        return group


class _NoBumpGroup(ClassicGroup):
    def init_next_generation(self) -> None:
        before = self.generation_id
        super().init_next_generation()
        if before >= 1:
            self.generation_id = before  # the defect: later rebalances reuse the generation


class NoGenerationBump(_GroupMutant):
    defect = "rebalances after the first keep the same generation id"
    group_class = _NoBumpGroup


class _FirstMemberVoteGroup(ClassicGroup):
    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        first = next(iter(self.members.values()))
        return first.vote(candidates)  # the defect: the longest-standing member decides alone


class FirstMemberDecidesProtocol(_GroupMutant):
    defect = "the protocol is the first member's preference, not the vote of all members"
    group_class = _FirstMemberVoteGroup


class WideSessionBounds(MutantCoordinator):
    defect = "session timeouts outside [min, max] are accepted (no INVALID_SESSION_TIMEOUT)"

    def __init__(self, registry: Any = None, config: CoordinatorConfig | None = None, **kw: Any) -> None:
        cfg = dataclasses.replace(config or CoordinatorConfig(), min_session_timeout_ms=1,
                                  max_session_timeout_ms=2**31 - 1)
        super().__init__(registry, cfg, **kw)


# ---------------------------------------------------------------- the draft's connect coordinator

class _ConnectMutant(MutantCoordinator):
    """Helpers for mutants of the draft's connect groups (``fakebroker.coordinator.modern``)."""

    def member(self, group_id: str, member_id: str) -> Any:
        group = self.connect_group(group_id)
        if group is None or not group.engine.has_member(member_id):
            return None
        return group.engine.member(member_id)

    def work_struct(self, message: str, units: Any) -> Any:
        mt = self.registry[message]
        connectors, tasks = split_connect_units(units)
        return mt.classes["ConnectorsAndTasks"](
            connectors=list(connectors),
            tasks=[mt.classes["ConnectorTaskId"](connector_id=c, task_id=t) for c, t in tasks])

    def hb_response(self, sent: Sent, body: Any) -> bool:
        return sent.api_key == CONNECT_HB and body.error_code in (0, DRAFT_COMPUTE)


DRAFT_COMPUTE = 1000  # COMPUTE_ASSIGNMENT as the fake broker numbers it (ERRATA 1)


class NullTasksAcknowledgeRevocation(_ConnectMutant):
    defect = "a heartbeat with ConnectorsAndTasks null (unchanged) counts as the revocation acknowledged"

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        b: Any = body
        if ctx.api_key == CONNECT_HB and b.connectors_and_tasks is None and b.member_epoch > 0:
            m = self.member(b.group_id, b.member_id)
            if m is not None and m.current.pending_revocation:
                b.connectors_and_tasks = self.work_struct("ConnectGroupHeartbeatRequest", m.current.assigned)
        return ctx, body


class AssignmentMetadataDropped(_ConnectMutant):
    defect = "the heartbeat's Assignment carries empty Metadata instead of the installed bytes"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if self.hb_response(sent, body) and body.assignment is not None:
            body.assignment.metadata = b""
        return body


class AssignmentVersionZeroed(_ConnectMutant):
    defect = "the heartbeat's Assignment carries Version 0 instead of the installed Version"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if self.hb_response(sent, body) and body.assignment is not None:
            body.assignment.version = 0
        return body


class _StoredAssignorField(_ConnectMutant):
    """Replaces one field of each resent assignor by the value the member had before, so
    a change of that field alone goes unnoticed."""

    field = ""

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        b: Any = body
        if ctx.api_key == CONNECT_HB and b.client_assignors is not None and b.member_epoch > 0:
            m = self.member(b.group_id, b.member_id)
            if m is not None:
                before = {a.name: a for a in m.metadata.client_assignors}
                for a in b.client_assignors:
                    if a.name in before:
                        setattr(a, self.field, getattr(before[a.name], self.field))
        return ctx, body


class ReasonChangeIgnored(_StoredAssignorField):
    defect = "a change of an assignor's Reason alone starts no new group epoch"
    field = "reason"


class MetadataChangeIgnored(_StoredAssignorField):
    defect = "a change of an assignor's Metadata alone starts no new group epoch"
    field = "metadata"


class AssignWhileRevoking(_ConnectMutant):
    defect = "a worker asked to revoke work is handed its whole new target in the same response"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if not (self.hb_response(sent, body) and body.assignment is not None):
            return body
        group = self.connect_group(sent.group_id)
        m = self.member(sent.group_id, sent.member_id)
        if group is None or m is None or not m.current.pending_revocation:
            return body
        body.assignment.connectors_and_tasks = self.work_struct(
            "ConnectGroupHeartbeatResponse", group.engine.target(sent.member_id).units)
        return body


class StaleEpochAccepted(_ConnectMutant):
    defect = "a heartbeat with a wrong member epoch is served as if it had the current one (no FENCED_MEMBER_EPOCH)"

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        b: Any = body
        if ctx.api_key == CONNECT_HB and b.member_epoch > 0:
            m = self.member(b.group_id, b.member_id)
            if m is not None:
                b.member_epoch = m.current.member_epoch
        return ctx, body


class LeaveAnsweredWithEpoch(_ConnectMutant):
    defect = "a leave (epoch -1) is answered with MemberEpoch 0 instead of -1"

    def rewrite(self, sent: Sent, body: Any) -> Any:
        if sent.api_key == CONNECT_HB and body.error_code == 0 and body.member_epoch == -1:
            body.member_epoch = 0
        return body


class DuplicateUnitsAccepted(_ConnectMutant):
    defect = "an install giving a connector or task to two members is accepted (the later copies dropped)"

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        b: Any = body
        if ctx.api_key == CONNECT_INSTALL:
            seen: set[tuple[str, int]] = set()
            for m in b.members:
                cat = m.connectors_and_tasks
                cat.connectors = [c for c in cat.connectors if (c, -1) not in seen]
                cat.tasks = [t for t in cat.tasks if (t.connector_id, t.task_id) not in seen]
                seen |= {(c, -1) for c in cat.connectors} | {(t.connector_id, t.task_id) for t in cat.tasks}
        return ctx, body


class AnyWorkerComputes(_ConnectMutant):
    defect = ("the worker asked to compute is the one with the highest MinimumVersion, whether or not "
              "its version range covers the others'")

    def new_connect_group(self, group_id: str) -> Any:
        group = super().new_connect_group(group_id)
        group.engine.policy = Installed(selector=_newest_minimum)
        return group


class _ConnectConfigMutant(_ConnectMutant):
    """A connect group whose engine runs with one setting changed."""

    changes: dict[str, Any] = {}

    def new_connect_group(self, group_id: str) -> Any:
        group = super().new_connect_group(group_id)
        group.engine.config = dataclasses.replace(group.engine.config, **self.changes)
        return group


class FencedMemberKept(_ConnectConfigMutant):
    defect = "a worker answered FENCED_MEMBER_EPOCH stays in the group (its old epoch is accepted again)"
    changes = {"fence_removes_member": False}


class ConnectSessionsNeverExpire(_ConnectConfigMutant):
    defect = "a connect worker that stops heartbeating is never removed"
    changes = {"session_timeout_ms": 2**31 - 1}


class RangesNotChecked(_ConnectMutant):
    defect = "a joining worker is admitted whatever its assignor version range (no UNSUPPORTED_ASSIGNOR)"

    def rewrite_request(self, ctx: RequestContext, body: Struct) -> tuple[RequestContext, Struct]:
        b: Any = body
        group = self.connect_group(getattr(b, "group_id", ""))
        if ctx.api_key == CONNECT_HB and b.member_epoch == 0 and b.client_assignors and group is not None:
            ranges = [(a.minimum_version, a.maximum_version) for m in group.engine.member_ids()
                      for a in group.engine.member(m).metadata.client_assignors]
            if ranges:   # the joiner is taken to cover everyone's range, so nothing is refused
                lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
                for a in b.client_assignors:
                    a.minimum_version, a.maximum_version = min(a.minimum_version, lo), max(a.maximum_version, hi)
        return ctx, body


def _newest_minimum(members: Any, previous: str | None) -> str | None:
    def key(mid: str) -> tuple[int, str]:
        assignors = members[mid].client_assignors
        return (-(assignors[0].minimum_version if assignors else 0), mid)
    return min(members, key=key) if members else None


# ---------------------------------------------------------------- the draft's records (group log)

class _FilteredStore:
    """A record store passing each record through ``persisted`` (None drops it)."""

    def __init__(self, store: Any, persisted: Any) -> None:
        self.store, self.persisted = store, persisted

    def append(self, records: Any) -> None:
        out = [x for x in (self.persisted(r) for r in records) if x is not None]
        if out:
            self.store.append(out)


class _GroupLogMutant(MutantCoordinator):
    """A coordinator that writes its connect groups' records wrongly (the group-log target's
    store, e.g. ``KafkaGroupLog``, receives them through ``persisted``)."""

    def __init__(self, *args: Any, connect_store: Any = None, **kw: Any) -> None:
        store = None if connect_store is None else _FilteredStore(connect_store, self.persisted)
        super().__init__(*args, connect_store=store, **kw)

    def persisted(self, record: Any) -> Any:
        return record


class GroupLogNoTombstones(_GroupLogMutant):
    defect = "a member's records are never tombstoned when it leaves"

    def persisted(self, record: Any) -> Any:
        return None if is_tombstone(record) else record


class GroupLogStaleEpoch(_GroupLogMutant):
    defect = "the group record is written with the previous group epoch"

    def persisted(self, record: Any) -> Any:
        if isinstance(record, GroupMetadataRecord) and record.epoch > 0:
            return dataclasses.replace(record, epoch=record.epoch - 1)
        return record


#: Mutants that need a group-log target (a real Kafka): ``fixtures/mutants/group-log/``.
GROUP_LOG_MUTANTS: dict[str, type[MutantCoordinator]] = {
    "group-log-no-tombstones": GroupLogNoTombstones,
    "group-log-stale-epoch": GroupLogStaleEpoch,
}


DRAFT_MUTANTS: dict[str, type[MutantCoordinator]] = {
    "null-tasks-acknowledge-revocation": NullTasksAcknowledgeRevocation,
    "assignment-metadata-dropped": AssignmentMetadataDropped,
    "assignment-version-zeroed": AssignmentVersionZeroed,
    "reason-change-ignored": ReasonChangeIgnored,
    "metadata-change-ignored": MetadataChangeIgnored,
    "assign-while-revoking": AssignWhileRevoking,
    "stale-epoch-accepted": StaleEpochAccepted,
    "leave-answered-with-epoch": LeaveAnsweredWithEpoch,
    "duplicate-units-accepted": DuplicateUnitsAccepted,
    "any-worker-computes": AnyWorkerComputes,
    "fenced-member-kept": FencedMemberKept,
    "connect-sessions-never-expire": ConnectSessionsNeverExpire,
    "ranges-not-checked": RangesNotChecked,
}


MUTANTS: dict[str, type[MutantCoordinator]] = {
    "heartbeat-ok-while-rebalancing": HeartbeatOkWhileRebalancing,
    "illegal-generation-ignored": IllegalGenerationIgnored,
    "sync-ok-while-rebalancing": SyncOkWhileRebalancing,
    "every-member-leader": EveryMemberLeader,
    "metadata-corrupted": MetadataCorrupted,
    "assignment-truncated": AssignmentTruncated,
    "static-not-fenced": StaticNotFenced,
    "no-member-id-required": NoMemberIdRequired,
    "leave-without-rebalance": LeaveWithoutRebalance,
    "sessions-never-expire": SessionsNeverExpire,
    "follower-sync-not-held": FollowerSyncNotHeld,
    "no-generation-bump": NoGenerationBump,
    "first-member-decides-protocol": FirstMemberDecidesProtocol,
    "wide-session-bounds": WideSessionBounds,
    **DRAFT_MUTANTS,
}


def apply_mutant(broker: FakeBroker, name: str) -> None:
    """Replace the broker's coordinator by the named mutant (before the broker starts)."""
    known = {**MUTANTS, **GROUP_LOG_MUTANTS}
    try:
        cls = known[name]
    except KeyError:
        raise ValueError(f"unknown mutant {name!r}; known: {', '.join(sorted(known))}") from None
    broker.coordinator = cls(broker.registry, broker.coordinator_config, connect_store=broker.connect_store)


def describe_mutants() -> dict[str, str]:
    return {name: cls.defect for name, cls in {**MUTANTS, **GROUP_LOG_MUTANTS}.items()}

