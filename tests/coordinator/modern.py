"""Scripted consumer and connect members for the heartbeat-driven group types, through the
codec (the ``Harness`` encodes and decodes every request and reply at its version)."""

from __future__ import annotations

import gc
import uuid
from dataclasses import dataclass, field
from typing import Any, get_args

from fakebroker.coordinator import FixedTopics
from fakebroker.coordinator.modern import ConnectGroup, ConsumerGroup
from fakebroker.coordinator.errors import DraftErrorCode
from fakebroker.coordinator.reconcile import ConnectUnit, Record
from fakebroker.protocol.error_codes import ErrorCode

from .harness import REG, Harness, make_config

E = ErrorCode
D = DraftErrorCode
TOPICS = {"foo": 6, "bar": 3}

HbTopic = REG["ConsumerGroupHeartbeatRequest"].cls.TopicPartitions  # type: ignore[attr-defined]
_CG = REG["ConnectGroupHeartbeatRequest"].cls  # type: ignore[attr-defined]
_IA = REG["ConnectGroupInstallAssignmentRequest"].cls  # type: ignore[attr-defined]


def live_records() -> int:
    """Engine records alive in this process (what the groups' stores keep, among others)."""
    kinds = get_args(Record)
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kinds))


def consumer_harness(**config: Any) -> ModernHarness:
    return ModernHarness(config=make_config(**config), topics=FixedTopics(TOPICS))


def tid(topic: str) -> uuid.UUID:
    return FixedTopics(TOPICS).id_of(topic)  # type: ignore[return-value]


def tps(**topics: list[int]) -> list[Any]:
    """``tps(foo=[0, 1])``: a request's TopicPartitions."""
    return [HbTopic(topic_id=tid(t), partitions=ps) for t, ps in topics.items()]


def assigned(reply: Any) -> dict[str, list[int]] | None:
    """A heartbeat reply's assignment by topic name (None when it carries none)."""
    if reply.assignment is None:
        return None
    names = {tid(t): t for t in TOPICS}
    return {names[t.topic_id]: list(t.partitions) for t in reply.assignment.topic_partitions}


def cat(*units: str) -> Any:
    """The draft's notation (``AC0`` connector A, ``AT1`` its task 0) as ConnectorsAndTasks."""
    connectors = [u[0] for u in units if u[1] == "C"]
    tasks = [(u[0], int(u[2:]) - 1) for u in units if u[1] == "T"]
    return connectors, tasks


def connect_units(connectors_and_tasks: Any) -> frozenset[ConnectUnit]:
    return frozenset([ConnectUnit.instance(c) for c in connectors_and_tasks.connectors]
                     + [ConnectUnit(t.connector_id, t.task_id) for t in connectors_and_tasks.tasks])


def names(units: frozenset[ConnectUnit]) -> set[str]:
    """Units back in the draft's notation."""
    return {f"{u.connector}C0" if u.is_connector else f"{u.connector}T{u.task + 1}" for u in units}


@dataclass
class ModernHarness(Harness):
    """A ``Harness`` with ConsumerGroup* and ConnectGroup* request helpers."""

    connect_epochs: dict[str, int] = field(default_factory=dict)
    connect_assignors: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ consumer groups

    def cghb(self, member_id: str, epoch: int, *, group: str = "g", version: int = 1,
             join: bool | None = None, **fields: Any) -> Any:
        """A ConsumerGroupHeartbeat; a join (epoch 0, ``join`` not False) fills in the
        fields a first heartbeat must carry unless given."""
        f: dict[str, Any] = dict(group_id=group, member_id=member_id, member_epoch=epoch)
        if epoch == 0 and join is not False:
            f.update(rebalance_timeout_ms=60_000, subscribed_topic_names=["foo"],
                     topic_partitions=[])
        f.update(fields)
        return self.reply(self.send("ConsumerGroupHeartbeat", version, **f))

    def cgdescribe(self, *groups: str, version: int = 1, ops: bool = False) -> Any:
        return self.reply(self.send("ConsumerGroupDescribe", version, group_ids=list(groups),
                                    include_authorized_operations=ops))

    def consumer(self, group: str = "g") -> ConsumerGroup:
        g = self.coord.consumer_group(group)
        assert g is not None
        return g

    # ------------------------------------------------------------------ connect groups

    def connect_hb(self, member_id: str, epoch: int | None = None, *, group: str = "g",
                   owned: tuple[str, ...] | None = None, assignors: Any = "default",
                   rebalance: int = -1, **fields: Any) -> Any:
        """A ConnectGroupHeartbeat. ``epoch`` defaults to the epoch the member last got;
        a join (epoch 0) sends a rebalance timeout, its assignors and owns nothing."""
        if epoch is None:
            epoch = self.connect_epochs.get(member_id, 0)
        if epoch == 0:
            # A join, or a member still at epoch 0 (no target installed yet): a full request.
            rebalance = 60_000 if rebalance == -1 else rebalance
            owned = () if owned is None else owned
            if assignors == "default":
                assignors = self.connect_assignors.get(member_id, [connect_assignor()])
        elif assignors == "default":
            assignors = None
        if assignors is not None:
            self.connect_assignors[member_id] = assignors
        f: dict[str, Any] = dict(group_id=group, member_id=member_id, member_epoch=epoch,
                                 rebalance_timeout_ms=rebalance, client_assignors=assignors,
                                 connectors_and_tasks=None if owned is None else cat_struct(owned))
        f.update(fields)
        r = self.reply(self.send("ConnectGroupHeartbeat", 0, **f))
        if r.error_code in (0, D.COMPUTE_ASSIGNMENT):
            self.connect_epochs[member_id] = r.member_epoch
        elif r.error_code in (E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH):
            self.connect_epochs[member_id] = 0
        return r

    def prepare(self, member_id: str, epoch: int | None = None, *, group: str = "g") -> Any:
        epoch = self.connect_epochs.get(member_id, 0) if epoch is None else epoch
        return self.reply(self.send("ConnectGroupPrepareAssignment", 0, group_id=group,
                                    member_id=member_id, member_epoch=epoch))

    def install(self, member_id: str, group_epoch: int, assignment: dict[str, tuple[str, ...]],
                *, epoch: int | None = None, group: str = "g", error: int = 0,
                versions: dict[str, int] | None = None, **fields: Any) -> Any:
        epoch = self.connect_epochs.get(member_id, 0) if epoch is None else epoch
        members = [_IA.Member(member_id=m, connectors_and_tasks=cat_struct(us, _IA),
                              version=(versions or {}).get(m, 1), metadata=b"md-" + m.encode())
                   for m, us in assignment.items()]
        f: dict[str, Any] = dict(group_id=group, member_id=member_id, member_epoch=epoch,
                                 group_epoch=group_epoch, error=error, members=members)
        f.update(fields)
        return self.reply(self.send("ConnectGroupInstallAssignment", 0, **f))

    def connect(self, group: str = "g") -> ConnectGroup:
        g = self.coord.connect_group(group)
        assert g is not None
        return g


def connect_assignor(name: str = "sessioned", low: int = 0, high: int = 2, *, reason: int = 0,
                     version: int | None = None, metadata: bytes = b"meta") -> Any:
    return _CG.Assignor(name=name, minimum_version=low, maximum_version=high, reason=reason,
                        version=high if version is None else version, metadata=metadata)


def cat_struct(units: tuple[str, ...], cls: Any = _CG) -> Any:
    connectors, tasks = cat(*units)
    return cls.ConnectorsAndTasks(
        connectors=connectors,
        tasks=[cls.ConnectorTaskId(connector_id=c, task_id=t) for c, t in tasks])
