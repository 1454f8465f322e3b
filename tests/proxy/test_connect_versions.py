"""An Apache Kafka Connect release other than the bundled one (``--connect 3.0.0``): resolved
from Maven Central into the cache, logging through log4j 1 (reload4j), its tasks running on
the config records the seed writes as that version writes them."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.realkafka.records import fetch_all
from fakebroker.realconnect.worker import config_topic

from fakebroker.realconnect import ConnectWorker, WorkerSettings, connect_build
from fakebroker.realconnect.connectors import parse_connectors
from fakebroker.realconnect.provision import ResolveFailed, pom_text, version_key
from fakebroker.realconnect.seed import seed_connectors

from .conftest import unique

OLD = "3.0.0"  # before 3.4.0 a file connector hands its tasks only what they need (KAFKA-13809)
# sha256 of the Connect POM (fixtures/connect/pom.xml then) before it became a template: 4.x renders it byte for byte,
# so a cache resolved from it stays valid (its stamp names this digest).
POM_BEFORE_TEMPLATE = "1c4e10461f8c0e4a68f2b41e6bc870e92a6a90edaebc5616d9b69cefbcee6171"


def test_the_pom_binds_the_logging_each_release_needs() -> None:
    assert hashlib.sha256(pom_text("4.2.0").encode()).hexdigest() == POM_BEFORE_TEMPLATE
    new, old = pom_text("4.1.0"), pom_text("3.0.0")
    assert "<kafka.version>4.1.0</kafka.version>" in new and "log4j-slf4j2-impl" in new and "reload4j" not in new
    assert "<kafka.version>3.0.0</kafka.version>" in old and "log4j-slf4j2-impl" not in old
    assert "<artifactId>slf4j-reload4j</artifactId>" in old and "<artifactId>reload4j</artifactId>" in old
    assert "<artifactId>slf4j-log4j12</artifactId></exclusion>" in old  # one binding on the class path


def test_a_directory_of_jars_is_a_build(tmp_path: Path) -> None:
    def build(*jars: str) -> Path:
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        d.mkdir()
        for j in jars:
            (d / j).write_bytes(b"")
        return d
    base = ("connect-runtime-3.6.2-acme.4.jar", "connect-json-3.6.2.jar", "connect-file-3.6.2.jar",
            "kafka-clients-3.6.2.jar")
    old = connect_build(str(build(*base, "reload4j-1.2.25.jar", "slf4j-reload4j-1.7.36.jar")))
    assert (old.version, old.log4j2, old.hostable) == ("3.6.2-acme.4", False, False)
    new = connect_build(str(build(*base, "log4j-core-2.25.3.jar", "log4j-slf4j2-impl-2.25.3.jar")))
    assert new.log4j2 and new.hostable and new.home != old.home
    with pytest.raises(ResolveFailed, match="no logging binding"):
        connect_build(str(build(*base)))
    with pytest.raises(ResolveFailed, match="lacks connect-file-"):
        connect_build(str(build(*base[:2], base[3], "reload4j-1.2.25.jar")))


def _statuses(worker: ConnectWorker, names: list[str]) -> dict[str, list[str]] | None:
    """Each connector's state and its tasks' once every one of them has its tasks, else None."""
    out = {}
    for name in names:
        status, body = worker.request("GET", f"/connectors/{name}/status")
        if status != 200 or not body.get("tasks"):
            return None
        out[name] = [body["connector"]["state"], *(t["state"] for t in sorted(body["tasks"], key=lambda t: t["id"]))]
    return out


def _task_records(bootstrap: str, topic: str) -> list[str]:
    async def read() -> list[str]:
        conn = await KafkaConnection.open(bootstrap)
        try:
            return [r.key.decode() for r in await fetch_all(conn, topic, 0) if r.key.startswith(b"task-")]
        finally:
            await conn.close()
    return asyncio.run(read())


@pytest.mark.realkafka
@pytest.mark.parametrize("written_as", [OLD, "4.2.0"])
def test_an_old_release_keeps_the_task_configs_seeded_as_it_writes_them(real_kafka, proxy_factory,
                                                                       written_as) -> None:
    """A leader starting a connector compares its task configs with those in the config topic
    and writes them again where they differ (a rebalance more, and a task that may fail on
    the seeded config first: 3.0.0's source task parses batch.size). Seeded as 3.0.0 writes
    them, nothing is rewritten; seeded as 4.2.0 writes them (the connector's whole config),
    every task config is."""
    build = connect_build(OLD)
    assert build.version == OLD and not build.log4j2 and not build.hostable
    proxy = proxy_factory(real_kafka.bootstrap)
    prefix = unique("versions")
    specs = parse_connectors("conn-a:2,conn-b:1")
    seed_connectors(real_kafka.bootstrap, prefix, specs, sessioned=False,
                    version=version_key(written_as), now_ms=int(time.time() * 1000))
    seeded = _task_records(real_kafka.bootstrap, config_topic(prefix))
    worker = ConnectWorker(WorkerSettings(bootstrap=proxy.bootstrap, group=unique("g"), protocol="compatible",
                                          topic_prefix=prefix, connect=OLD))
    with worker:
        assert worker.get("/")["version"] == OLD
        deadline = time.monotonic() + 60
        states = None
        while time.monotonic() < deadline:
            states = _statuses(worker, ["conn-a", "conn-b"])
            if states == {"conn-a": ["RUNNING"] * 3, "conn-b": ["RUNNING"] * 2}:
                break
            time.sleep(0.3)
        log = worker.log_tail(400)
    assert states == {"conn-a": ["RUNNING"] * 3, "conn-b": ["RUNNING"] * 2}, (states, log[-3000:])
    # The worker's log is there (log4j 1 through reload4j), with the herder's own lines.
    assert "DistributedHerder" in log, log[-2000:]
    rewritten = _task_records(real_kafka.bootstrap, config_topic(prefix))[len(seeded):]
    assert seeded == ["task-conn-a-0", "task-conn-a-1", "task-conn-b-0"]
    assert sorted(rewritten) == ([] if written_as == OLD else seeded), log[-3000:]


@pytest.mark.realkafka
def test_the_seed_writes_what_an_old_release_writes_through_rest(real_kafka, proxy_factory) -> None:
    """A 3.0.0 worker creating the connectors through its REST API writes the records the seed
    writes for 3.0.0 (read back from its config topic; the order of its writes aside)."""
    import json
    import tempfile

    from fakebroker.realconnect.connectors import config_records

    proxy = proxy_factory(real_kafka.bootstrap)
    prefix = unique("versions-rest")
    specs = parse_connectors("conn-a:2,conn-b:1")
    worker = ConnectWorker(WorkerSettings(bootstrap=proxy.bootstrap, group=unique("g"), protocol="compatible",
                                          topic_prefix=prefix, connect=OLD))
    with worker:
        assert worker.create_connectors(specs, 60, lambda m: None) == []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _statuses(worker, ["conn-a", "conn-b"]) != {
                "conn-a": ["RUNNING"] * 3, "conn-b": ["RUNNING"] * 2}:
            time.sleep(0.3)

    async def read() -> list[tuple[str, object]]:
        conn = await KafkaConnection.open(real_kafka.bootstrap)
        try:
            return [(r.key.decode(), json.loads(r.value)) for r in await fetch_all(conn, config_topic(prefix), 0)
                    if r.key.startswith((b"connector-", b"task-", b"commit-"))]
        finally:
            await conn.close()
    written = asyncio.run(read())
    seeded = [(k.decode(), json.loads(v)) for k, v in
              config_records(specs, f"{prefix}-work", Path(tempfile.gettempdir()), version_key(OLD))]
    assert sorted(written, key=str) == sorted(seeded, key=str)
