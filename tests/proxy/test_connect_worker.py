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

from .conftest import unique

REG = default_registry()
VECTORS = Path(__file__).resolve().parents[2] / "fixtures" / "vectors"
CAPTURE = VECTORS / "apache-connect-4.2.0-join-metadata.json"
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
