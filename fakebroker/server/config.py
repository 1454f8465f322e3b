"""What a fake broker serves: its address, its topics, its limits."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

# Kafka's socket.request.max.bytes default.
DEFAULT_MAX_FRAME_BYTES = 104_857_600


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
        name, sep, count = text.rpartition(":")
        if not sep or not name:
            raise ValueError(f"topic {text!r}: expected NAME:PARTITIONS")
        try:
            n = int(count)
        except ValueError:
            raise ValueError(f"topic {text!r}: partition count {count!r} is not a number") from None
        if n < 1:
            raise ValueError(f"topic {text!r}: partition count must be at least 1")
        return Topic(name, n)


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
    # Per-API cap on the advertised max version (pins clients to old versions).
    api_max_versions: dict[int, int] = field(default_factory=dict)

    def topic(self, name: str) -> Topic | None:
        return next((t for t in self.topics if t.name == name), None)

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.topics if t.topic_id == topic_id), None)
