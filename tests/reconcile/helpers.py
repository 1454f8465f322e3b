"""Shared helpers for the reconciliation-engine tests: the draft's unit notation, worker
assignors, and a way to start a connect group from a given state (records + rebuild)."""

from __future__ import annotations

from collections.abc import Mapping

from fakebroker.coordinator.reconcile import (ClientAssignor, ConnectUnit, CurrentAssignment,
                                              EngineConfig, GroupEngine, MemberState,
                                              MemberTarget, TopicPartition, topic_catalog)
from fakebroker.coordinator.reconcile.connect import connect_policy
from fakebroker.coordinator.reconcile.records import (CurrentAssignmentRecord,
                                                      CurrentAssignmentValue,
                                                      GroupMetadataRecord, MemberMetadataRecord,
                                                      MemberMetadataValue, Record,
                                                      TargetAssignmentMemberRecord,
                                                      TargetAssignmentMetadataRecord,
                                                      TargetMemberValue, UnitSetMetadataRecord)
from fakebroker.coordinator.reconcile.member import NO_PAYLOAD
from fakebroker.coordinator.reconcile.target import ServerAssigned
from fakebroker.coordinator.reconcile.units import sorted_units

GROUP = "connect-cluster"
SESSION_MS = 10_000
REBALANCE_MS = 60_000


def unit(name: str) -> ConnectUnit:
    """The draft's notation (ERRATA "Case studies"): ``AC0`` is connector A's instance,
    ``ATk`` is task k-1 of connector A."""
    connector, kind, number = name[0], name[1], int(name[2:])
    if kind == "C":
        assert number == 0, name
        return ConnectUnit.instance(connector)
    assert kind == "T" and number >= 1, name
    return ConnectUnit.of_task(connector, number - 1)


def units(*names: str) -> frozenset[ConnectUnit]:
    return frozenset(unit(n) for n in names)


ALL = ("AC0", "AT1", "AT2", "BC0", "BT1")


def assignors(low: int = 0, high: int = 2, reason: int = 0) -> tuple[ClientAssignor, ...]:
    return (ClientAssignor("cooperative", low, high, reason=reason, version=high),)


def connect_engine(**config: int | bool) -> GroupEngine[ConnectUnit]:
    return GroupEngine(EngineConfig.connect(GROUP, **config), connect_policy())


def stable_connect_group(epoch: int, assignment: Mapping[str, frozenset[ConnectUnit]],
                         ranges: Mapping[str, tuple[int, int]] | None = None,
                         now_ms: int = 0) -> GroupEngine[ConnectUnit]:
    """A connect group that has converged at ``epoch`` (built from its records)."""
    records: list[Record] = []
    for mid in sorted(assignment):
        low, high = (ranges or {}).get(mid, (0, 2))
        records.append(MemberMetadataRecord(GROUP, mid, MemberMetadataValue(
            group_epoch=epoch, instance_id=None, client_id=mid, client_host="/127.0.0.1",
            rebalance_timeout_ms=REBALANCE_MS, subscription=(), server_assignor=None,
            client_assignors=assignors(low, high))))
    everything = sorted_units(u for us in assignment.values() for u in us)
    records.append(UnitSetMetadataRecord(GROUP, epoch, (("", everything),)))
    records.append(GroupMetadataRecord(GROUP, epoch))
    for mid in sorted(assignment):
        records.append(TargetAssignmentMemberRecord(
            GROUP, mid, TargetMemberValue(sorted_units(assignment[mid]), NO_PAYLOAD)))
    records.append(TargetAssignmentMetadataRecord(GROUP, epoch))
    for mid in sorted(assignment):
        records.append(CurrentAssignmentRecord(GROUP, mid, CurrentAssignmentValue(
            member_epoch=epoch, previous_member_epoch=epoch - 1, state=MemberState.STABLE,
            assigned=sorted_units(assignment[mid]), pending_revocation=(),
            payload=NO_PAYLOAD)))
    return GroupEngine.rebuild(records, EngineConfig.connect(GROUP), connect_policy(), now_ms)


def targets(**per_member: frozenset[ConnectUnit]) -> dict[str, MemberTarget[ConnectUnit]]:
    return {mid: MemberTarget(us) for mid, us in per_member.items()}


def current(engine: GroupEngine[ConnectUnit], mid: str) -> CurrentAssignment[ConnectUnit]:
    return engine.member(mid).current


def consumer_engine(topics: dict[str, tuple[str, int]] | None = None, assignor: str = "uniform",
                    **config: int | bool) -> tuple[GroupEngine[TopicPartition],
                                                   dict[str, tuple[TopicPartition, ...]]]:
    """A consumer group whose topics the test can change (the returned catalog)."""
    catalog = topic_catalog(topics if topics is not None else {"foo": ("T-foo", 6)})
    policy: ServerAssigned[TopicPartition] = ServerAssigned(
        resolver=lambda key: catalog.get(key, ()), default=assignor)
    return GroupEngine(EngineConfig("g", **config), policy), catalog  # type: ignore[arg-type]


def tp(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in partitions)
