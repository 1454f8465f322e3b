"""The fake broker's image, built here on the project's own base (no registry), run through
its testcontainers module: a real client joins a group through it, the recording it makes
inside the container is read back on the host, a mounted fault plan acts, SASL is enforced,
and a container that cannot serve is a one-line error, never a wait."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakebroker.containers.engine import EngineError, OWNER_LABEL, client
from fakebroker.containers.fakebroker_container import FakeBrokerContainer
from fakebroker.protocol import default_registry
from fakebroker.exchange.transcript import load
from tests.realclients.test_security import (PARTITIONS, TOPIC, WAIT_S, Pem, joins_with_kafka_python,
                                             kafka_python_conf)
from tests.realclients.test_security import pem  # noqa: F401 - the fixture: a certificate made for the run

FAULTS = """\
version: 1
faults:
  - name: first-join-while-loading
    api: JoinGroup
    action: {error: COORDINATOR_LOAD_IN_PROGRESS}
"""


def test_a_real_client_joins_through_the_container_and_its_recording_is_read_on_the_host(
        fakebroker_image: str, tmp_path: Path) -> None:
    plan = tmp_path / "faults.yaml"
    plan.write_text(FAULTS)
    records = tmp_path / "records"
    records.mkdir()
    with FakeBrokerContainer(fakebroker_image, topics=[f"{TOPIC}:{PARTITIONS}"], faults=plan,
                             record_dir=records) as broker:
        assert broker.health() == "healthy"
        assert broker.get_wrapped_container().labels[OWNER_LABEL]
        assert joins_with_kafka_python({"bootstrap_servers": broker.get_bootstrap_server()}) == [0, 1, 2]
    [path] = records.glob("*.jsonl")
    transcript = load(path, default_registry())
    joins = [e for e in transcript.events if e.kind == "response" and e.api_key == 11]
    syncs = [e for e in transcript.events if e.kind == "request" and e.api_key == 14]
    # The plan, mounted read-only, acted on the first JoinGroup only; the client retried.
    assert joins[0].body["ErrorCode"] == 14 and joins[-1].body["ErrorCode"] == 0, \
        [j.body["ErrorCode"] for j in joins]
    assert syncs and len({s.body["GroupId"] for s in syncs}) == 1
    assert path.stat().st_uid == records.stat().st_uid  # written as the calling user


def test_sasl_is_enforced_inside_the_container(fakebroker_image: str, tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text("alice=alice-secret\n")
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}
    with FakeBrokerContainer(fakebroker_image, topics=[f"{TOPIC}:{PARTITIONS}"],
                             sasl_mechanisms=["SCRAM-SHA-512"], sasl_users=users) as broker:
        bootstrap = broker.get_bootstrap_server()
        assert joins_with_kafka_python({"bootstrap_servers": bootstrap, **sasl}) == [0, 1, 2]
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient
        errors: list[str] = []
        admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                             "sasl.password": "wrong", "error_cb": lambda e: errors.append(str(e))})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=5)
        deadline = time.monotonic() + WAIT_S
        while not errors and time.monotonic() < deadline:
            admin.poll(0.2)  # error_cb is served by poll
        assert any("Authentication failed during authentication due to invalid credentials with "
                   "SASL mechanism SCRAM-SHA-512" in e for e in errors), errors


def test_tls_is_served_inside_the_container_and_found_healthy(fakebroker_image: str, pem: Pem) -> None:
    """The certificate and key mounted read-only; the HEALTHCHECK falls back to TLS."""
    with FakeBrokerContainer(fakebroker_image, topics=[f"{TOPIC}:{PARTITIONS}"],
                             tls_cert=pem.cert, tls_key=pem.key) as broker:
        assert broker.health() == "healthy"
        conf = kafka_python_conf(SimpleNamespace(bootstrap=broker.get_bootstrap_server()),  # type: ignore[arg-type]
                                 "SSL", pem, None, "")
        assert joins_with_kafka_python(conf) == [0, 1, 2]


def test_a_container_that_cannot_serve_is_one_line_and_removed(fakebroker_image: str) -> None:
    broker = FakeBrokerContainer(fakebroker_image, topics=["no-partition-count"])
    t0 = time.monotonic()
    with pytest.raises(EngineError) as e:
        broker.start()
    assert time.monotonic() - t0 < 30
    assert "\n" not in str(e.value) and "exited" in str(e.value) and "no-partition-count" in str(e.value)
    left = client().containers.list(all=True, filters={"label": f"{OWNER_LABEL}"})
    assert broker._container is None or all(c.id != broker._container.id for c in left)
