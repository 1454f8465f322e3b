"""Mutants: deliberately non-conformant coordinators, made from the fake broker, to measure
the coordinator suite's power. Each one injects a single defect. They are declared in
``fixtures/mutants/coordinators.toml`` (defect, the requirement id that must refuse it,
target fields); this module holds how each one does it, by the same name, which its target
selects (``[fakebroker] mutant = "<name>"``).

A mutant is a named set of hooks on a normal broker (``install``), so it runs with the
broker's topics and connect store: most rewrite one kind of request or response on its way
(``on_request`` / ``on_response``). A defect that is a decision inside the coordinator, which
no request or response carries (a generation not bumped, a session never expiring), is a
``patch`` of that broker's own coordinator instead, through its extension points (a
wrapped handler, a group or rebalancer subclass, its config or record store: see
``fakebroker.coordinator.coordinator``), never a patched method. Every mutant is named for its defect.
The draft's connect coordinator has its own mutants (``DRAFT_MUTANTS``, the section at the
end): they rewrite ConnectGroup* requests or replies, or swap a policy of the group engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakebroker.coordinator import GroupCoordinator, RequestContext
from fakebroker.coordinator.classic.group import ClassicGroup
from fakebroker.coordinator.classic.rebalance import Rebalancer
from fakebroker.coordinator.dispatch import Handler
from fakebroker.coordinator.reconcile import Installed
from fakebroker.coordinator.reconcile.records import GroupMetadataRecord, is_tombstone
from fakebroker.coordinator.reconcile.units import split_connect_units
from fakebroker.intercept.hooks import Call, Continue
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.broker import FakeBroker

JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
CONNECT_HB, CONNECT_INSTALL = (default_registry().by_api_name(n)  # the draft's APIs (ERRATA 1)
                               for n in ("ConnectGroupHeartbeat", "ConnectGroupInstallAssignment"))

#: Edits ``call.request`` or ``call.response`` in place; sees the broker's coordinator.
Edit = Callable[[GroupCoordinator, Call], None]


@dataclass(frozen=True)
class Mutant:
    on_request: tuple[tuple[int | None, Edit], ...] = ()  # (API key or None: all, edit)
    on_response: tuple[tuple[int | None, Edit], ...] = ()  # the same, on the answer
    patch: Callable[[GroupCoordinator], None] | None = None

    def install(self, broker: FakeBroker, name: str) -> None:
        """Add the hooks (kept for the broker's life) and patch its coordinator; before it
        starts."""
        coord = broker.coordinator
        for side, edits in (("request", self.on_request), ("response", self.on_response)):
            for api_key, edit in edits:
                broker.hooks.add(_editing(coord, edit), api=api_key, side=side, keep=True,
                                 name=f"mutant:{name}")
        if self.patch is not None:
            self.patch(coord)


def _editing(coord: GroupCoordinator, edit: Edit) -> Callable[[Call], Any]:
    def hook(call: Call) -> None:
        edit(coord, call)
        # Observe only: the call goes on (edited), later hooks still see it.
    return hook


# ---------------------------------------------------------------- reply rewriters

def _error_to_none(code: ErrorCode) -> Edit:
    def edit(coord: GroupCoordinator, call: Call) -> None:
        if call.response.error_code == code:  # type: ignore[union-attr]
            call.response.error_code = 0  # type: ignore[union-attr]
    return edit


def _every_member_leader(coord: GroupCoordinator, call: Call) -> None:
    body: Any = call.response
    if body.error_code == 0:
        body.leader = body.member_id


def _metadata_corrupted(coord: GroupCoordinator, call: Call) -> None:
    body: Any = call.response
    if body.error_code == 0:
        for m in body.members:
            md = bytes(m.metadata)
            if md:
                m.metadata = md[:-1] + bytes([md[-1] ^ 0xFF])


def _assignment_truncated(coord: GroupCoordinator, call: Call) -> None:
    body: Any = call.response
    if body.error_code == 0 and body.assignment:
        body.assignment = bytes(body.assignment)[:-1]


def _static_not_fenced(coord: GroupCoordinator, call: Call) -> None:
    body: Any = call.response
    if getattr(body, "error_code", 0) == ErrorCode.FENCED_INSTANCE_ID:
        body.error_code = int(ErrorCode.UNKNOWN_MEMBER_ID)


# ---------------------------------------------------------------- decisions inside the coordinator

def _no_member_id_required(coord: GroupCoordinator) -> None:
    def around(inner: Handler, ctx: RequestContext, body: Any, prepared: object | None) -> None:
        if ctx.api_version >= 4 and body.member_id == "" and body.group_instance_id is None:
            # Take the pre-KIP-394 path; the response is still built for a v4+ request.
            ctx = dataclasses.replace(ctx, api_version=3)
        inner(coord, ctx, body, prepared)
    coord.wrap("JoinGroup", around)


class _LeaveWithoutRebalance(Rebalancer):
    leaving = False  # a LeaveGroup is being handled

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if not self.leaving:
            super().maybe_prepare_rebalance_or_complete_join(group, reason)


def _leave_without_rebalance(coord: GroupCoordinator) -> None:
    rebalancer = coord.use_rebalancer(_LeaveWithoutRebalance)
    assert isinstance(rebalancer, _LeaveWithoutRebalance)

    def around(inner: Handler, ctx: RequestContext, body: Any, prepared: object | None) -> None:
        rebalancer.leaving = True
        try:
            inner(coord, ctx, body, prepared)
        finally:
            rebalancer.leaving = False
    coord.wrap("LeaveGroup", around)


class _SessionsNeverExpire(Rebalancer):
    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self._find(group_id)
        if group is not None and group.is_pending(member_id):
            super().expire_heartbeat(group_id, member_id)  # only pending ids still expire


def _sessions_never_expire(coord: GroupCoordinator) -> None:
    coord.use_rebalancer(_SessionsNeverExpire)


def _follower_sync_not_held(coord: GroupCoordinator) -> None:
    def around(inner: Handler, ctx: RequestContext, body: Any, prepared: object | None) -> None:
        inner(coord, ctx, body, prepared)
        if coord.env.answer is not None:  # answered at once
            return
        group = coord.classic_group(getattr(body, "group_id", ""))
        member_id = getattr(body, "member_id", "")
        if group is not None and group.has_member(member_id) and not group.is_leader(member_id):
            group.member(member_id).awaiting_sync = None
            coord.env.reply(ctx, coord.registry["SyncGroupResponse"].new(
                error_code=0, protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                assignment=b""))
    coord.wrap("SyncGroup", around)


def _groups_of(group_class: type[ClassicGroup]) -> Callable[[GroupCoordinator], None]:
    """Classic groups created from now on are ``group_class`` (a subclass adding no state)."""
    def patch(coord: GroupCoordinator) -> None:
        coord.classic_group_class = group_class
    return patch


class _NoBumpGroup(ClassicGroup):
    def init_next_generation(self) -> None:
        before = self.generation_id
        super().init_next_generation()
        if before >= 1:
            self.generation_id = before  # the defect: later rebalances reuse the generation


class _FirstMemberVoteGroup(ClassicGroup):
    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        first = next(iter(self.members.values()))
        return first.vote(candidates)  # the defect: the longest-standing member decides alone


def _wide_session_bounds(coord: GroupCoordinator) -> None:
    coord.config = dataclasses.replace(
        coord.config, min_session_timeout_ms=1, max_session_timeout_ms=2**31 - 1)


# ---------------------------------------------------------------- the draft's connect coordinator

DRAFT_COMPUTE = 1000  # COMPUTE_ASSIGNMENT as the fake broker numbers it (ERRATA 1)


def _connect_member(coord: GroupCoordinator, group_id: str, member_id: str) -> Any:
    group = coord.connect_group(group_id)
    if group is None or not group.engine.has_member(member_id):
        return None
    return group.engine.member(member_id)


def _work_struct(coord: GroupCoordinator, message: str, units: Any) -> Any:
    mt = coord.registry[message]
    connectors, tasks = split_connect_units(units)
    return mt.classes["ConnectorsAndTasks"](
        connectors=list(connectors),
        tasks=[mt.classes["ConnectorTaskId"](connector_id=c, task_id=t) for c, t in tasks])


def _assignment_of(call: Call) -> Any:
    """The heartbeat response's Assignment, when it is an answer that carries one."""
    body: Any = call.response
    return body.assignment if body.error_code in (0, DRAFT_COMPUTE) else None


def _null_tasks_acknowledge_revocation(coord: GroupCoordinator, call: Call) -> None:
    b: Any = call.request
    if b.connectors_and_tasks is None and b.member_epoch > 0:
        m = _connect_member(coord, b.group_id, b.member_id)
        if m is not None and m.current.pending_revocation:
            b.connectors_and_tasks = _work_struct(coord, "ConnectGroupHeartbeatRequest", m.current.assigned)


def _assignment_metadata_dropped(coord: GroupCoordinator, call: Call) -> None:
    assignment = _assignment_of(call)
    if assignment is not None:
        assignment.metadata = b""


def _assignment_version_zeroed(coord: GroupCoordinator, call: Call) -> None:
    assignment = _assignment_of(call)
    if assignment is not None:
        assignment.version = 0


def _stored_assignor_field(name: str) -> Edit:
    """Replaces one field of each resent assignor by the value the member had before, so
    a change of that field alone goes unnoticed."""
    def edit(coord: GroupCoordinator, call: Call) -> None:
        b: Any = call.request
        if b.client_assignors is not None and b.member_epoch > 0:
            m = _connect_member(coord, b.group_id, b.member_id)
            if m is not None:
                before = {a.name: a for a in m.metadata.client_assignors}
                for a in b.client_assignors:
                    if a.name in before:
                        setattr(a, name, getattr(before[a.name], name))
    return edit


def _assign_while_revoking(coord: GroupCoordinator, call: Call) -> None:
    assignment = _assignment_of(call)
    b: Any = call.request
    group = coord.connect_group(b.group_id)
    m = _connect_member(coord, b.group_id, b.member_id)
    if assignment is None or group is None or m is None or not m.current.pending_revocation:
        return
    assignment.connectors_and_tasks = _work_struct(
        coord, "ConnectGroupHeartbeatResponse", group.engine.target(b.member_id).units)


def _stale_epoch_accepted(coord: GroupCoordinator, call: Call) -> None:
    b: Any = call.request
    if b.member_epoch > 0:
        m = _connect_member(coord, b.group_id, b.member_id)
        if m is not None:
            b.member_epoch = m.current.member_epoch


def _leave_answered_with_epoch(coord: GroupCoordinator, call: Call) -> None:
    body: Any = call.response
    if body.error_code == 0 and body.member_epoch == -1:
        body.member_epoch = 0


def _duplicate_units_accepted(coord: GroupCoordinator, call: Call) -> None:
    seen: set[tuple[str, int]] = set()
    for m in call.request.members:  # type: ignore[attr-defined]
        cat = m.connectors_and_tasks
        cat.connectors = [c for c in cat.connectors if (c, -1) not in seen]
        cat.tasks = [t for t in cat.tasks if (t.connector_id, t.task_id) not in seen]
        seen |= {(c, -1) for c in cat.connectors} | {(t.connector_id, t.task_id) for t in cat.tasks}


def _ranges_not_checked(coord: GroupCoordinator, call: Call) -> None:
    b: Any = call.request
    group = coord.connect_group(getattr(b, "group_id", ""))
    if b.member_epoch == 0 and b.client_assignors and group is not None:
        ranges = [(a.minimum_version, a.maximum_version) for m in group.engine.member_ids()
                  for a in group.engine.member(m).metadata.client_assignors]
        if ranges:   # the joiner is taken to cover everyone's range, so nothing is refused
            lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
            for a in b.client_assignors:
                a.minimum_version, a.maximum_version = min(a.minimum_version, lo), max(a.maximum_version, hi)


def _connect_groups(change: Callable[[Any], None]) -> Callable[[GroupCoordinator], None]:
    """Connect groups created from now on get ``change(group)``."""
    def patch(coord: GroupCoordinator) -> None:
        base = coord.connect_group_class

        class Changed(base):  # type: ignore[valid-type,misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                change(self)
        coord.connect_group_class = Changed
    return patch


def _engine_config(**changes: Any) -> Callable[[GroupCoordinator], None]:
    """Connect groups whose engine runs with these settings changed."""
    def change(group: Any) -> None:
        group.engine.config = dataclasses.replace(group.engine.config, **changes)
    return _connect_groups(change)


def _newest_minimum(members: Any, previous: str | None) -> str | None:
    def key(mid: str) -> tuple[int, str]:
        assignors = members[mid].client_assignors
        return (-(assignors[0].minimum_version if assignors else 0), mid)
    return min(members, key=key) if members else None


def _any_worker_computes(group: Any) -> None:
    group.engine.policy = Installed(selector=_newest_minimum)


# ---------------------------------------------------------------- the draft's records (group log)

class _FilteredStore:
    """A record store passing each record through ``persisted`` (None drops it)."""

    def __init__(self, store: Any, persisted: Any) -> None:
        self.store, self.persisted = store, persisted

    def append(self, records: Any) -> None:
        out = [x for x in (self.persisted(r) for r in records) if x is not None]
        if out:
            self.store.append(out)


def _persisted(persisted: Callable[[Any], Any]) -> Callable[[GroupCoordinator], None]:
    """The coordinator writes its connect groups' records through ``persisted`` to the
    broker's store (the group-log target's, e.g. ``KafkaGroupLog``)."""
    def patch(coord: GroupCoordinator) -> None:
        if coord.connect_store is not None:
            coord.connect_store = _FilteredStore(coord.connect_store, persisted)
    return patch


def _stale_group_epoch(record: Any) -> Any:
    if isinstance(record, GroupMetadataRecord) and record.epoch > 0:
        return dataclasses.replace(record, epoch=record.epoch - 1)
    return record


#: Mutants that need a group-log target (a real Kafka; base ``fakebroker-group-log``).
GROUP_LOG_MUTANTS: dict[str, Mutant] = {
    "group-log-no-tombstones": Mutant(patch=_persisted(lambda r: None if is_tombstone(r) else r)),
    "group-log-stale-epoch": Mutant(patch=_persisted(_stale_group_epoch)),
}


DRAFT_MUTANTS: dict[str, Mutant] = {
    "null-tasks-acknowledge-revocation": Mutant(on_request=((CONNECT_HB, _null_tasks_acknowledge_revocation),)),
    "assignment-metadata-dropped": Mutant(on_response=((CONNECT_HB, _assignment_metadata_dropped),)),
    "assignment-version-zeroed": Mutant(on_response=((CONNECT_HB, _assignment_version_zeroed),)),
    "reason-change-ignored": Mutant(on_request=((CONNECT_HB, _stored_assignor_field("reason")),)),
    "metadata-change-ignored": Mutant(on_request=((CONNECT_HB, _stored_assignor_field("metadata")),)),
    "assign-while-revoking": Mutant(on_response=((CONNECT_HB, _assign_while_revoking),)),
    "stale-epoch-accepted": Mutant(on_request=((CONNECT_HB, _stale_epoch_accepted),)),
    "leave-answered-with-epoch": Mutant(on_response=((CONNECT_HB, _leave_answered_with_epoch),)),
    "duplicate-units-accepted": Mutant(on_request=((CONNECT_INSTALL, _duplicate_units_accepted),)),
    "any-worker-computes": Mutant(patch=_connect_groups(_any_worker_computes)),
    "fenced-member-kept": Mutant(patch=_engine_config(fence_removes_member=False)),
    "connect-sessions-never-expire": Mutant(patch=_engine_config(session_timeout_ms=2**31 - 1)),
    "ranges-not-checked": Mutant(on_request=((CONNECT_HB, _ranges_not_checked),)),
}


MUTANTS: dict[str, Mutant] = {
    "heartbeat-ok-while-rebalancing": Mutant(
        on_response=((HEARTBEAT, _error_to_none(ErrorCode.REBALANCE_IN_PROGRESS)),)),
    "illegal-generation-ignored": Mutant(
        on_response=((HEARTBEAT, _error_to_none(ErrorCode.ILLEGAL_GENERATION)),)),
    "sync-ok-while-rebalancing": Mutant(
        on_response=((SYNC, _error_to_none(ErrorCode.REBALANCE_IN_PROGRESS)),)),
    "every-member-leader": Mutant(on_response=((JOIN, _every_member_leader),)),
    "metadata-corrupted": Mutant(on_response=((JOIN, _metadata_corrupted),)),
    "assignment-truncated": Mutant(on_response=((SYNC, _assignment_truncated),)),
    "static-not-fenced": Mutant(on_response=((None, _static_not_fenced),)),
    "no-member-id-required": Mutant(patch=_no_member_id_required),
    "leave-without-rebalance": Mutant(patch=_leave_without_rebalance),
    "sessions-never-expire": Mutant(patch=_sessions_never_expire),
    "follower-sync-not-held": Mutant(patch=_follower_sync_not_held),
    "no-generation-bump": Mutant(patch=_groups_of(_NoBumpGroup)),
    "first-member-decides-protocol": Mutant(patch=_groups_of(_FirstMemberVoteGroup)),
    "wide-session-bounds": Mutant(patch=_wide_session_bounds),
    **DRAFT_MUTANTS,
}


def apply_mutant(broker: FakeBroker, name: str) -> None:
    """Install the named mutant on the broker (before it starts)."""
    known = {**MUTANTS, **GROUP_LOG_MUTANTS}
    try:
        mutant = known[name]
    except KeyError:
        raise ValueError(f"unknown mutant {name!r}; known: {', '.join(sorted(known))}") from None
    mutant.install(broker, name)
