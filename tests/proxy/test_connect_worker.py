"""Apache Kafka Connect 4.2.0's distributed worker against the fake broker in proxy mode:
the fake broker coordinates its group, the real Kafka holds its internal topics."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from fakebroker.protocol import default_registry
from fakebroker.realconnect import ConnectWorker, WorkerSettings
from fakebroker.realconnect.connectors import parse_connectors
from fakebroker.script.recorder import Recorder

from .conftest import unique

REG = default_registry()
VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors"
CAPTURE = VECTORS / "apache-connect-4.2.0-join-metadata.json"
ASSIGNMENTS = VECTORS / "apache-connect-4.2.0-sync-assignments.json"
VERSION = {"eager": 0, "compatible": 1, "sessioned": 2}
PREFERENCE = {"eager": ["default"], "compatible": ["compatible", "default"],
              "sessioned": ["sessioned", "compatible", "default"]}


def _wait(fn, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = fn()
        if out:
            return out
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.realkafka
@pytest.mark.parametrize("protocol", ["eager", "sessioned"])
def test_worker_joins_a_connect_group_on_the_fake_broker(real_kafka, proxy_factory, protocol) -> None:
    proxy = proxy_factory(real_kafka.bootstrap)
    group = unique(f"connect-{protocol}")
    worker = ConnectWorker(WorkerSettings(bootstrap=proxy.bootstrap, group=group, protocol=protocol))
    with worker:
        def stable():
            g = proxy.broker.coordinator.classic_group(group)
            if g is None or g.state.name.lower() != "stable" or not g.members:
                return None
            m = next(iter(g.members.values()))
            return g.protocol_type, g.protocol_name, [(p.name, p.metadata) for p in m.protocols]
        ptype, chosen, protocols = _wait(lambda: proxy.run(stable), "the worker's group to be stable")
        assert ptype == "connect"
        assert [name for name, _ in protocols] == PREFERENCE[protocol]
        assert chosen == PREFERENCE[protocol][0]
        mt = REG["ConnectProtocolMetadata"]
        url = f"http://127.0.0.1:{worker.rest_port}/"
        decoded = {}
        for name, metadata in protocols:
            version, body = mt.decode_versioned(metadata)
            assert version == {"default": 0, "compatible": 1, "sessioned": 2}[name]
            assert body.url == url, body
            assert body.config_offset == -1  # nothing read from the config topic yet
            if version >= 1:
                assert body.allocation is None or isinstance(body.allocation, bytes)
            decoded[name] = body
        # The worker answers on its REST API, and it came up through the proxy: its internal
        # topics exist on the real Kafka.
        assert worker.get("/")["version"] == "4.2.0"
        assert worker.get("/connectors") == []
        if os.environ.get("CAPTURE_CONNECT_VECTORS") and protocol == "sessioned":
            CAPTURE.write_text(json.dumps({
                "source": "Apache Kafka Connect 4.2.0 ConnectDistributed, first JoinGroup "
                          "(connect.protocol=sessioned), captured by tests/proxy/test_connect_worker.py",
                "url_placeholder": url,
                "protocols": [{"name": n, "metadata_hex": m.hex()} for n, m in protocols]},
                indent=1) + "\n")


def test_captured_worker_metadata_decodes_with_our_spec() -> None:
    """The bytes the real worker sent (fixtures/vectors), without Java: v0 has no allocation;
    v1/v2 end in a null allocation (int32 -1) on a first join; the URL ends in '/'."""
    cap = json.loads(CAPTURE.read_text())
    mt = REG["ConnectProtocolMetadata"]
    for entry in cap["protocols"]:
        raw = bytes.fromhex(entry["metadata_hex"])
        version, body = mt.decode_versioned(raw)
        assert version == {"default": 0, "compatible": 1, "sessioned": 2}[entry["name"]]
        assert body.url == cap["url_placeholder"] and body.config_offset == -1
        if version:
            assert body.allocation is None and raw.endswith(b"\xff" * 4)
        assert mt.encode_versioned(body, version) == raw  # byte-identical round trip


def _units(assignments) -> set[tuple[str, int | None]]:
    """(connector, None) for a connector (task id -1 on the wire), (connector, task) for a task."""
    return {(a.connector, None if t == -1 else t) for a in assignments or [] for t in a.tasks}


def _capture_assignments(worker: ConnectWorker, proxy, group: str) -> list[tuple[str, bytes]]:
    """Create conn-a (2 tasks) and conn-b (1 task) on a lone worker; every SyncGroup
    answer the fake broker gives it until it has been assigned all five units."""
    seen: list[tuple[str, bytes]] = []

    def sink(line: dict) -> None:
        # (the sink connector's tasks form a consumer group of their own on the same broker)
        if (line.get("kind") == "response" and line.get("api_key") == 14 and line["body"]["ErrorCode"] == 0
                and line["body"]["ProtocolType"] == "connect"):
            seen.append((line["body"]["ProtocolName"], bytes.fromhex(line["body"]["Assignment"])))

    rec = proxy.broker.record(Recorder(sink, keep=False))
    try:
        missing = worker.create_connectors(parse_connectors("conn-a:2,conn-b:1"), 90, lambda m: None)
        assert not missing, f"connectors not created: {missing}\n{worker.log_tail()}"
        want = {("conn-a", None), ("conn-a", 0), ("conn-a", 1), ("conn-b", None), ("conn-b", 0)}
        mt = REG["ConnectProtocolAssignment"]

        def complete():
            got: set = set()
            for _, raw in list(seen):
                _, body = mt.decode_versioned(raw)
                got |= _units(body.assignment)
            return got >= want
        _wait(complete, "the worker to be assigned both connectors and their 3 tasks", 90)
    finally:
        proxy.run(lambda: proxy.broker.stop_recording(rec))
    return list(seen)


@pytest.mark.realkafka
@pytest.mark.parametrize("protocol", ["eager", "compatible", "sessioned"])
def test_worker_assigns_itself_connectors_and_tasks(real_kafka, proxy_factory, protocol) -> None:
    """A lone worker leads; once two file connectors exist it assigns itself both and their
    tasks, in the assignment version of its protocol (v0 whole, v1/v2 incremental), and the
    bytes round-trip through our codec unchanged."""
    proxy = proxy_factory(real_kafka.bootstrap)
    group = unique(f"assign-{protocol}")
    with ConnectWorker(WorkerSettings(bootstrap=proxy.bootstrap, group=group, protocol=protocol)) as worker:
        seen = _capture_assignments(worker, proxy, group)
        mt = REG["ConnectProtocolAssignment"]
        url = f"http://127.0.0.1:{worker.rest_port}/"
        for name, raw in seen:
            version, body = mt.decode_versioned(raw)
            assert (name, version) == ({0: "default", 1: "compatible", 2: "sessioned"}[VERSION[protocol]],
                                       VERSION[protocol])
            assert body.error == 0 and body.leader_url == url
            assert mt.encode_versioned(body, version) == raw
            if version >= 1:
                assert not body.revoked  # nothing to take back from a lone worker
        if os.environ.get("CAPTURE_CONNECT_VECTORS"):
            data = json.loads(ASSIGNMENTS.read_text()) if ASSIGNMENTS.exists() else {
                "source": "Apache Kafka Connect 4.2.0 ConnectDistributed leading alone while "
                          "conn-a (FileStreamSink, 2 tasks) and conn-b (FileStreamSource, 1 task) "
                          "are created; every SyncGroup assignment it got, captured by "
                          "tests/proxy/test_connect_worker.py", "protocols": {}}
            data["protocols"][protocol] = {"url_placeholder": url, "protocol_name": seen[0][0],
                                           "assignments_hex": [raw.hex() for _, raw in seen]}
            ASSIGNMENTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def test_captured_worker_assignments_decode_with_our_spec() -> None:
    """The SyncGroup assignments the real worker computed for itself (fixtures/vectors), one
    list per protocol, without Java: version 0/1/2 by protocol; together they hand out
    exactly conn-a, its tasks 0 and 1, conn-b and its task 0; every one round-trips."""
    cap = json.loads(ASSIGNMENTS.read_text())
    assert sorted(cap["protocols"]) == ["compatible", "eager", "sessioned"]
    mt = REG["ConnectProtocolAssignment"]
    for protocol, entry in cap["protocols"].items():
        got: set = set()
        for h in entry["assignments_hex"]:
            raw = bytes.fromhex(h)
            version, body = mt.decode_versioned(raw)
            assert version == VERSION[protocol]
            assert body.leader_url == entry["url_placeholder"] and body.error == 0
            assert mt.encode_versioned(body, version) == raw
            got |= _units(body.assignment)
        assert got == {("conn-a", None), ("conn-a", 0), ("conn-a", 1), ("conn-b", None), ("conn-b", 0)}


def test_the_status_topic_can_be_one_of_its_own() -> None:
    """--status-topic: the harness gives each group its own, the other topics stay the prefix's."""
    own = WorkerSettings(bootstrap="h:1", topic_prefix="p", status_topic="p-g1-status").worker_properties(1)
    assert (own["status.storage.topic"], own["config.storage.topic"]) == ("p-g1-status", "p-configs")
    assert WorkerSettings(bootstrap="h:1", topic_prefix="p").worker_properties(1)["status.storage.topic"] == "p-status"
