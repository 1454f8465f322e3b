"""Connect's embedded protocol bytes (worker metadata, assignments), encoded and decoded with
the project's codec, for cases that carry realistic payloads through a coordinator or
check what a worker sends."""

from __future__ import annotations

from collections.abc import Iterable

from ..protocol import Struct, default_registry

REG = default_registry()
METADATA = REG["ConnectProtocolMetadata"]
ASSIGNMENT = REG["ConnectProtocolAssignment"]
PROTOCOL_VERSIONS = {"sessioned": 2, "compatible": 1, "default": 0}
Unit = tuple[str, int]  # (connector, task); task -1 = the connector instance


def connector_list(units: Iterable[Unit]) -> list[Struct]:
    cls = ASSIGNMENT.classes["ConnectorAssignment"]
    by: dict[str, list[int]] = {}
    for c, t in sorted(set(units)):
        by.setdefault(c, []).append(t)
    return [cls(connector=c, tasks=ts) for c, ts in by.items()]


def units_of(entries: Iterable[Struct] | None) -> set[Unit]:
    return {(e.connector, t) for e in entries or () for t in e.tasks}


def assignment_bytes(version: int, *, leader: str, leader_url: str = "http://leader:8083/",
                     config_offset: int = 1, assigned: Iterable[Unit] = (),
                     revoked: Iterable[Unit] | None = None, delay_ms: int = 0, error: int = 0) -> bytes:
    fields = dict(error=error, leader=leader, leader_url=leader_url, config_offset=config_offset,
                  assignment=connector_list(assigned))
    if version >= 1:
        fields.update(revoked=connector_list(revoked) if revoked is not None else None,
                      scheduled_delay=delay_ms)
    return ASSIGNMENT.encode_versioned(ASSIGNMENT.new(**fields), version)


def metadata_bytes(version: int, url: str, config_offset: int = 1,
                   owned: Iterable[Unit] | None = None, leader: str = "") -> bytes:
    if version == 0:
        return METADATA.encode_versioned(METADATA.new(url=url, config_offset=config_offset), 0)
    allocation = (assignment_bytes(version, leader=leader, config_offset=config_offset,
                                   assigned=owned, revoked=None) if owned else None)
    return METADATA.encode_versioned(
        METADATA.new(url=url, config_offset=config_offset, allocation=allocation), version)


def connect_protocols(name: str, versions: Iterable[str] = ("sessioned", "compatible", "default"),
                      owned: Iterable[Unit] | None = None, config_offset: int = 7) -> list[tuple[str, bytes]]:
    """A worker's JoinGroup protocols: each with metadata at that protocol's version."""
    owned = list(owned or [])
    return [(p, metadata_bytes(PROTOCOL_VERSIONS[p], f"http://{name}:8083/", config_offset, owned or None))
            for p in versions]
