"""The connect-group log topic is compacted by the real Kafka, and the groups rebuilt from
the compacted topic are the groups that were written.

``KafkaGroupLog`` creates its topic with CreateTopics and ``cleanup.policy=compact``; these
tests add topic configs that make Kafka's log cleaner act within seconds: segments roll
after ``segment.ms`` = 100 ms (a roll happens on the first append after that), any dirty
data makes the log cleanable (``min.cleanable.dirty.ratio`` 0.01, ``min.compaction.lag.ms``
0), and tombstones may go as soon as the cleaner has seen them once
(``delete.retention.ms`` 0).

What Kafka guarantees, and so what is asserted:

* the cleaner never touches the active (last) segment, so each wait for a cleaning pass
  first appends a batch after ``segment.ms``: that batch rolls the segment, and every
  offset below it becomes cleanable. The batch restates the group's latest
  GroupMetadata record (same key, same value), a write that changes no state;
* compaction never moves or alters a record, it only removes records: every record read
  is the record written at that offset, and the records of the active segment are all
  there;
* once a pass has covered a range, each key appears there at most once: a live key
  exactly once, as the latest record written for it; a key whose latest record is a
  tombstone either not at all or only as that tombstone. A tombstone is kept by the
  first pass that cleans it (which stamps its batch with a delete horizon: that time +
  ``delete.retention.ms``) and dropped by the first pass after the horizon: so after one
  pass the departed member's tombstones may or may not be there (an earlier pass may
  have stamped them while the group was still being driven), after a second pass they
  are gone for certain;
* the cleaner wakes every ``log.cleaner.backoff.ms`` (15 s by default; the tests' broker
  keeps it) when it has nothing to do, so a pass is awaited by polling the topic,
  bounded by ``PASS_TIMEOUT_S``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from fakebroker.coordinator.reconcile import ConnectUnit, EngineConfig, GroupEngine, Heartbeat
from fakebroker.coordinator.reconcile.connect import connect_policy
from fakebroker.testing.reconcile_sim import Driver, SimMember, round_robin_installer
from fakebroker.coordinator.reconcile.wire_records import (decode_record, encode_record,
                                                           record_type_of)
from fakebroker.realkafka import RealKafka
from fakebroker.realkafka.group_log import (DEFAULT_TOPIC, GroupLogError, KafkaGroupLog,
                                            load_groups, read_log)
from fakebroker.realkafka.records import Record

from .test_group_log import ASSIGNORS, UNITS, WORKERS, G, same_state  # the log tests' group

pytestmark = pytest.mark.realkafka

DEPARTED = "w3"
GROUP_METADATA = 1003
MEMBER_KEYED = (1005, 1007, 1009)  # member metadata, current assignment, target member

SEGMENT_MS = 100
CLEANER_CONFIGS = {"segment.ms": SEGMENT_MS, "min.cleanable.dirty.ratio": 0.01,
                   "delete.retention.ms": 0, "min.compaction.lag.ms": 0}
#: One cleaning pass: up to one cleaner back-off (15 s) plus the pass, on a loaded machine.
PASS_TIMEOUT_S = 90.0
POLL_S = 0.5
# ConfigSource: DYNAMIC_TOPIC_CONFIG (set on the topic), DEFAULT_CONFIG.
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


def new_topic(what: str) -> str:
    return f"{DEFAULT_TOPIC}-{what}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Entry:
    offset: int
    key: bytes
    value: bytes | None


class WrittenLog:
    """The engine's store: the real ``KafkaGroupLog``, plus every record it wrote, at the
    offset the broker gave it (the offsets come from the store's own batch list)."""

    def __init__(self, log: KafkaGroupLog) -> None:
        self.log = log
        self.written: list[Entry] = []
        self.last_write = time.monotonic()

    def append(self, records: Sequence[Any]) -> None:
        before = len(self.log.batches)
        self.log.append(records)
        if len(self.log.batches) > before:
            self._note([encode_record(r) for r in records])

    def _note(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        batch = self.log.batches[-1]
        assert batch.count == len(entries)
        self.written += [Entry(batch.base_offset + i, k, v) for i, (k, v) in enumerate(entries)]
        self.last_write = time.monotonic()

    def roll(self) -> int:
        """After ``segment.ms``, restate the group's latest GroupMetadata record: the batch
        rolls the active segment, so everything below its offset becomes cleanable.
        Returns that offset."""
        latest = [e for e in self.written if record_type_of(e.key) == GROUP_METADATA][-1]
        time.sleep(max(0.0, self.last_write + 3 * SEGMENT_MS / 1000 - time.monotonic()))
        batch = self.log.append_bytes([(latest.key, latest.value)])
        self._note([(latest.key, latest.value)])
        return batch.base_offset


def member_of(key: bytes) -> str | None:
    if record_type_of(key) not in MEMBER_KEYED:
        return None
    return decode_record(key, None).member_id  # type: ignore[union-attr]


def duplicated_keys(records: Sequence[Record | Entry]) -> set[bytes]:
    seen: set[bytes] = set()
    dups: set[bytes] = set()
    for r in records:
        assert r.key is not None
        (dups if r.key in seen else seen).add(r.key)
    return dups


def read(kafka: RealKafka, topic: str) -> list[Record]:
    return asyncio.run(read_log(kafka.bootstrap, topic))


def await_pass(kafka: RealKafka, topic: str, upto: int,
               done: Callable[[list[Record]], bool] = lambda _: True) -> tuple[list[Record], float]:
    """Poll the topic until no key repeats below ``upto`` (a cleaning pass covered the
    range) and ``done`` holds; returns what was read and how long it took."""
    start = time.monotonic()
    while True:
        log = read(kafka, topic)
        if not duplicated_keys([r for r in log if r.offset < upto]) and done(log):
            return log, time.monotonic() - start
        if time.monotonic() - start > PASS_TIMEOUT_S:
            pytest.fail(f"{topic}: no cleaning pass up to offset {upto} within "
                        f"{PASS_TIMEOUT_S:.0f} s; {len(log)} record(s) on the topic")
        time.sleep(POLL_S)


def check_compacted(log: Sequence[Record], written: Sequence[Entry], upto: int, *,
                    tombstones_gone: bool) -> None:
    """``log`` (read from the topic) is ``written`` compacted below ``upto``, and exactly
    ``written`` from ``upto`` on (the active segment)."""
    by_offset = {e.offset: e for e in written}
    offsets = [r.offset for r in log]
    assert offsets == sorted(set(offsets)), "offsets out of order or repeated"
    for r in log:  # nothing moved or altered
        assert r.offset in by_offset, f"offset {r.offset} was never written"
        e = by_offset[r.offset]
        assert (r.key, r.value) == (e.key, e.value), f"offset {r.offset} altered"
    head = [r for r in log if r.offset < upto]
    tail = [(r.offset, r.key, r.value) for r in log if r.offset >= upto]
    assert tail == [(e.offset, e.key, e.value) for e in written if e.offset >= upto]

    latest: dict[bytes, Entry] = {}
    for e in written:
        if e.offset < upto:
            latest[e.key] = e
    present = {r.key: r for r in head}
    assert len(present) == len(head), "a key appears twice in the cleaned range"
    for key, e in latest.items():
        r = present.get(key)
        if e.value is not None:  # a live key: exactly its latest record
            assert r is not None and r.offset == e.offset, \
                f"key {key.hex()}: latest record (offset {e.offset}) missing"
        elif tombstones_gone:
            assert r is None, f"key {key.hex()}: tombstone at {e.offset} still there"
        else:  # gone, or only the tombstone itself
            assert r is None or r.offset == e.offset
    assert set(present) <= set(latest)


def drive_group(store: WrittenLog) -> Driver[ConnectUnit]:
    """w1..w3 join and converge; w3 leaves (its records are tombstoned); w1, w2 converge."""
    engine: GroupEngine[ConnectUnit] = GroupEngine(EngineConfig.connect(G), connect_policy(), store)
    driver: Driver[ConnectUnit] = Driver(engine, installer=round_robin_installer(UNITS))
    for w in WORKERS:
        driver.add(SimMember(w, client_assignors=ASSIGNORS))
    driver.converge()
    assert engine.member_ids() == WORKERS
    driver.now_ms += 1
    assert not engine.heartbeat(Heartbeat(member_id=DEPARTED, member_epoch=-1), driver.now_ms).error
    del driver.members[DEPARTED]
    driver.converge()
    assert engine.member_ids() == ("w1", "w2") and driver.is_stable()
    return driver


# ------------------------------------------------------------------------------ tests


def test_the_topic_is_created_compacted_with_the_callers_configs(real_kafka: RealKafka) -> None:
    topic = new_topic("created")
    with KafkaGroupLog(real_kafka.bootstrap, topic, configs=CLEANER_CONFIGS) as log:
        created = log.created
        assert created is not None and created.name == topic
        assert (created.partitions, created.replication_factor) == (1, 1)
        assert created.topic_id.int != 0
        # The broker's own report of the new topic's configs (CreateTopics v5+).
        assert created.configs["cleanup.policy"] == "compact"
        assert created.sources["cleanup.policy"] == TOPIC_CONFIG
        for name, value in CLEANER_CONFIGS.items():
            assert created.configs[name] == str(value) and created.sources[name] == TOPIC_CONFIG
        assert log.append_bytes([(b"k", b"v")]).base_offset == 0

    # An existing topic is fine (TOPIC_ALREADY_EXISTS), and is used as it is.
    with KafkaGroupLog(real_kafka.bootstrap, topic, configs={"segment.ms": 1}) as again:
        assert again.created is None
        assert again.append_bytes([(b"k", b"w")]).base_offset == 1


def test_by_default_only_the_cleanup_policy_is_set(real_kafka: RealKafka) -> None:
    with KafkaGroupLog(real_kafka.bootstrap, new_topic("default")) as log:
        created = log.created
        assert created is not None
        assert (created.configs["cleanup.policy"], created.sources["cleanup.policy"]) == \
               ("compact", TOPIC_CONFIG)
        assert {n for n, s in created.sources.items() if s == TOPIC_CONFIG} == {"cleanup.policy"}
        assert created.sources["segment.ms"] == DEFAULT_CONFIG


def test_a_refused_topic_names_the_topic_the_error_and_the_brokers_message(
        real_kafka: RealKafka) -> None:
    topic = new_topic("refused")
    with pytest.raises(GroupLogError) as info:
        KafkaGroupLog(real_kafka.bootstrap, topic, configs={"segment.ms": 0})
    text = str(info.value)
    assert topic in text and "INVALID_CONFIG (40)" in text and "segment.ms" in text


def test_kafka_compacts_the_group_log_and_the_groups_rebuild_the_same(
        real_kafka: RealKafka) -> None:
    topic = new_topic("compaction")
    with KafkaGroupLog(real_kafka.bootstrap, topic, configs=CLEANER_CONFIGS) as log:
        store = WrittenLog(log)
        driver = drive_group(store)
        engine = driver.engine
        written = list(store.written)
        # Something to compact: group-level keys rewritten at each epoch, and the departed
        # member's last word on each of its keys is a tombstone.
        assert duplicated_keys(written)
        departed = {e.key for e in written if member_of(e.key) == DEPARTED}
        assert {record_type_of(k) for k in departed} == set(MEMBER_KEYED)
        last = {e.key: e.value for e in written}
        assert all(last[k] is None for k in departed)
        assert all(v is not None for k, v in last.items() if k not in departed)

        # Pass 1: everything below the roll batch is compacted; the departed member's
        # tombstones may still be there, its values are not.
        first = store.roll()
        compacted, waited_1 = await_pass(real_kafka, topic, first)
        check_compacted(compacted, store.written, first, tombstones_gone=False)
        assert len(compacted) < len(store.written)
        assert all(r.value is None for r in compacted if r.key in departed)
        same_state(load_groups(real_kafka.bootstrap, topic, now_ms=driver.now_ms)[G], engine)

        # Pass 2 comes after the tombstones' delete horizon (delete.retention.ms 0): the
        # departed member has left no record at all.
        second = store.roll()
        cleaned, waited_2 = await_pass(real_kafka, topic, second)
        check_compacted(cleaned, store.written, second, tombstones_gone=True)
        assert not [r for r in cleaned if r.key in departed]
        assert all(r.value is not None for r in cleaned)
        # What is left is the live state: one record per live key, the roll batch's on top.
        live = {k for k, v in last.items() if v is not None}
        assert {r.key for r in cleaned} == live
        rebuilt = load_groups(real_kafka.bootstrap, topic, now_ms=driver.now_ms)
        assert set(rebuilt) == {G}
        same_state(rebuilt[G], engine)
        print(f"{len(written)} records written, {len(cleaned)} after compaction; "
              f"pass 1 seen after {waited_1:.1f} s, pass 2 after {waited_2:.1f} s")
