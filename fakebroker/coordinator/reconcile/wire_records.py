"""The engine's records as the bytes a coordinator writes to its log, and back.

A record on the log is a key and a value (``schemas/records/README.md``):

- key: the int16 record type, then the key struct at key version 0 (not flexible);
- value: the int16 value version, then the value struct (version 0, flexible);
- a null value is a tombstone.

Only connect groups (units ``ConnectUnit``) have record specs in this project (types
1003-1007 and 1009; 1008, the group configuration, has no engine record). The mapping:

| engine record | type | spec |
| --- | --- | --- |
| GroupMetadataRecord | 1003 | ConnectWorkerGroupMetadata |
| UnitSetMetadataRecord | 1004 | ConnectWorkerGroupConnectorsTasksMetadata |
| MemberMetadataRecord | 1005 | ConnectWorkerGroupMemberMetadata |
| TargetAssignmentMetadataRecord | 1006 | ConnectWorkerGroupTargetAssignmentMetadata |
| CurrentAssignmentRecord | 1007 | ConnectWorkerGroupCurrentMemberAssignment |
| TargetAssignmentMemberRecord | 1009 | ConnectWorkerGroupTargetAssignmentMember |

Encoding never drops a fact: a record carrying something the specs cannot hold raises
``UnrepresentableRecord`` naming the field. Those facts are:

- units other than ``ConnectUnit`` (consumer groups' ``TopicPartition``): no spec;
- ``MemberMetadataValue.subscription`` (non-empty) and ``.server_assignor`` (not None):
  consumer-group fields, absent from 1005;
- ``UnitSetMetadataRecord.catalog`` keys: 1004 holds the union of units only, so the
  catalog is re-derived on decode by grouping units under their connector (as the engine
  does for installed targets); a catalog keyed otherwise (e.g. everything under ``""``)
  or with an empty group cannot be written;
- the order of units in a record: ``ConnectorsAndTasks`` is decoded in ``sorted_units``
  order, so units must be written sorted and without duplicates (the engine always does);
- a tombstone of a group-level record (1003, 1004, 1006): the engine has no such record
  (the specs allow the null value; ``decode_record`` refuses it).

Malformed bytes (unknown type, truncated or trailing bytes, unknown value version, a
negative task id, a duplicate unit) raise ``MalformedRecord``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol import default_registry
from ...protocol.errors import DecodeError, EncodeError
from ...protocol.messages import Struct
from .member import AssignmentPayload, ClientAssignor, MemberState
from .records import (CurrentAssignmentRecord, CurrentAssignmentValue, GroupMetadataRecord,
                      MemberMetadataRecord, MemberMetadataValue, Record,
                      TargetAssignmentMemberRecord, TargetAssignmentMetadataRecord,
                      TargetMemberValue, UnitSetMetadataRecord)
from .units import CONNECTOR_INSTANCE, ConnectUnit, sorted_units

KEY_VERSION = 0
VALUE_VERSION = 0

#: engine record class -> (record type, spec base name)
RECORD_TYPES: dict[type, tuple[int, str]] = {
    GroupMetadataRecord: (1003, "ConnectWorkerGroupMetadata"),
    UnitSetMetadataRecord: (1004, "ConnectWorkerGroupConnectorsTasksMetadata"),
    MemberMetadataRecord: (1005, "ConnectWorkerGroupMemberMetadata"),
    TargetAssignmentMetadataRecord: (1006, "ConnectWorkerGroupTargetAssignmentMetadata"),
    CurrentAssignmentRecord: (1007, "ConnectWorkerGroupCurrentMemberAssignment"),
    TargetAssignmentMemberRecord: (1009, "ConnectWorkerGroupTargetAssignmentMember"),
}
_BY_TYPE: dict[int, tuple[type, str]] = {t: (cls, name) for cls, (t, name) in RECORD_TYPES.items()}
#: Record types with a spec the engine has no record for.
UNHANDLED_TYPES: dict[int, str] = {1008: "ConnectWorkerGroupConfiguration"}
_MEMBER_KEYED = (MemberMetadataRecord, TargetAssignmentMemberRecord, CurrentAssignmentRecord)

_INT16 = struct.Struct(">h")


class UnrepresentableRecord(ValueError):
    """An engine record carries a fact the record specs cannot hold."""

    def __init__(self, record_type: str, field: str, message: str) -> None:
        self.record_type = record_type
        self.field = field
        self.message = message
        super().__init__(f"{record_type}.{field}: {message}")


class MalformedRecord(ValueError):
    """Log bytes that are not a record of the specs (or not one the engine knows).

    ``rule`` is a short stable id: ``truncated-key``, ``unknown-type``, ``unhandled-type``,
    ``bad-key``, ``bad-value``, ``unsupported-version``, ``group-tombstone``,
    ``bad-unit``."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        self.message = message
        super().__init__(f"{rule}: {message}")


def _registry() -> Any:
    return default_registry()


def _key_type(name: str) -> Any:
    return _registry()[name + "Key"]


def _value_type(name: str) -> Any:
    return _registry()[name + "Value"]


# ---------------------------------------------------------------------------- units


def _units_struct(value_mt: Any, record: str, field: str, units: Sequence[Any]) -> Struct:
    for u in units:
        if not isinstance(u, ConnectUnit):
            raise UnrepresentableRecord(record, field, (
                f"unit {u!r} is a {type(u).__name__}; only connect units (ConnectUnit) have "
                "a record spec"))
        if u.task < CONNECTOR_INSTANCE:
            raise UnrepresentableRecord(record, field, f"unit {u!r} has a negative task id")
    if tuple(units) != sorted_units(set(units)):
        raise UnrepresentableRecord(record, field, (
            "units must be sorted and unique: ConnectorsAndTasks is read back in sorted "
            f"order, so {tuple(units)!r} would not round-trip"))
    cat_cls = value_mt.classes["ConnectorsAndTasks"]
    task_cls = value_mt.classes["ConnectorTaskId"]
    return cat_cls(connectors=[u.connector for u in units if u.is_connector],
                   tasks=[task_cls(connector_id=u.connector, task_id=u.task)
                          for u in units if not u.is_connector])


def _units_from(record: str, cat: Struct) -> tuple[ConnectUnit, ...]:
    out: list[ConnectUnit] = [ConnectUnit.instance(c) for c in cat.connectors]
    for t in cat.tasks:
        if t.task_id < 0:
            raise MalformedRecord("bad-unit", f"{record}: task id {t.task_id} of connector "
                                              f"{t.connector_id!r} is negative")
        out.append(ConnectUnit.of_task(t.connector_id, t.task_id))
    if len(set(out)) != len(out):
        dupes = sorted({u for u in out if out.count(u) > 1})
        raise MalformedRecord("bad-unit", f"{record}: duplicate units {[str(u) for u in dupes]}")
    return sorted_units(out)


def _catalog_units(record: str, catalog: tuple[tuple[str, tuple[Any, ...]], ...]) -> tuple[Any, ...]:
    everything: list[Any] = []
    for key, units in catalog:
        for u in units:
            if not isinstance(u, ConnectUnit):
                raise UnrepresentableRecord(record, "catalog", (
                    f"unit {u!r} is a {type(u).__name__}; only connect units (ConnectUnit) "
                    "have a record spec"))
        if not units:
            raise UnrepresentableRecord(record, "catalog", (
                f"key {key!r} has no units; 1004 holds units only, so an empty key is lost"))
        for u in units:
            if isinstance(u, ConnectUnit) and u.connector != key:
                raise UnrepresentableRecord(record, "catalog", (
                    f"unit {u!r} is listed under key {key!r}; 1004 holds no keys, units are "
                    "read back under their connector"))
        everything.extend(units)
    units_sorted = sorted_units(everything)
    if tuple(catalog) != _catalog_from(units_sorted):
        raise UnrepresentableRecord(record, "catalog", (
            "the catalog must be grouped by connector, keys sorted, units sorted and unique "
            "(the form read back)"))
    return units_sorted


def _catalog_from(units: tuple[Any, ...]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    keyed: dict[str, list[Any]] = {}
    for u in units:
        keyed.setdefault(u.connector if isinstance(u, ConnectUnit) else "", []).append(u)
    return tuple((k, tuple(us)) for k, us in sorted(keyed.items()))


# ---------------------------------------------------------------------------- encode


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
    """The (key, value) bytes of ``record``; value None for a tombstone."""
    entry = RECORD_TYPES.get(type(record))
    if entry is None:
        raise TypeError(f"not an engine record: {record!r}")
    rtype, name = entry
    key_mt = _key_type(name)
    key_fields: dict[str, Any] = {"group_id": record.group_id}
    if isinstance(record, _MEMBER_KEYED):
        key_fields["member_id"] = record.member_id
    try:
        key = _INT16.pack(rtype) + key_mt.encode(key_mt.new(**key_fields), KEY_VERSION)
        value_obj = _value_struct(name, record)
        value = None if value_obj is None else \
            _value_type(name).encode_versioned(value_obj, VALUE_VERSION)
    except EncodeError as e:
        raise UnrepresentableRecord(name, e.path, f"{e.rule}: {e.message}") from e
    return key, value


def _value_struct(name: str, record: Record) -> Struct | None:
    mt = _value_type(name)
    if isinstance(record, GroupMetadataRecord):
        return mt.new(epoch=record.epoch)
    if isinstance(record, UnitSetMetadataRecord):
        units = _catalog_units(name, record.catalog)
        return mt.new(epoch=record.epoch,
                      connectors_and_tasks=_units_struct(mt, name, "catalog", units))
    if isinstance(record, TargetAssignmentMetadataRecord):
        return mt.new(assignment_epoch=record.assignment_epoch)
    if record.value is None:  # member-keyed tombstone
        return None
    if isinstance(record, MemberMetadataRecord):
        v = record.value
        if v.subscription:
            raise UnrepresentableRecord(name, "subscription", (
                f"{v.subscription!r}: 1005 has no subscription (a consumer-group field)"))
        if v.server_assignor is not None:
            raise UnrepresentableRecord(name, "server_assignor", (
                f"{v.server_assignor!r}: 1005 has no server assignor (a consumer-group field)"))
        a_cls = mt.classes["Assignor"]
        return mt.new(group_epoch=v.group_epoch, instance_id=v.instance_id,
                      client_id=v.client_id, client_host=v.client_host,
                      rebalance_timeout_ms=v.rebalance_timeout_ms,
                      assignors=[a_cls(name=a.name, minimum_version=a.minimum_version,
                                       maximum_version=a.maximum_version, reason=a.reason,
                                       version=a.version, metadata=a.metadata)
                                 for a in v.client_assignors])
    if isinstance(record, TargetAssignmentMemberRecord):
        t = record.value
        return mt.new(error=t.payload.error,
                      connectors_and_tasks=_units_struct(mt, name, "units", t.units),
                      version=t.payload.version, metadata=t.payload.metadata)
    if isinstance(record, CurrentAssignmentRecord):
        c = record.value
        overlap = set(c.assigned) & set(c.pending_revocation)
        if overlap:
            raise UnrepresentableRecord(name, "pending_revocation", (
                f"units {sorted(map(str, overlap))} are both assigned and pending revocation"))
        return mt.new(member_epoch=c.member_epoch, error=c.payload.error,
                      connectors_and_tasks=_units_struct(mt, name, "assigned", c.assigned),
                      version=c.payload.version, metadata=c.payload.metadata,
                      previous_member_epoch=c.previous_member_epoch, state=c.state.value,
                      connectors_and_tasks_pending_revocation=_units_struct(
                          mt, name, "pending_revocation", c.pending_revocation))
    raise TypeError(f"not an engine record: {record!r}")  # pragma: no cover


# ---------------------------------------------------------------------------- decode


def record_type_of(key: bytes | bytearray | memoryview) -> int:
    buf = bytes(key)
    if len(buf) < 2:
        raise MalformedRecord("truncated-key", f"a key needs its 2-byte record type, got {len(buf)} byte(s)")
    return int(_INT16.unpack_from(buf, 0)[0])


def decode_record(key: bytes | bytearray | memoryview,
                  value: bytes | bytearray | memoryview | None) -> Record:
    """The engine record the log entry (``key``, ``value``) holds."""
    rtype = record_type_of(key)
    if rtype in UNHANDLED_TYPES:
        raise MalformedRecord("unhandled-type", (
            f"record type {rtype} ({UNHANDLED_TYPES[rtype]}) has no engine record"))
    if rtype not in _BY_TYPE:
        raise MalformedRecord("unknown-type", (
            f"record type {rtype} is not a connect group record (known: "
            f"{sorted(_BY_TYPE) + sorted(UNHANDLED_TYPES)})"))
    cls, name = _BY_TYPE[rtype]
    try:
        k = _key_type(name).decode(bytes(key)[2:], KEY_VERSION, base=2)
    except DecodeError as e:
        raise MalformedRecord("bad-key", f"{name}Key (type {rtype}): {e}") from e
    if value is None:
        if cls in _MEMBER_KEYED:
            return cls(k.group_id, k.member_id, None)  # type: ignore[call-arg]
        raise MalformedRecord("group-tombstone", (
            f"{name} (type {rtype}) tombstone for group {k.group_id!r}: the engine has no "
            "record that deletes a group"))
    try:
        version, v = _value_type(name).decode_versioned(value)
    except DecodeError as e:
        rule = "unsupported-version" if e.rule == "unsupported-version" else "bad-value"
        raise MalformedRecord(rule, f"{name}Value (type {rtype}): {e}") from e
    if cls is GroupMetadataRecord:
        return GroupMetadataRecord(k.group_id, v.epoch)
    if cls is UnitSetMetadataRecord:
        units = _units_from(name, v.connectors_and_tasks)
        return UnitSetMetadataRecord(k.group_id, v.epoch, _catalog_from(units))
    if cls is TargetAssignmentMetadataRecord:
        return TargetAssignmentMetadataRecord(k.group_id, v.assignment_epoch)
    if cls is MemberMetadataRecord:
        return MemberMetadataRecord(k.group_id, k.member_id, MemberMetadataValue(
            group_epoch=v.group_epoch, instance_id=v.instance_id, client_id=v.client_id,
            client_host=v.client_host, rebalance_timeout_ms=v.rebalance_timeout_ms,
            subscription=(), server_assignor=None,
            client_assignors=tuple(ClientAssignor(a.name, a.minimum_version, a.maximum_version,
                                                  a.reason, a.version, a.metadata)
                                   for a in v.assignors)))
    if cls is TargetAssignmentMemberRecord:
        return TargetAssignmentMemberRecord(k.group_id, k.member_id, TargetMemberValue(
            _units_from(name, v.connectors_and_tasks),
            AssignmentPayload(v.error, v.version, v.metadata)))
    # CurrentAssignmentRecord
    assigned = _units_from(name, v.connectors_and_tasks)
    pending = _units_from(name, v.connectors_and_tasks_pending_revocation)
    if set(assigned) & set(pending):
        raise MalformedRecord("bad-unit", f"{name}: units both assigned and pending revocation")
    return CurrentAssignmentRecord(k.group_id, k.member_id, CurrentAssignmentValue(
        member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
        state=MemberState.from_value(v.state), assigned=assigned,
        pending_revocation=pending, payload=AssignmentPayload(v.error, v.version, v.metadata)))


# ---------------------------------------------------------------------------- the log


@dataclass(frozen=True)
class LogEntry:
    offset: int
    key: bytes
    value: bytes | None


class ByteLogStore:
    """A ``RecordStore`` keeping what a coordinator's log partition keeps: bytes.

    ``compacted()`` is what log compaction converges to: the latest value per key (keys
    compared as bytes), tombstones removed, in the order of those latest entries."""

    def __init__(self) -> None:
        self.entries: list[LogEntry] = []

    def append(self, records: Sequence[Record]) -> None:
        encoded = [encode_record(r) for r in records]  # all or nothing
        for key, value in encoded:
            self.entries.append(LogEntry(len(self.entries), key, value))

    def append_bytes(self, key: bytes, value: bytes | None) -> None:
        self.entries.append(LogEntry(len(self.entries), bytes(key),
                                     None if value is None else bytes(value)))

    def compacted(self) -> list[LogEntry]:
        return compact_entries(self.entries)

    def records(self) -> list[Record]:
        """The whole log, decoded."""
        return decode_entries(self.entries)

    def compacted_records(self) -> list[Record]:
        return decode_entries(self.compacted())


def compact_entries(entries: Iterable[LogEntry]) -> list[LogEntry]:
    last: dict[bytes, LogEntry] = {}
    for e in entries:
        last[e.key] = e
    return [e for e in sorted(last.values(), key=lambda e: e.offset) if e.value is not None]


def decode_entries(entries: Iterable[LogEntry]) -> list[Record]:
    return [decode_record(e.key, e.value) for e in entries]


__all__ = [
    "KEY_VERSION", "VALUE_VERSION", "RECORD_TYPES", "UNHANDLED_TYPES", "UnrepresentableRecord",
    "MalformedRecord", "encode_record", "decode_record", "record_type_of", "LogEntry",
    "ByteLogStore", "compact_entries", "decode_entries",
]
