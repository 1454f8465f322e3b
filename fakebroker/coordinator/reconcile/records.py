"""The engine's durable state as records, and where records go.

Records are the single source of durable state: the engine changes its durable state only
by replaying records it has just generated (as Kafka's group coordinator does), so
``rebuild(records)`` from a log, or from its compacted form, gives the same state.

Each record mirrors one record spec of the draft (``schemas/records/``, ERRATA entries
30-38) and, for consumer groups, its ConsumerGroup* counterpart in Kafka 4.x; the units
are the engine's generic units (``wire_records.py`` maps them onto the connect specs):

| record here | connect spec (type) | Kafka's consumer record |
| --- | --- | --- |
| GroupMetadataRecord | ConnectWorkerGroupMetadata (1003) | ConsumerGroupMetadata |
| UnitSetMetadataRecord | ConnectWorkerGroupConnectorsTasksMetadata (1004) | ConsumerGroupPartitionMetadata |
| MemberMetadataRecord | ConnectWorkerGroupMemberMetadata (1005) | ConsumerGroupMemberMetadata |
| TargetAssignmentMetadataRecord | ConnectWorkerGroupTargetAssignmentMetadata (1006) | ConsumerGroupTargetAssignmentMetadata |
| CurrentAssignmentRecord | ConnectWorkerGroupCurrentMemberAssignment (1007) | ConsumerGroupCurrentMemberAssignment |
| TargetAssignmentMemberRecord | ConnectWorkerGroupTargetAssignmentMember (1009) | ConsumerGroupTargetAssignmentMember |

A member-keyed record with ``value=None`` is a tombstone. Records with the same ``key``
replace each other under compaction. Group metadata for X members is X + 2 records (X
member metadata, one unit set, the group record last), as the draft's Records section says;
the whole durable group is that plus X + 1 target-assignment records and X current
assignments (``compacted_size``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, Union

from .member import AssignmentPayload, ClientAssignor, MemberState
from .units import U

#: (record type name, group id, member id or "")
RecordKey = tuple[str, str, str]


@dataclass(frozen=True)
class GroupMetadataRecord:
    group_id: str
    epoch: int

    @property
    def key(self) -> RecordKey:
        return ("GroupMetadata", self.group_id, "")


@dataclass(frozen=True)
class UnitSetMetadataRecord(Generic[U]):
    """The units the group assigns, by key (topic name / connector name), and the group
    epoch they were recorded at. Consumer groups: the subscribed topics' partitions (a
    change bumps the group epoch). Connect groups: the union of the last installed target
    (ERRATA 20; recorded without a bump)."""

    group_id: str
    epoch: int
    catalog: tuple[tuple[str, tuple[U, ...]], ...]

    @property
    def key(self) -> RecordKey:
        return ("UnitSetMetadata", self.group_id, "")


@dataclass(frozen=True)
class MemberMetadataValue:
    group_epoch: int
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscription: tuple[str, ...]
    server_assignor: str | None
    client_assignors: tuple[ClientAssignor, ...]


@dataclass(frozen=True)
class MemberMetadataRecord:
    group_id: str
    member_id: str
    value: MemberMetadataValue | None

    @property
    def key(self) -> RecordKey:
        return ("MemberMetadata", self.group_id, self.member_id)


@dataclass(frozen=True)
class TargetAssignmentMetadataRecord:
    group_id: str
    assignment_epoch: int

    @property
    def key(self) -> RecordKey:
        return ("TargetAssignmentMetadata", self.group_id, "")


@dataclass(frozen=True)
class TargetMemberValue(Generic[U]):
    units: tuple[U, ...]
    payload: AssignmentPayload


@dataclass(frozen=True)
class TargetAssignmentMemberRecord(Generic[U]):
    group_id: str
    member_id: str
    value: TargetMemberValue[U] | None

    @property
    def key(self) -> RecordKey:
        return ("TargetAssignmentMember", self.group_id, self.member_id)


@dataclass(frozen=True)
class CurrentAssignmentValue(Generic[U]):
    """Kafka's current-assignment value. ``previous_member_epoch``, ``state`` and
    ``pending_revocation`` are tagged fields 0-2 of the connect spec 1007 (ERRATA 47);
    without them a reloaded coordinator could neither accept a lost response's retry nor
    know a revocation is pending (``wire_records``)."""

    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: tuple[U, ...]
    pending_revocation: tuple[U, ...]
    payload: AssignmentPayload


@dataclass(frozen=True)
class CurrentAssignmentRecord(Generic[U]):
    group_id: str
    member_id: str
    value: CurrentAssignmentValue[U] | None

    @property
    def key(self) -> RecordKey:
        return ("CurrentAssignment", self.group_id, self.member_id)


Record = Union[GroupMetadataRecord, UnitSetMetadataRecord, MemberMetadataRecord,
               TargetAssignmentMetadataRecord, TargetAssignmentMemberRecord,
               CurrentAssignmentRecord]


def is_tombstone(record: Record) -> bool:
    return getattr(record, "value", True) is None


class RecordStore(Protocol):
    """Where the engine writes its records (a compacted topic partition, in Kafka)."""

    def append(self, records: Sequence[Record]) -> None: ...


class InMemoryRecordStore:
    """An append-only log with the view a compacted topic converges to."""

    def __init__(self) -> None:
        self.log: list[Record] = []

    def append(self, records: Sequence[Record]) -> None:
        self.log.extend(records)

    def compacted(self) -> list[Record]:
        return compact(self.log)


class CompactedRecordStore:
    """The view a compacted topic converges to, kept as records arrive: the last record
    of each key, tombstones dropped, in the order those records were written. Its memory
    is the group's live state, where ``InMemoryRecordStore`` keeps every record ever
    written (a long-lived group's log grows with every heartbeat that moves an epoch)."""

    def __init__(self) -> None:
        self._last: dict[RecordKey, Record] = {}

    def append(self, records: Sequence[Record]) -> None:
        for record in records:
            key = record.key
            self._last.pop(key, None)  # re-inserted last: the order of the last writes
            if not is_tombstone(record):
                self._last[key] = record

    def compacted(self) -> list[Record]:
        return list(self._last.values())


def compact(records: Iterable[Record]) -> list[Record]:
    """What compaction keeps: the last record of each key, tombstones dropped, in the
    order those last records were written."""
    last: dict[RecordKey, tuple[int, Record]] = {}
    for offset, record in enumerate(records):
        last[record.key] = (offset, record)
    kept = sorted(last.values(), key=lambda pair: pair[0])
    return [record for _, record in kept if not is_tombstone(record)]


def group_metadata_records(records: Iterable[Record]) -> list[Record]:
    """The records the draft calls the group's metadata (member metadata, unit set,
    group epoch): X + 2 of them for a group of X members once compacted."""
    kinds = (MemberMetadataRecord, UnitSetMetadataRecord, GroupMetadataRecord)
    return [r for r in compact(records) if isinstance(r, kinds)]


__all__ = [
    "RecordKey", "GroupMetadataRecord", "UnitSetMetadataRecord", "MemberMetadataValue",
    "MemberMetadataRecord", "TargetAssignmentMetadataRecord", "TargetMemberValue",
    "TargetAssignmentMemberRecord", "CurrentAssignmentValue", "CurrentAssignmentRecord",
    "Record", "is_tombstone", "RecordStore", "InMemoryRecordStore", "CompactedRecordStore",
    "compact",
    "group_metadata_records",
]
