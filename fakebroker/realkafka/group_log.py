"""Connect groups' records on a real Kafka topic: the draft's ``__worker_offsets``.

``KafkaGroupLog`` is a ``RecordStore`` (the engine's ``store``): every ``append`` (the
records of one state change of one group) is encoded with ``wire_records`` and written as
ONE v2 record batch in ONE Produce request (acks=-1) to one partition. A batch is
appended atomically by the broker, so a reader (or a crash) can only ever see whole
state changes: a cut of the log can only fall between batches. ``batches`` remembers each
batch's (base offset, record count) so tests can cut at every boundary.

``load_groups`` reads the partition from the beginning (Fetch) and rebuilds one engine
per group with ``GroupEngine.rebuild``.

The topic: ``ensure_topic`` creates it with CreateTopics (v7): one partition, replication
factor 1, ``cleanup.policy=compact`` plus any topic configs the caller adds (tests shorten
``segment.ms`` and the cleaner's thresholds so compaction happens within seconds). A topic
that already exists (TOPIC_ALREADY_EXISTS) is used as it is, whatever its configs: e.g.
one an operator created, or one auto-created with ``cleanup.policy=delete`` by an older
version of this module; the loader reads the whole log either way. Any other CreateTopics
error raises ``GroupLogError``. Then Metadata (without auto-creation) is polled until the
partition has a leader.

Compaction keeps the latest record of every key (and, for ``delete.retention.ms`` after
its first cleaning, a tombstone): ``GroupEngine.rebuild`` accepts a log or its compacted
form, so the loader gives the same groups from either. Kafka never cleans the active
(last) segment of a partition, so the most recent records stay as written until the
segment rolls (``segment.ms`` / ``segment.bytes``) and the cleaner comes round
(``log.cleaner.backoff.ms``, 15 s by default).

Writes go out from a private thread (its own event loop and one ``KafkaConnection``):
``submit`` hands a state change over and returns at once with a future; the thread writes
the state changes waiting at that moment, in the order submitted, as ONE record batch in
one Produce request (Kafka takes exactly one batch per partition per request; a batch of
whole state changes is still all or nothing), up to ``MAX_BATCH_BYTES``, and resolves
each future with its state change's ``Batch`` (its offsets) once Kafka has acknowledged
it, or with ``GroupLogError`` (only a refusal that appended nothing, such as a partition
whose leadership the broker has not taken up yet, is sent again).
``append`` is ``submit`` and waiting for the answer: the engine's synchronous store. The
fake broker submits instead, so its event loop never waits on Kafka, and holds every
answer until the writes made before it are acknowledged (``FakeBroker``'s write-behind,
as Kafka's coordinator holds a response until its records are committed).
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, TypeVar

import crc32c as _crc32c

from ..client import KafkaConnection
from ..coordinator.reconcile.connect import connect_policy
from ..coordinator.reconcile.engine import EngineConfig, GroupEngine
from ..coordinator.reconcile.records import Record as EngineRecord
from ..coordinator.reconcile.units import ConnectUnit
from ..coordinator.reconcile.wire_records import decode_record, encode_record
from ..protocol import Registry, default_registry
from ..protocol.error_codes import error_text
from .records import LEADER_NOT_READY, Record, fetch_all

DEFAULT_TOPIC = "__worker_offsets"
PRODUCE_VERSION = 9  # flexible, topics by name (v13 switches to topic ids)
CREATE_TOPICS_VERSION = 7  # Kafka 4.x answers v2..v7; v5+ report the new topic's configs
T = TypeVar("T")
# A merged batch stays well under Kafka's default max.message.bytes (1 MiB); a single
# state change is never split, whatever its size.
MAX_BATCH_BYTES = 512 * 1024


class GroupLogError(RuntimeError):
    pass


# ---------------------------------------------------------------------------- batches


def _zigzag(n: int) -> bytes:
    raw = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(data: bytes | None) -> bytes:
    if data is None:
        return _zigzag(-1)
    return _zigzag(len(data)) + data


def encode_batch(entries: Sequence[tuple[bytes | None, bytes | None]], timestamp_ms: int,
                 base_offset: int = 0) -> bytes:
    """One uncompressed magic-2 record batch (no producer id, no headers) holding
    ``entries`` (key, value) at offsets base_offset.., all with ``timestamp_ms``; the CRC is
    CRC-32C over everything from the attributes to the end, as the broker checks it."""
    if not entries:
        raise ValueError("a record batch needs at least one record")
    body = bytearray()
    for delta, (key, value) in enumerate(entries):
        rec = b"\x00" + _zigzag(0) + _zigzag(delta) + _field(key) + _field(value) + _zigzag(0)
        body += _zigzag(len(rec)) + rec
    after_crc = struct.pack(">hiqqqhii", 0, len(entries) - 1, timestamp_ms, timestamp_ms,
                            -1, -1, -1, len(entries)) + bytes(body)
    crc = _crc32c.crc32c(after_crc)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


# ---------------------------------------------------------------------------- wire calls


#: Kafka's names of the errors CreateTopics answers with (``Errors.java``), for messages.
CREATE_TOPICS_ERRORS = {
    -1: "UNKNOWN_SERVER_ERROR", 7: "REQUEST_TIMED_OUT", 17: "INVALID_TOPIC_EXCEPTION",
    29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION", 36: "TOPIC_ALREADY_EXISTS", 37: "INVALID_PARTITIONS",
    38: "INVALID_REPLICATION_FACTOR", 39: "INVALID_REPLICA_ASSIGNMENT", 40: "INVALID_CONFIG",
    41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 44: "POLICY_VIOLATION",
    89: "THROTTLING_QUOTA_EXCEEDED",
}
TOPIC_ALREADY_EXISTS = 36
#: The topic config ``ensure_topic`` always sets (a caller's own value wins).
COMPACTED = {"cleanup.policy": "compact"}


def error_name(code: int) -> str:
    """A CreateTopics error as a person reads it (names our ErrorCode enum lacks come first)."""
    return error_text(code, {name: c for c, name in CREATE_TOPICS_ERRORS.items()})


@dataclass(frozen=True)
class CreatedTopic:
    """What the broker answered to a successful CreateTopics: the new topic as it is, with
    every topic config's effective value and source (1 = set on the topic, 5 = the
    broker's default, ...: Kafka's ConfigSource)."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int
    configs: dict[str, str | None]
    sources: dict[str, int]


async def create_topic(conn: KafkaConnection, topic: str, *, partitions: int = 1,
                       replication_factor: int = 1, configs: Mapping[str, object] | None = None,
                       timeout_ms: int = 30_000, registry: Registry | None = None
                       ) -> CreatedTopic | None:
    """CreateTopics for one topic with these topic configs (values sent as strings). None
    when the topic already exists; any other error raises ``GroupLogError`` naming the
    topic, the error and the broker's message."""
    reg = registry or default_registry()
    rt = reg["CreateTopicsRequest"]
    body = rt.new(topics=[rt.cls.CreatableTopic(  # type: ignore[attr-defined]
        name=topic, num_partitions=partitions, replication_factor=replication_factor,
        assignments=[],
        configs=[rt.cls.CreatableTopicConfig(name=k, value=str(v))  # type: ignore[attr-defined]
                 for k, v in (configs or {}).items()])],
        timeout_ms=timeout_ms, validate_only=False)
    resp = (await conn.send(body, CREATE_TOPICS_VERSION, timeout_s=timeout_ms / 1000 + 5)).response
    results = [t for t in resp.topics if t.name == topic]
    if len(results) != 1:
        raise GroupLogError(f"CreateTopics {topic}: the response names "
                            f"{[t.name for t in resp.topics]}")
    t = results[0]
    if t.error_code == TOPIC_ALREADY_EXISTS:
        return None
    if t.error_code:
        raise GroupLogError(f"CreateTopics {topic}: {error_name(t.error_code)}: "
                            f"{t.error_message or 'no message'}")
    return CreatedTopic(name=topic, topic_id=t.topic_id, partitions=t.num_partitions,
                        replication_factor=t.replication_factor,
                        configs={c.name: c.value for c in t.configs or ()},
                        sources={c.name: c.config_source for c in t.configs or ()})


async def wait_for_leaders(conn: KafkaConnection, topic: str, *, timeout_s: float = 20.0,
                           registry: Registry | None = None) -> int:
    """Metadata (v12, never auto-creating) until ``topic`` has a leader for every partition;
    returns its partition count."""
    reg = registry or default_registry()
    mt = reg["MetadataRequest"]
    deadline = time.monotonic() + timeout_s
    while True:
        md = (await conn.send(mt.new(
            topics=[mt.cls.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=topic)],  # type: ignore[attr-defined]
            allow_auto_topic_creation=False, include_topic_authorized_operations=False), 12)).response
        t = md.topics[0]
        if t.error_code == 0 and t.partitions and all(
                p.error_code == 0 and p.leader_id >= 0 for p in t.partitions):
            return len(t.partitions)
        if time.monotonic() > deadline:
            raise GroupLogError(f"topic {topic}: error {t.error_code}, {len(t.partitions)} "
                                "partition(s) without a leader")
        await asyncio.sleep(0.1)


async def ensure_topic(conn: KafkaConnection, topic: str, *,
                       configs: Mapping[str, object] | None = None, timeout_s: float = 20.0,
                       registry: Registry | None = None) -> CreatedTopic | None:
    """Create ``topic`` compacted (1 partition, replication factor 1, ``cleanup.policy=
    compact`` and ``configs``) unless it exists, then wait until its partition has a
    leader. Returns the broker's description of the new topic, or None when it existed.
    Half of ``timeout_s`` is the broker's time to create, the rest bounds the wait."""
    deadline = time.monotonic() + timeout_s
    created = await create_topic(conn, topic, configs={**COMPACTED, **(configs or {})},
                                 timeout_ms=max(1, int(timeout_s * 500)), registry=registry)
    await wait_for_leaders(conn, topic, timeout_s=max(0.0, deadline - time.monotonic()),
                           registry=registry)
    return created


async def produce_batch(conn: KafkaConnection, topic: str, partition: int, batch: bytes, *,
                        timeout_ms: int = 30_000, registry: Registry | None = None) -> int:
    """Produce one batch with acks=-1; returns the base offset the broker gave it."""
    reg = registry or default_registry()
    pr = reg["ProduceRequest"]
    body = pr.new(transactional_id=None, acks=-1, timeout_ms=timeout_ms, topic_data=[
        pr.cls.TopicProduceData(name=topic, partition_data=[  # type: ignore[attr-defined]
            pr.cls.PartitionProduceData(index=partition, records=batch)])])  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        resp = (await conn.send(body, PRODUCE_VERSION, timeout_s=timeout_ms / 1000 + 5)).response
        p = resp.responses[0].partition_responses[0]
        # A partition whose leader the broker has not taken up yet (just created, or moving)
        # refuses the batch without appending it: sending it again cannot duplicate it.
        if p.error_code not in LEADER_NOT_READY or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    if p.error_code:
        raise GroupLogError(f"Produce {topic}-{partition}: error {p.error_code}"
                            f"{': ' + p.error_message if getattr(p, 'error_message', None) else ''}")
    return int(p.base_offset)


# ---------------------------------------------------------------------------- the store


@dataclass(frozen=True)
class Batch:
    base_offset: int
    count: int

    @property
    def end(self) -> int:
        return self.base_offset + self.count


class KafkaGroupLog:
    """A ``RecordStore`` writing to a topic partition of a real Kafka (see the module).

    With ``create`` the topic is created compacted (``ensure_topic``, with ``configs`` as
    further topic configs) unless it exists; ``created`` is then the broker's description
    of the new topic, or None when it existed (or ``create`` is false)."""

    def __init__(self, bootstrap: str, topic: str = DEFAULT_TOPIC, partition: int = 0, *,
                 create: bool = True, configs: Mapping[str, object] | None = None,
                 timeout_s: float = 30.0, clock: Callable[[], int] | None = None) -> None:
        self.bootstrap, self.topic, self.partition = bootstrap, topic, partition
        self.timeout_s = timeout_s
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.batches: list[Batch] = []  # acknowledged, in log order
        self.created: CreatedTopic | None = None
        # Submitted state changes not yet taken by the writer: (records, timestamp, future).
        self._queue: list[tuple[list[tuple[bytes, bytes | None]], int, Future[Batch]]] = []
        self._lock = threading.Lock()
        self._writing = False  # a writer task is running on the private loop
        self._last: Future[Batch] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"group-log-{topic}",
                                        daemon=True)
        self._thread.start()
        self._conn: KafkaConnection | None = None
        try:
            self._conn = self._run(KafkaConnection.open(bootstrap, client_id="group-log",
                                                        timeout_s=timeout_s))
            if create:
                self.created = self._run(ensure_topic(self._conn, topic, configs=configs,
                                                      timeout_s=timeout_s))
        except BaseException:
            self.close()
            raise

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(self.timeout_s + 10)

    def append(self, records: Sequence[EngineRecord]) -> None:
        """Write the records of one state change as one batch; returns once acknowledged."""
        if records:
            self._wait(self.submit(records))

    def submit(self, records: Sequence[EngineRecord]) -> Future[Batch]:
        """Queue the records of one state change as one batch (encoded now: all or nothing,
        before any I/O); the future gives its ``Batch`` once Kafka acknowledged it."""
        if not records:
            raise ValueError("a state change without records")
        return self.submit_bytes([encode_record(r) for r in records])

    def append_bytes(self, entries: Sequence[tuple[bytes, bytes | None]]) -> Batch:
        """Write ``entries`` as one batch (one state change); returns once acknowledged."""
        return self._wait(self.submit_bytes(entries))

    def submit_bytes(self, entries: Sequence[tuple[bytes, bytes | None]]) -> Future[Batch]:
        if self._conn is None:
            raise GroupLogError("the group log is closed")
        if not entries:
            raise ValueError("a state change without records")
        fut: Future[Batch] = Future()
        with self._lock:
            self._queue.append((list(entries), self.clock(), fut))
            self._last = fut
            start, self._writing = not self._writing, True
        if start:
            asyncio.run_coroutine_threadsafe(self._write_queued(), self._loop)
        return fut

    def _wait(self, fut: Future[T]) -> T:
        try:
            return fut.result(self.timeout_s + 10)
        except FutureTimeout:
            raise GroupLogError(f"no acknowledgement from {self.bootstrap} within "
                                f"{self.timeout_s + 10:.0f} s") from None

    async def _write_queued(self) -> None:
        """The writer (on the private loop): the queued state changes, in order, as one
        batch per Produce request, until the queue is empty."""
        while True:
            with self._lock:
                todo = self._take()
                if not todo:
                    self._writing = False
                    return
            entries = [e for change, _, _ in todo for e in change]
            try:
                if self._conn is None:
                    raise GroupLogError("the group log is closed")
                base = await produce_batch(self._conn, self.topic, self.partition,
                                           encode_batch(entries, max(t for _, t, _ in todo)),
                                           timeout_ms=int(self.timeout_s * 1000))
            except Exception as e:  # noqa: BLE001 - every waiting writer is told
                error = e if isinstance(e, GroupLogError) else GroupLogError(
                    f"Produce {self.topic}-{self.partition}: {type(e).__name__}: {e}")
                for _, _, fut in todo:
                    fut.set_exception(error)
                continue
            for change, _, fut in todo:
                written = Batch(base, len(change))
                self.batches.append(written)
                base = written.end
                fut.set_result(written)

    def _take(self) -> list[tuple[list[tuple[bytes, bytes | None]], int, Future[Batch]]]:
        """The oldest queued state changes that fit in one batch (at least one)."""
        size = n = 0
        for change, _, _ in self._queue:
            size += sum(len(k) + len(v or b"") + 16 for k, v in change)
            if n and size > MAX_BATCH_BYTES:
                break
            n += 1
        todo, self._queue = self._queue[:n], self._queue[n:]
        return todo

    def flush(self) -> None:
        """Wait until every write submitted so far is acknowledged (or has failed)."""
        last = self._last
        if last is not None:
            try:
                self._wait(last)
            except GroupLogError:
                pass

    def close(self) -> None:
        """Flush what was submitted, then close the connection and stop the thread."""
        if self._conn is not None:
            self.flush()
            conn, self._conn = self._conn, None
            try:
                self._run(conn.close())
            except Exception:
                pass
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> KafkaGroupLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------- the loader


async def read_log(bootstrap: str, topic: str = DEFAULT_TOPIC, partition: int = 0) -> list[Record]:
    """Every record of the partition, from its start to its high watermark."""
    async with await KafkaConnection.open(bootstrap, client_id="group-log-reader") as conn:
        return await fetch_all(conn, topic, partition)


def decode_log(log: Sequence[Record], *, upto: int | None = None) -> list[EngineRecord]:
    """The engine records of the log's records (offsets < ``upto``, if given), in order."""
    out: list[EngineRecord] = []
    for r in log:
        if upto is not None and r.offset >= upto:
            continue
        if r.key is None:
            raise GroupLogError(f"offset {r.offset}: a record without a key")
        out.append(decode_record(r.key, r.value))
    return out


def parse_target(text: str) -> tuple[str, str]:
    """``HOST:PORT[/TOPIC]`` -> (bootstrap, topic); the topic defaults to DEFAULT_TOPIC."""
    bootstrap, _, topic = text.partition("/")
    host, sep, port = bootstrap.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{text!r}: expected HOST:PORT[/TOPIC]")
    return bootstrap, topic or DEFAULT_TOPIC


def open_group_log(text: str, *, timeout_s: float = 30.0) -> tuple[KafkaGroupLog, list[EngineRecord]]:
    """For ``serve --group-log HOST:PORT[/TOPIC]``: the store on that topic (created if
    missing) and the engine records already on it (partition 0, from its start), to load
    the connect groups from. Raises ValueError (a bad target) or GroupLogError/OSError."""
    bootstrap, topic = parse_target(text)
    store = KafkaGroupLog(bootstrap, topic, timeout_s=timeout_s)
    try:
        records = decode_log(asyncio.run(read_log(bootstrap, topic)))
    except BaseException:
        store.close()
        raise
    return store, records


def rebuild_groups(log: Sequence[Record], *, now_ms: int = 0, upto: int | None = None,
                   config: Callable[[str], EngineConfig] = EngineConfig.connect,
                   store: Callable[[str], Any] | None = None
                   ) -> dict[str, GroupEngine[ConnectUnit]]:
    """One connect engine per group the log's records (offsets < ``upto``, if given)
    mention, rebuilt in log order. ``store(group_id)`` gives the new engine's store."""
    by_group: dict[str, list[EngineRecord]] = {}
    for rec in decode_log(log, upto=upto):
        by_group.setdefault(rec.group_id, []).append(rec)
    return {gid: GroupEngine.rebuild(recs, config(gid), connect_policy(), now_ms,
                                     None if store is None else store(gid))
            for gid, recs in by_group.items()}


def load_groups(bootstrap: str, topic: str = DEFAULT_TOPIC, partition: int = 0, *,
                now_ms: int = 0, upto: int | None = None,
                config: Callable[[str], EngineConfig] = EngineConfig.connect,
                store: Callable[[str], Any] | None = None) -> dict[str, GroupEngine[ConnectUnit]]:
    """``rebuild_groups`` of the topic partition read from the beginning."""
    log = asyncio.run(read_log(bootstrap, topic, partition))
    return rebuild_groups(log, now_ms=now_ms, upto=upto, config=config, store=store)


__all__ = ["DEFAULT_TOPIC", "GroupLogError", "encode_batch", "CreatedTopic", "create_topic",
           "wait_for_leaders", "ensure_topic", "produce_batch",
           "Batch", "KafkaGroupLog", "read_log", "decode_log", "parse_target", "open_group_log",
           "rebuild_groups", "load_groups"]
