"""Connect groups persisted on a real Kafka (``fakebroker.realkafka.group_log``): three
scripted workers converge with the engine writing its records to a topic, a fresh
coordinator rebuilt from the topic has the same durable state, a rebuild at every batch
boundary is consistent, and a departed member's tombstones are on the topic.

Each ``RecordStore.append`` (the records of one state change) is one v2 batch in one
Produce request, and Kafka appends a batch atomically: a reader or a crash can only ever
cut the log between batches, so the cut test cuts at each batch boundary (never inside
one)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from fakebroker.coordinator.reconcile import ConnectUnit, EngineConfig, GroupEngine, Heartbeat
from fakebroker.coordinator.reconcile.connect import connect_policy
from fakebroker.coordinator.reconcile.member import ClientAssignor
from fakebroker.testing.reconcile_sim import Driver, SimMember, round_robin_installer
from fakebroker.coordinator.reconcile.wire_records import decode_record, record_type_of
from fakebroker.realkafka import RealKafka
from fakebroker.realkafka.group_log import (DEFAULT_TOPIC, KafkaGroupLog, encode_batch,
                                            read_log, rebuild_groups)
from fakebroker.realkafka.records import decode_batches

pytestmark = pytest.mark.realkafka
G = "connect-cluster"
UNITS = [ConnectUnit.instance("A"), *(ConnectUnit.of_task("A", i) for i in range(4)),
         ConnectUnit.instance("B"), ConnectUnit.of_task("B", 0)]
ASSIGNORS = (ClientAssignor("cooperative", 0, 2, reason=0, version=2),)
WORKERS = ("w1", "w2", "w3")


class Recording:
    """The real store, plus the writer's durable state after each driver step."""

    def __init__(self, log: KafkaGroupLog) -> None:
        self.log = log
        self.states: dict[int, Any] = {}  # batches written so far -> state at that moment

    def append(self, records: Any) -> None:
        self.log.append(records)


def step(driver: Driver[ConnectUnit], rec: Recording, fn: Any) -> None:
    fn()
    rec.states[len(rec.log.batches)] = driver.engine.durable_state()


def converge(driver: Driver[ConnectUnit], rec: Recording, max_rounds: int = 50) -> None:
    for _ in range(max_rounds):
        if driver.is_stable():
            return
        for mid in sorted(driver.members):
            step(driver, rec, lambda mid=mid: driver.beat(mid))
    assert driver.is_stable(), "not stable"


def run_group(kafka: RealKafka, topic: str) -> tuple[Driver[ConnectUnit], Recording]:
    """w1..w3 join and converge; then w3 leaves and w1, w2 converge again."""
    log = KafkaGroupLog(kafka.bootstrap, topic)
    rec = Recording(log)
    engine: GroupEngine[ConnectUnit] = GroupEngine(EngineConfig.connect(G), connect_policy(), rec)
    driver: Driver[ConnectUnit] = Driver(engine, installer=round_robin_installer(UNITS))
    rec.states[0] = engine.durable_state()
    for w in WORKERS:
        driver.add(SimMember(w, client_assignors=ASSIGNORS))
    converge(driver, rec)
    return driver, rec


def leave(driver: Driver[ConnectUnit], rec: Recording, mid: str) -> None:
    def go() -> None:
        driver.now_ms += 1
        assert not driver.engine.heartbeat(Heartbeat(member_id=mid, member_epoch=-1), driver.now_ms).error
        del driver.members[mid]
    step(driver, rec, go)
    converge(driver, rec)


def same_state(a: GroupEngine[ConnectUnit], b: GroupEngine[ConnectUnit]) -> None:
    assert a.durable_state() == b.durable_state()
    assert (a.group_epoch, a.assignment_epoch) == (b.group_epoch, b.assignment_epoch)
    assert a.member_ids() == b.member_ids()
    for mid in a.member_ids():
        assert a.target(mid) == b.target(mid)
        ca, cb = a.member(mid).current, b.member(mid).current
        assert (ca.member_epoch, ca.state, ca.assigned, ca.pending_revocation) == \
               (cb.member_epoch, cb.state, cb.assigned, cb.pending_revocation)


def test_batch_encoding_round_trips_through_the_decoder() -> None:
    batch = encode_batch([(b"k1", b"v1"), (b"k2", None), (b"k3", b"")], 1234, base_offset=7)
    got = decode_batches(batch)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (7, 1234, b"k1", b"v1"), (8, 1234, b"k2", None), (9, 1234, b"k3", b"")]
    with pytest.raises(ValueError):
        encode_batch([], 0)


def test_three_workers_converge_and_a_fresh_coordinator_rebuilds_them(real_kafka: RealKafka) -> None:
    topic = f"{DEFAULT_TOPIC}-{uuid.uuid4().hex[:8]}"
    driver, rec = run_group(real_kafka, topic)
    try:
        engine = driver.engine
        assert engine.member_ids() == WORKERS
        held = [u for w in WORKERS for u in engine.member(w).current.assigned]
        assert sorted(held, key=str) == sorted(UNITS, key=str)  # every unit, once

        log = asyncio.run(read_log(real_kafka.bootstrap, topic))
        # The topic holds exactly the batches the store wrote, back to back from offset 0.
        assert [b.base_offset for b in rec.log.batches] == \
               [0] + [b.end for b in rec.log.batches[:-1]]
        assert len(log) == rec.log.batches[-1].end
        rebuilt = rebuild_groups(log, now_ms=driver.now_ms)
        assert set(rebuilt) == {G}
        same_state(rebuilt[G], engine)

        # The workers keep heartbeating against the rebuilt coordinator: nothing changes.
        fresh = Driver(rebuilt[G], members=driver.members, installer=driver.installer,
                       now_ms=driver.now_ms)
        assert fresh.is_stable()
        fresh.round()
        assert fresh.is_stable() and rebuilt[G].group_epoch == engine.group_epoch
    finally:
        rec.log.close()


def test_a_rebuild_at_every_batch_boundary_is_consistent(real_kafka: RealKafka) -> None:
    topic = f"{DEFAULT_TOPIC}-{uuid.uuid4().hex[:8]}"
    driver, rec = run_group(real_kafka, topic)
    try:
        leave(driver, rec, "w3")
        log = asyncio.run(read_log(real_kafka.bootstrap, topic))
        boundaries = [0] + [b.end for b in rec.log.batches]
        assert len(rec.log.batches) > 5
        assert boundaries[-1] == len(log)
        for index, cut in enumerate(boundaries):
            groups = rebuild_groups(log, upto=cut, now_ms=driver.now_ms)
            if cut == 0:
                assert groups == {}
                continue
            engine = groups[G]
            snap = engine.durable_state()
            if index in rec.states:  # a driver step ended here: the writer's very state
                assert snap == rec.states[index], f"cut after batch {index} (offset {cut})"
            # Always: a self-consistent group.
            members = {m for m, _, _ in snap.members}
            assert {m for m, _ in snap.current} <= members
            assert {m for m, _ in snap.target} <= members
            assert snap.assignment_epoch <= snap.group_epoch
            for mid in members:
                cur = engine.member(mid).current
                assert cur.member_epoch <= snap.assignment_epoch
            owned = [u for _, c in snap.current for u in (*c.assigned, *c.pending_revocation)]
            assert len(owned) == len(set(owned)), f"a unit held twice at offset {cut}"
            # And the workers (rejoining at epoch 0) converge from it.
            sims = Driver(engine, installer=round_robin_installer(UNITS), now_ms=driver.now_ms)
            for mid in members:
                sims.add(SimMember(mid, client_assignors=ASSIGNORS))
            sims.converge()
        assert rec.states[len(rec.log.batches)] == driver.engine.durable_state()
    finally:
        rec.log.close()


def test_tombstones_remove_a_departed_member(real_kafka: RealKafka) -> None:
    topic = f"{DEFAULT_TOPIC}-{uuid.uuid4().hex[:8]}"
    driver, rec = run_group(real_kafka, topic)
    try:
        before = len(rec.log.batches)
        leave(driver, rec, "w3")
        log = asyncio.run(read_log(real_kafka.bootstrap, topic))
        leave_batch = rec.log.batches[before]
        departed = [r for r in log if leave_batch.base_offset <= r.offset < leave_batch.end]
        # The leave is one batch: w3's tombstones (current, target, metadata), then the
        # group-level records of the epoch bump.
        tombstones = [r for r in departed if r.value is None]
        assert [record_type_of(r.key) for r in tombstones] == [1007, 1009, 1005]  # type: ignore[arg-type]
        assert all(decode_record(r.key, None).member_id == "w3" for r in tombstones)  # type: ignore[arg-type, union-attr]
        # The last word on each of w3's keys is a tombstone: compaction drops them all.
        last: dict[bytes, Any] = {}
        for r in log:
            last[r.key] = r.value  # type: ignore[index]
        w3_keys = [k for k in last if getattr(decode_record(k, None) if record_type_of(k) in (1005, 1007, 1009)
                                              else None, "member_id", None) == "w3"]
        assert len(w3_keys) == 3 and all(last[k] is None for k in w3_keys)
        rebuilt = rebuild_groups(log, now_ms=driver.now_ms)[G]
        assert rebuilt.member_ids() == ("w1", "w2")
        same_state(rebuilt, driver.engine)
    finally:
        rec.log.close()
