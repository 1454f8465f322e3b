"""Connectors in a Connect cluster's config topic before its first worker starts, written
the way a worker writes them, without starting one.

``python -m fakebroker.realconnect seed --bootstrap HOST:PORT --topic-prefix P --connectors
conn-a:2,conn-b:1`` creates ``P-configs`` as Connect creates its config topic (one partition,
``cleanup.policy=compact``) and writes the records a worker writes when those connectors are
created through its REST API (``connectors.config_records``; ``--connect`` names the
version, whose file connectors' task configs differ), after, for the sessioned
protocol (``--protocol sessioned`` or none: Connect's default), the session key its first
leader would have written (``session_key_record``): every worker started later
with ``--topic-prefix P`` reads them, as a worker joining a running cluster does. A
certification run did this with a Connect worker of its own per test process (a JVM start,
two REST calls, its tasks' start-up and its stop: ~2.5 s of CPU, ~10 s beside the other
processes' at a run's start); this is one Produce request. Connectors whose commit record
is already in the topic are left as they are (a second seed of the same prefix writes nothing).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import tempfile
from pathlib import Path

from ..client import KafkaConnection
from ..realkafka.group_log import encode_batch, ensure_topic, produce_batch
from ..realkafka.records import fetch_all
from .connectors import ConnectorSpec, config_records
from .worker import config_topic, work_topic


SESSION_KEY = b"session-key"
SESSION_KEY_ALGORITHM = "HmacSHA256"  # Connect's default inter.worker.key.generation.algorithm
SESSION_KEY_BYTES = 32  # what its KeyGenerator makes for HmacSHA256


def session_key_record(key: bytes, now_ms: int) -> tuple[bytes, bytes]:
    """The record a sessioned cluster's leader writes when it finds no session key: the key
    (base64) for signing requests between workers, its algorithm and when it was made (it
    is rotated after inter.worker.key.ttl.ms, an hour by default)."""
    value = {"key": base64.b64encode(key).decode(), "algorithm": SESSION_KEY_ALGORITHM,
             "creation-timestamp": now_ms}
    return SESSION_KEY, json.dumps(value, separators=(",", ":")).encode()


async def _seed(bootstrap: str, topic_prefix: str, specs: list[ConnectorSpec], sessioned: bool,
                version: tuple[int, int, int], now_ms: int, timeout_s: float) -> list[str]:
    topic = config_topic(topic_prefix)
    conn = await KafkaConnection.open(bootstrap, client_id="realconnect-seed", timeout_s=timeout_s)
    try:
        await ensure_topic(conn, topic, timeout_s=timeout_s)
        there = {r.key for r in await fetch_all(conn, topic, 0)}
        todo = [c for c in specs if f"commit-{c.name}".encode() not in there]
        records = config_records(todo, work_topic(topic_prefix), Path(tempfile.gettempdir()), version)
        if sessioned and SESSION_KEY not in there:
            records.insert(0, session_key_record(os.urandom(SESSION_KEY_BYTES), now_ms))
        if records:
            await produce_batch(conn, topic, 0, encode_batch(records, now_ms),
                                timeout_ms=int(timeout_s * 1000))
        return [c.name for c in todo]
    finally:
        await conn.close()


def seed_connectors(bootstrap: str, topic_prefix: str, specs: list[ConnectorSpec], *,
                    sessioned: bool, version: tuple[int, int, int], now_ms: int,
                    timeout_s: float = 30.0) -> list[str]:
    """Write ``specs`` as a worker of Connect ``version`` writes them (and, ``sessioned``, a
    session key) into the config topic of ``topic_prefix`` unless there already; the names
    of the connectors written."""
    return asyncio.run(_seed(bootstrap, topic_prefix, specs, sessioned, version, now_ms, timeout_s))
