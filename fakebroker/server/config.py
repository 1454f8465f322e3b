"""What a fake broker serves: its address, its topics, its limits."""

from __future__ import annotations

import ssl
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .acl import Acls
from .sasl import SaslConfig

# The largest request frame accepted. Kafka's socket.request.max.bytes is 100 MB, but it
# decodes on many threads; here one event loop decodes for every client, and the group
# APIs' frames are small (a JoinGroup or SyncGroup of a large Connect cluster is well under
# 1 MB; clients' own max.request.size defaults to 1 MB), so 8 MiB leaves room while
# bounding what one client can make everyone wait for.
DEFAULT_MAX_FRAME_BYTES = 8 * 1024 * 1024
DEFAULT_IDLE_TIMEOUT_MS = 600_000  # Kafka's connections.max.idle.ms default (10 min)
DEFAULT_MAX_CONNECTIONS = 1000
MIN_FRAME_BYTES = 12  # size of the smallest request header (v1, null client id)


def name_and_number(text: str, what: str, form: str, number: str) -> tuple[str, int]:
    """An option's ``NAME:N`` value (``form`` spells it, ``number`` names N), refused with a
    one-line error naming the option ``what`` when a part is missing or N is not a number."""
    name, sep, count = text.rpartition(":")
    if not sep or not name:
        raise ValueError(f"{what} {text!r}: expected {form}")
    try:
        return name, int(count)
    except ValueError:
        raise ValueError(f"{what} {text!r}: {number} {count!r} is not a number") from None


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: int

    @property
    def topic_id(self) -> uuid.UUID:
        # Stable across runs so transcripts of two runs compare equal.
        return uuid.uuid5(uuid.NAMESPACE_URL, f"fakebroker-topic:{self.name}")

    @staticmethod
    def parse(text: str) -> Topic:
        """``NAME:PARTITIONS`` (the --topic option)."""
        name, n = name_and_number(text, "topic", "NAME:PARTITIONS", "partition count")
        if n < 1:
            raise ValueError(f"topic {text!r}: partition count must be at least 1")
        return Topic(name, n)


@dataclass(frozen=True)
class TlsConfig:
    """The listener's certificate chain and private key (PEM files)."""

    certfile: Path
    keyfile: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(self.certfile, self.keyfile)
        except (OSError, ssl.SSLError) as e:
            raise ValueError(f"TLS: cannot load certificate {self.certfile} with key "
                             f"{self.keyfile}: {e}") from None
        return ctx


@dataclass
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    # The host Metadata and FindCoordinator name, when clients reach us by another address than
    # the bound one (in a container: bound to 0.0.0.0, reached as localhost or a service name).
    advertised_host: str | None = None
    node_id: int = 1
    cluster_id: str = "fakebroker-cluster"
    topics: list[Topic] = field(default_factory=list)
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    # Kafka's connections.max.idle.ms: a connection with no request in progress that sends
    # nothing (or only part of a frame) for this long is closed. None: never.
    idle_timeout_ms: int | None = DEFAULT_IDLE_TIMEOUT_MS
    # Open connections at most; one more is closed at once (Kafka's max.connections).
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # Per-API cap on the advertised max version (pins clients to old versions).
    api_max_versions: dict[int, int] = field(default_factory=dict)
    # The listener's security: TLS and/or SASL (both None: PLAINTEXT).
    tls: TlsConfig | None = None
    sasl: SaslConfig | None = None
    # Who may do what (``acl.py``); None: everyone may do everything.
    acls: Acls | None = None

    @property
    def security_protocol(self) -> str:
        """Kafka's name for the listener: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        if self.sasl is None:
            return "SSL" if self.tls else "PLAINTEXT"
        return "SASL_SSL" if self.tls else "SASL_PLAINTEXT"

    def topic(self, name: str) -> Topic | None:
        return next((t for t in self.topics if t.name == name), None)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.topics if t.topic_id == topic_id), None)
