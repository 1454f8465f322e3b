"""``fakebroker.realconnect.seed``: connectors written into a Connect config topic as a
worker creating them through its REST API writes them, without starting one (the bundled
Apache Connect targets' seed command)."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.realconnect.connectors import config_records, parse_connectors
from fakebroker.realconnect.seed import SESSION_KEY, seed_connectors, session_key_record
from fakebroker.realconnect.worker import config_topic
from fakebroker.realkafka import RealKafka
from fakebroker.realkafka.records import Record, fetch_all

WORK = "connect-conformance-work"
# What Connect 4.2.0 wrote into its config topic (read back with a consumer) when its REST API
# created conn-a (2 tasks) and conn-b (1), topic prefix connect-conformance, files in /tmp;
# a sessioned worker's leader first wrote its session key.
_SINK = {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "2",
         "topics": WORK, "file": f"/tmp/{WORK}-conn-a.out", "name": "conn-a"}
_SOURCE = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
           "topic": WORK, "file": f"/tmp/{WORK}-conn-b.in", "name": "conn-b"}
WRITTEN_BY_CONNECT = [
    ("connector-conn-a", {"properties": _SINK}),
    ("connector-conn-b", {"properties": _SOURCE}),
    ("task-conn-a-0", {"properties": {**_SINK, "task.class": "org.apache.kafka.connect.file.FileStreamSinkTask"}}),
    ("task-conn-a-1", {"properties": {**_SINK, "task.class": "org.apache.kafka.connect.file.FileStreamSinkTask"}}),
    ("commit-conn-a", {"tasks": 2}),
    ("task-conn-b-0", {"properties": {**_SOURCE, "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask"}}),
    ("commit-conn-b", {"tasks": 1}),
]
SESSION_KEY_BY_CONNECT = ("session-key", {"key": "f6Eh7W8BjpnEaQXK3Qxi9wy5eIG7ngQRhg86llRyZhs=",
                                          "algorithm": "HmacSHA256", "creation-timestamp": 1795536209895})


def parsed(records: list[tuple[bytes, bytes]] | list[Record]) -> list[tuple[str, object]]:
    pairs = [(r.key, r.value) if isinstance(r, Record) else r for r in records]
    return [(k.decode(), json.loads(v)) for k, v in pairs]  # type: ignore[union-attr]


def test_the_records_are_those_connect_writes() -> None:
    records = config_records(parse_connectors("conn-a:2,conn-b:1"), WORK, Path("/tmp"), (4, 2, 0))
    assert parsed(records) == WRITTEN_BY_CONNECT  # same keys, same order (offsets), same configs


def test_the_session_key_has_connects_shape() -> None:
    key, value = session_key_record(bytes(range(32)), 1795536209895)
    doc = json.loads(value)
    assert key == SESSION_KEY == SESSION_KEY_BY_CONNECT[0].encode()
    assert set(doc) == set(SESSION_KEY_BY_CONNECT[1])
    assert doc["algorithm"] == SESSION_KEY_BY_CONNECT[1]["algorithm"]
    assert base64.b64decode(doc["key"]) == bytes(range(32))
    assert len(base64.b64decode(SESSION_KEY_BY_CONNECT[1]["key"])) == 32  # Connect's key size
    assert doc["creation-timestamp"] == 1795536209895


async def _records(bootstrap: str, topic: str) -> list[Record]:
    conn = await KafkaConnection.open(bootstrap)
    try:
        return await fetch_all(conn, topic, 0)
    finally:
        await conn.close()


@pytest.mark.realkafka
@pytest.mark.parametrize("sessioned", [True, False])
def test_a_seed_writes_once(real_kafka: RealKafka, sessioned: bool) -> None:
    prefix = f"seed-{uuid.uuid4().hex[:8]}"
    specs = parse_connectors("conn-a:2,conn-b:1")
    written = seed_connectors(real_kafka.bootstrap, prefix, specs, sessioned=sessioned, version=(4, 2, 0), now_ms=1000)
    assert written == ["conn-a", "conn-b"]
    log = asyncio.run(_records(real_kafka.bootstrap, config_topic(prefix)))
    keys = [r.key.decode() for r in log]
    assert keys == (["session-key"] if sessioned else []) + [k for k, _ in WRITTEN_BY_CONNECT]
    assert [r.offset for r in log] == list(range(len(log)))
    # A second seed of the same prefix (another process, a rerun) writes nothing.
    assert seed_connectors(real_kafka.bootstrap, prefix, specs, sessioned=sessioned, version=(4, 2, 0), now_ms=2000) == []
    assert len(asyncio.run(_records(real_kafka.bootstrap, config_topic(prefix)))) == len(log)
