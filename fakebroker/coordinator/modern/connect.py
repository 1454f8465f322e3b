"""The draft's ``connect`` group type: a ``GroupEngine`` over connectors and tasks whose
target a selected worker computes and installs (ConnectGroupPrepareAssignment /
ConnectGroupInstallAssignment), with the draft's rules as ``schemas/ERRATA.md`` resolves
them (``../reconcile/connect.py``).

Timeouts: the draft keeps KIP-848's broker-side session (``connect_session_timeout_ms``,
by default Connect's 10 s) and the member's RebalanceTimeoutMs for revocations. A
heartbeat answered FENCED_MEMBER_EPOCH also removes the member (draft, ConnectGroupHeartbeat
Request Handling, step 3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..config import CoordinatorConfig
from ..env import Env
from ..reconcile import (ClientAssignor, ConnectUnit, EngineConfig, GroupEngine, Installed,
                         MemberState, Outcome)
from ..reconcile.connect import connect_policy, connect_selector, selected_assignor
from ..reconcile.member import NO_PAYLOAD
from ..reconcile.records import (CompactedRecordStore, CurrentAssignmentRecord,
                                 CurrentAssignmentValue, GroupMetadataRecord,
                                 MemberMetadataRecord, MemberMetadataValue,
                                 Record, RecordStore, TargetAssignmentMemberRecord,
                                 TargetAssignmentMetadataRecord, TargetMemberValue,
                                 UnitSetMetadataRecord)
from ..reconcile.units import sorted_units
from .group import ModernGroup

CONNECT = "connect"


class ConnectGroup(ModernGroup[ConnectUnit]):
    type = CONNECT
    listed_protocol_type = CONNECT  # Connect's embedded protocol type

    def __init__(self, group_id: str, env: Env, records: Iterable[Record] | None = None,
                 *, classic_member_ids: frozenset[str] = frozenset(),
                 store: RecordStore | None = None) -> None:
        """A new, empty group; or, with ``records``, the group they describe (rebuilt as
        Kafka loads a group: fresh session timeouts from ``env.now_ms``). ``store``: where
        the engine writes its records (default: in memory, compacted as a topic would be,
        so a long-lived group holds its live records only); a rebuild does not rewrite
        ``records`` to it.
        ``classic_member_ids``: members carried over from a classic group (``../migration.py``),
        never selected to compute the assignment."""
        cfg: CoordinatorConfig = env.config
        config = EngineConfig.connect(group_id, session_timeout_ms=cfg.connect_session_timeout_ms,
                                      heartbeat_interval_ms=cfg.connect_heartbeat_interval_ms,
                                      max_size=cfg.connect_max_size, fence_removes_member=True)
        policy = connect_policy() if not classic_member_ids else Installed(
            selector=_selector_without(classic_member_ids))
        store = store if store is not None else CompactedRecordStore()
        engine: GroupEngine[ConnectUnit] = (
            GroupEngine(config, policy, store) if records is None
            else GroupEngine.rebuild(records, config, policy, env.now_ms, store))
        super().__init__(group_id, env, engine)
        # Migration (``../migration.py``): the classic members carried over, by id, the
        # classic protocol they used, and the downgrade hook (M8).
        self.classic_members: dict[str, Any] = {}
        self.classic_protocol: str | None = None
        self.on_only_classic: Callable[[], None] | None = None

    def absorb(self, outcome: Outcome) -> None:
        super().absorb(outcome)
        if self.on_only_classic is not None:
            members = self.engine.member_ids()
            if members and all(m in self.classic_members for m in members):
                hook, self.on_only_classic = self.on_only_classic, None
                hook()

    def assignor_name(self) -> str | None:
        """The client-side assignor every member supports (the vote), or None."""
        return self.engine.of_members(selected_assignor)


def _selector_without(excluded: frozenset[str]) -> Any:
    def select(members: Any, previous: str | None) -> str | None:
        return connect_selector({m: md for m, md in members.items() if m not in excluded},
                                previous)
    return select


def converged_records(group_id: str, epoch: int,
                      members: Mapping[str, tuple[Iterable[ConnectUnit], tuple[ClientAssignor, ...]]],
                      rebalance_timeout_ms: int = 60_000) -> list[Record]:
    """The records of a connect group that has converged at ``epoch``: every member in
    its metadata, target and current assignment at that epoch, stable, holding its units
    (``members``: member id -> (units, client assignors)). For starting a scenario from a
    given state, e.g. the draft's case studies at epoch 35."""
    records: list[Record] = []
    for mid in sorted(members):
        records.append(MemberMetadataRecord(group_id, mid, MemberMetadataValue(
            group_epoch=epoch, instance_id=None, client_id=mid, client_host="/127.0.0.1",
            rebalance_timeout_ms=rebalance_timeout_ms, subscription=(), server_assignor=None,
            client_assignors=members[mid][1])))
    keyed: dict[str, list[ConnectUnit]] = {}
    for unit in sorted_units(u for units, _ in members.values() for u in units):
        keyed.setdefault(unit.connector, []).append(unit)
    records.append(UnitSetMetadataRecord(group_id, epoch,
                                         tuple((k, tuple(v)) for k, v in sorted(keyed.items()))))
    records.append(GroupMetadataRecord(group_id, epoch))
    for mid in sorted(members):
        records.append(TargetAssignmentMemberRecord(group_id, mid, TargetMemberValue(
            sorted_units(members[mid][0]), NO_PAYLOAD)))
    records.append(TargetAssignmentMetadataRecord(group_id, epoch))
    for mid in sorted(members):
        records.append(CurrentAssignmentRecord(group_id, mid, CurrentAssignmentValue(
            member_epoch=epoch, previous_member_epoch=epoch - 1, state=MemberState.STABLE,
            assigned=sorted_units(members[mid][0]), pending_revocation=(), payload=NO_PAYLOAD)))
    return records


__all__ = ["CONNECT", "ConnectGroup", "converged_records"]
