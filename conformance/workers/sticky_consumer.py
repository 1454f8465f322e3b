"""A bundled consumer-group member with kafka-python's sticky assignor, for the worker suite's
KIP-341 cases (K341-*).

kafka-python's ``BaseCoordinator`` does the classic group membership (JoinGroup with the
MEMBER_ID_REQUIRED retry, SyncGroup, heartbeats, LeaveGroup); the consumer protocol part is
what kafka-python's ``ConsumerCoordinator`` does with its assignor, here with
``StickyPartitionAssignor`` (``kafka.coordinator.assignors.sticky.sticky_assignor``), the
one assignor of ``partition_assignment_strategy``:

- protocol type ``consumer``, one protocol ``sticky``, its metadata ``assignor.metadata(topics)``;
- as leader: each member's metadata decoded as kafka-python's ``ConsumerProtocolSubscription``,
  then ``assignor.assign(cluster, members)``;
- on every assignment: ``assignor.on_assignment(assignment, generation)``, so the next
  JoinGroup reports the assignment and the group generation.

It fetches nothing: the topics and their partition counts come from ``--topics`` (the
fake broker keeps no topic metadata for a consumer group to read), so the cluster view the
assignor sees is fixed. SIGTERM: leave the group and exit. It has no
mutants: kafka-python's sticky leader fails every K341 case of its own (it reads another
user-data layout than Kafka's), so a planted defect's refusal would prove nothing.

    python -m conformance.workers.sticky_consumer --bootstrap H:P --group G --worker-id c1 \\
        --topics t0:3,t1:2
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from collections.abc import Sequence
from typing import Any

from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from conformance.workers.kp_runtime import emit, serve, start_client, stop_on_signals



class FixedCluster:
    """The part of kafka-python's ClusterMetadata the sticky assignor reads."""

    def __init__(self, spec: str) -> None:
        self.parts: dict[str, set[int]] = {}
        for item in filter(None, spec.split(",")):
            name, _, n = item.partition(":")
            self.parts[name] = set(range(int(n or 1)))

    def topics(self) -> set[str]:
        return set(self.parts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self.parts.get(topic)


class StickyConsumer(BaseCoordinator):  # type: ignore[misc]  # kafka-python is untyped
    DEFAULT_CONFIG = {**BaseCoordinator.DEFAULT_CONFIG, "metric_group_prefix": "consumer"}

    def __init__(self, client: KafkaNetClient, cluster: FixedCluster, **configs: Any) -> None:
        super().__init__(client, **configs)
        self.cluster = cluster
        self.assignor = StickyPartitionAssignor()
        self.topics = sorted(cluster.topics())

    def protocol_type(self) -> str:
        return "consumer"

    def group_protocols(self) -> list[tuple[str, bytes]]:
        md = self.assignor.metadata(set(self.topics))
        emit("join", generation=self.assignor.generation,
             owned=sorted(map(tuple, self.assignor.member_assignment or [])))
        return [(self.assignor.name, md.encode())]

    def _perform_assignment(self, leader_id: str, protocol: str, members: Sequence[Any]) -> dict[str, bytes]:
        if protocol != self.assignor.name:
            raise ValueError(f"coordinator selected unknown protocol {protocol!r}")
        for m in members:
            m.metadata = ConsumerProtocolSubscription.decode(bytes(m.metadata))
        out = self.assignor.assign(self.cluster, members)
        emit("lead", assignments={k: sorted(map(tuple, v.partitions())) for k, v in out.items()})
        return {k: v.encode() for k, v in out.items()}

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,
                                      member_assignment_bytes: bytes) -> None:
        assignment = ConsumerProtocolAssignment.decode(bytes(member_assignment_bytes))
        self.assignor.on_assignment(assignment, generation)
        emit("assigned", generation=generation, partitions=sorted(map(tuple, assignment.partitions())))

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.ensure_active_group(timeout_ms=200)
            self.poll_heartbeat()
            if not self.need_rejoin():
                stop.wait(0.05)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A consumer-group member with kafka-python's sticky assignor.")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--worker-id", required=True)
    p.add_argument("--topics", default="t0:3,t1:2")
    p.add_argument("--session-timeout-ms", type=int, default=10000)
    p.add_argument("--rebalance-timeout-ms", type=int, default=60000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=3000)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    stop = stop_on_signals()
    client = start_client(args.bootstrap, args.worker_id)
    consumer = StickyConsumer(client, FixedCluster(args.topics), group_id=args.group,
                              api_version=client._manager.broker_version,
                              session_timeout_ms=args.session_timeout_ms,
                              heartbeat_interval_ms=args.heartbeat_interval_ms,
                              max_poll_interval_ms=args.rebalance_timeout_ms, retry_backoff_ms=100)
    emit("started", consumer=args.worker_id, topics=consumer.topics)
    return serve(consumer, client, stop)


if __name__ == "__main__":
    sys.exit(main())
