"""What a real broker is started with: one place for the backends to agree on.

The defaults suit tests: no initial rebalance delay, a 1 s minimum session timeout (so
scenarios that wait for a session to expire are short), one ``__consumer_offsets``
partition (created fast, and the persistence checks read one partition).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Apache Kafka's own broker defaults for the group settings a coordinator target declares
# (group.initial.rebalance.delay.ms, group.min/max.session.timeout.ms). The one source for
# `python -m fakebroker.realkafka start`'s defaults and a conformance target's [timing].
KAFKA_INITIAL_REBALANCE_DELAY_MS = 3000
KAFKA_MIN_SESSION_TIMEOUT_MS = 6000
KAFKA_MAX_SESSION_TIMEOUT_MS = 1_800_000


@dataclass
class KafkaSettings:
    # group.initial.rebalance.delay.ms (Kafka's default is 3000; tests want 0).
    initial_rebalance_delay_ms: int = 0
    # group.min.session.timeout.ms / group.max.session.timeout.ms.
    min_session_timeout_ms: int = 1000
    max_session_timeout_ms: int = KAFKA_MAX_SESSION_TIMEOUT_MS
    # offsets.topic.num.partitions.
    offsets_partitions: int = 1
    # Any further server.properties (they win over everything above, ports excepted).
    properties: dict[str, Any] = field(default_factory=dict)
    # The client listener's port and the controller's (0: a free one is picked).
    port: int = 0
    controller_port: int = 0
    # The JVM's heap (-Xms and -Xmx), in MiB, and extra JVM arguments.
    heap_mb: int = 512
    jvm_args: tuple[str, ...] = ()
    # Bounds: until the group coordinator answers; a clean stop before SIGKILL.
    ready_timeout_s: float = 120.0
    stop_timeout_s: float = 20.0

    def server_properties(self, *, host: str, port: int, controller_host: str,
                          controller_port: int, log_dir: str | None,
                          bind_host: str | None = None) -> dict[str, str]:
        """A single-node KRaft broker+controller on ``host:port`` (clients) and
        ``controller_host:controller_port`` (the quorum); ``bind_host`` is what the
        listeners bind to when it differs from what is advertised (containers)."""
        bind = bind_host or host
        cbind = bind_host or controller_host
        props: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@{controller_host}:{controller_port}",
            "listeners": f"PLAINTEXT://{bind}:{port},CONTROLLER://{cbind}:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "num.partitions": 1,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": self.offsets_partitions,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": self.initial_rebalance_delay_ms,
            "group.min.session.timeout.ms": self.min_session_timeout_ms,
            "group.max.session.timeout.ms": self.max_session_timeout_ms,
            "auto.create.topics.enable": "true",
            "log.flush.interval.messages": 10_000_000,
        }
        if log_dir is not None:
            props["log.dirs"] = log_dir
        fixed = {"listeners", "advertised.listeners", "controller.quorum.voters", "log.dirs"}
        props.update({k: v for k, v in self.properties.items() if k not in fixed})
        return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in props.items()}

    def describe(self) -> str:
        return (f"initial rebalance delay {self.initial_rebalance_delay_ms} ms, session timeouts "
                f"[{self.min_session_timeout_ms}, {self.max_session_timeout_ms}] ms")
