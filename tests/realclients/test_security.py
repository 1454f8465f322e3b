"""Real clients (librdkafka via confluent-kafka, kafka-python) authenticate to the fake
broker over every security protocol it serves (SASL/PLAIN, SCRAM-SHA-256/512, TLS, and
SASL over TLS), join a group through it, and are refused with Kafka's message when the
password is wrong."""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.script.recorder import Recorder
from fakebroker.server.broker import FakeBroker
from fakebroker.server.config import BrokerConfig, TlsConfig, Topic
from fakebroker.server.sasl import SaslConfig
from fakebroker.server.thread import BrokerThread

TOPIC, PARTITIONS = "events", 3
USERS = {"alice": "alice-secret"}
WAIT_S = 60.0  # real time, bounded: a loaded machine is slow, a broken broker still fails
_groups = itertools.count()


@dataclass(frozen=True)
class Pem:
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> Pem:
    """A self-signed certificate for 127.0.0.1 / localhost, made for this run."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    d = tmp_path_factory.mktemp("tls")
    (d / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                  serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return Pem(d / "cert.pem", d / "key.pem")


def serve(protocol: str, pem: Pem, mechanisms: tuple[str, ...] = ()) -> BrokerThread:
    tls = TlsConfig(pem.cert, pem.key) if protocol.endswith("SSL") else None
    sasl = SaslConfig(mechanisms, USERS) if protocol.startswith("SASL") else None
    cfg = BrokerConfig(topics=[Topic(TOPIC, PARTITIONS)], tls=tls, sasl=sasl)
    assert cfg.security_protocol == protocol
    return BrokerThread(FakeBroker(cfg, CoordinatorConfig(initial_rebalance_delay_ms=0))).start()


@pytest.fixture
def brokers() -> Iterator[list[BrokerThread]]:
    started: list[BrokerThread] = []
    yield started
    for b in started:
        b.stop()


def librdkafka_conf(b: BrokerThread, protocol: str, pem: Pem, mech: str | None,
                    password: str) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": b.bootstrap, "security.protocol": protocol}
    if mech:
        conf.update({"sasl.mechanism": mech, "sasl.username": "alice", "sasl.password": password})
    if protocol.endswith("SSL"):
        conf["ssl.ca.location"] = str(pem.cert)
    return conf


def kafka_python_conf(b: BrokerThread, protocol: str, pem: Pem, mech: str | None,
                      password: str) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap_servers": b.bootstrap, "security_protocol": protocol}
    if mech:
        conf.update({"sasl_mechanism": mech, "sasl_plain_username": "alice",
                     "sasl_plain_password": password})
    if protocol.endswith("SSL"):
        conf.update({"ssl_cafile": str(pem.cert), "ssl_check_hostname": True})
    return conf


def joins_with_librdkafka(conf: dict[str, Any]) -> list[int]:
    from confluent_kafka import Consumer
    c = Consumer({**conf, "group.id": f"sec-{next(_groups)}", "session.timeout.ms": 6000,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([TOPIC])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            c.poll(0.2)
            got = c.assignment()
            if got:
                return sorted(tp.partition for tp in got)
        raise AssertionError("librdkafka got no assignment")
    finally:
        c.close()


def joins_with_kafka_python(conf: dict[str, Any]) -> list[int]:
    from kafka import KafkaConsumer
    # kafka-python may join before its first Metadata answer names the topic's partitions and
    # assign nothing; the rejoin a later refresh starts is then lost if poll() times out while it
    # is in flight (its own bug, tests/interop/test_kafka_python_rejoin.py). So it subscribes only
    # once it knows the partitions, and its first round already has them.
    c = KafkaConsumer(**conf, group_id=f"sec-{next(_groups)}", session_timeout_ms=6000,
                      heartbeat_interval_ms=1000, auto_offset_reset="earliest", metadata_max_age_ms=1000)
    try:
        deadline = time.monotonic() + WAIT_S
        while not c.partitions_for_topic(TOPIC) and time.monotonic() < deadline:
            time.sleep(0.2)
        c.subscribe([TOPIC])
        while time.monotonic() < deadline:
            c.poll(200)
            if c.assignment():
                return sorted(tp.partition for tp in c.assignment())
        raise AssertionError("kafka-python got no assignment")
    finally:
        c.close()


CASES = [("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
         ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("SASL_SSL", "SCRAM-SHA-512"), ("SSL", None)]


@pytest.mark.parametrize("protocol, mech", CASES, ids=[f"{p}-{m}" for p, m in CASES])
@pytest.mark.parametrize("client", ["librdkafka", "kafka-python"])
def test_a_real_client_authenticates_and_joins_a_group(client: str, protocol: str, mech: str | None,
                                                       pem: Pem, brokers: list[BrokerThread]) -> None:
    mechs = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") if mech else ()
    b = serve(protocol, pem, mechs)
    brokers.append(b)
    rec = b.run(b.broker.record, Recorder())
    if client == "librdkafka":
        got = joins_with_librdkafka(librdkafka_conf(b, protocol, pem, mech, USERS["alice"]))
    else:
        got = joins_with_kafka_python(kafka_python_conf(b, protocol, pem, mech, USERS["alice"]))
    assert got == list(range(PARTITIONS))
    apis = [e.api_key for e in rec.events if e.kind == "request"]
    if mech:  # the exchange happened on the wire, before any group request
        assert 17 in apis and 36 in apis and apis.index(36) < apis.index(11)
    else:
        assert 17 not in apis and 36 not in apis


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256"])
def test_librdkafka_with_a_wrong_password_is_refused_with_kafkas_message(
        mech: str, pem: Pem, brokers: list[BrokerThread]) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    b = serve("SASL_PLAINTEXT", pem, (mech,))
    brokers.append(b)
    rec = b.run(b.broker.record, Recorder())
    errors: list[str] = []
    conf = librdkafka_conf(b, "SASL_PLAINTEXT", pem, mech, "wrong")
    admin = AdminClient({**conf, "error_cb": lambda e: errors.append(str(e))})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    deadline = time.monotonic() + WAIT_S
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)  # error_cb is served by poll
    expected = ("Authentication failed: Invalid username or password" if mech == "PLAIN" else
                f"Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {mech}")
    assert any(expected in e for e in errors), errors
    # librdkafka reconnects after a refusal, so a later connection's first SCRAM step
    # (answered 0) can come after it: look for the refusal, then its connection's close.
    refused = [e for e in rec.events
               if e.kind == "response" and e.api_key == 36 and e.body["ErrorCode"] == 58]
    assert refused, [e.body for e in rec.events if e.kind == "response" and e.api_key == 36]
    closes = [e for e in rec.events
              if e.kind == "close" and e.by == "broker" and e.conn == refused[0].conn]
    assert closes and closes[0].reason.startswith(f"SASL {mech} authentication failed")


def test_a_plaintext_client_on_a_sasl_listener_gets_no_group_service(pem: Pem,
                                                                     brokers: list[BrokerThread]) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka import KafkaException
    b = serve("SASL_PLAINTEXT", pem, ("PLAIN",))
    brokers.append(b)
    rec = b.run(b.broker.record, Recorder())
    admin = AdminClient({"bootstrap.servers": b.bootstrap, "security.protocol": "PLAINTEXT"})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    closes = [e.reason for e in rec.events if e.kind == "close" and e.by == "broker"]
    assert any("(rule sasl-handshake-first)" in (r or "") for r in closes), closes


ACL_RULES = """
allow User:alice Read Group:granted-*
allow User:alice Read Topic:events
"""


def serve_with_acls(pem: Pem, tmp_path: Path) -> BrokerThread:
    from fakebroker.server.acl import parse_acl_file
    f = tmp_path / "acls"
    f.write_text(ACL_RULES)
    cfg = BrokerConfig(topics=[Topic(TOPIC, PARTITIONS), Topic("secret", 1)],
                       sasl=SaslConfig(("PLAIN",), USERS), acls=parse_acl_file(f))
    return BrokerThread(FakeBroker(cfg, CoordinatorConfig(initial_rebalance_delay_ms=0))).start()


def librdkafka_error(conf: dict[str, Any], group: str, topic: str) -> Any:
    """The first error a librdkafka consumer reports (None: it got an assignment)."""
    from confluent_kafka import Consumer
    c = Consumer({**conf, "group.id": group, "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is not None:
                return msg.error()
            if c.assignment():
                return None
        raise AssertionError("librdkafka reported neither an error nor an assignment")
    finally:
        c.close()


def test_librdkafka_reports_kafkas_authorization_errors(pem: Pem, tmp_path: Path,
                                                        brokers: list[BrokerThread]) -> None:
    from confluent_kafka import KafkaError
    b = serve_with_acls(pem, tmp_path)
    brokers.append(b)
    conf = librdkafka_conf(b, "SASL_PLAINTEXT", pem, "PLAIN", USERS["alice"])
    assert librdkafka_error(conf, "granted-1", TOPIC) is None  # allowed: assigned
    assert librdkafka_error(conf, "other", TOPIC).code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert librdkafka_error(conf, "granted-2", "secret").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_kafka_python_raises_group_authorization_failed(pem: Pem, tmp_path: Path,
                                                        brokers: list[BrokerThread]) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError
    b = serve_with_acls(pem, tmp_path)
    brokers.append(b)
    conf = kafka_python_conf(b, "SASL_PLAINTEXT", pem, "PLAIN", USERS["alice"])
    c = KafkaConsumer(TOPIC, **conf, group_id="other", session_timeout_ms=6000)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                c.poll(200)
        assert not c.assignment()
    finally:
        c.close()
