"""One consumer-group member driven by a real client library, as a separate process.

Prints one JSON line per assignment change: {"client": ..., "assignment": [[topic, p], ...]}.
Reads commands on stdin: "close" leaves the group cleanly and exits. confluent-kafka members
speak the classic protocol or, with ``--group-protocol consumer``, KIP-848's. The test may also
SIGSTOP the process, which is how a member stops heartbeating for real.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from typing import Any, Callable

closing = threading.Event()

# A leader that completes its join before its first metadata for the topic arrives assigns
# nothing and waits for the next metadata refresh (kafka-python's and aiokafka's default: 5
# minutes) to notice and rejoin; with no initial rebalance delay on the broker that race is
# real on a loaded machine. Refreshing every second bounds it, as a short delay would.
METADATA_MAX_AGE_MS = 1000


def report(client: str, assignment: list[tuple[str, int]]) -> None:
    print(json.dumps({"client": client, "assignment": sorted([list(a) for a in assignment])}),
          flush=True)


def watch_stdin() -> None:
    for line in sys.stdin:
        if line.strip() == "close":
            break
    closing.set()


def loop(client: str, poll: Callable[[], list[tuple[str, int]]]) -> None:
    last: list[tuple[str, int]] | None = None
    while not closing.is_set():
        now = sorted(poll())
        if now != last:
            report(client, now)
            last = now


def settle_kafka_python_metadata(consumer: Any, topic: str) -> None:
    """Know the topic's partitions before the first poll joins the group.

    kafka-python 3.0.12 loses an assignment when a rejoin it started because its metadata
    changed (the leader's snapshot check) is still in flight as poll's timeout expires: the
    leader updates its snapshot while assigning, so the next poll sees nothing to rejoin and
    never consumes the finished join; the member stays in the group holding nothing. Joining
    with the metadata already known avoids that rejoin (seen on a loaded CI machine).
    """
    deadline = time.monotonic() + 30
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.1)


def run_kafka_python(a: argparse.Namespace) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    names = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group,
                      session_timeout_ms=a.session_timeout_ms,
                      heartbeat_interval_ms=a.heartbeat_interval_ms,
                      partition_assignment_strategy=[names[s] for s in a.strategies.split(",")],
                      enable_auto_commit=False, client_id=a.name,
                      metadata_max_age_ms=METADATA_MAX_AGE_MS)
    c.subscribe([a.topic])
    settle_kafka_python_metadata(c, a.topic)

    def poll() -> list[tuple[str, int]]:
        c.poll(timeout_ms=100)
        return [(tp.topic, tp.partition) for tp in c.assignment()]

    loop("kafka-python", poll)
    c.close()


def run_confluent(a: argparse.Namespace) -> None:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {"bootstrap.servers": a.bootstrap, "group.id": a.group,
                            "enable.auto.commit": False, "client.id": a.name,
                            "topic.metadata.refresh.interval.ms": METADATA_MAX_AGE_MS,
                            "group.protocol": a.group_protocol}
    if a.group_protocol == "classic":
        conf.update({"session.timeout.ms": a.session_timeout_ms,
                     "heartbeat.interval.ms": a.heartbeat_interval_ms,
                     "partition.assignment.strategy": a.strategies})
    elif a.remote_assignor:
        # KIP-848: the session timeout, the heartbeat interval and the assignor are the
        # broker's; the member may only ask for a server-side assignor.
        conf["group.remote.assignor"] = a.remote_assignor
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    if a.debug:
        conf["debug"] = a.debug
    c = Consumer(conf)
    c.subscribe([a.topic])

    def poll() -> list[tuple[str, int]]:
        c.poll(0.1)
        return [(tp.topic, tp.partition) for tp in c.assignment()]

    loop("confluent-kafka", poll)
    c.close()


def run_aiokafka(a: argparse.Namespace) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    names: dict[str, Any] = {"range": RangePartitionAssignor,
                             "roundrobin": RoundRobinPartitionAssignor}

    async def main() -> None:
        c = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group,
                             session_timeout_ms=a.session_timeout_ms,
                             heartbeat_interval_ms=a.heartbeat_interval_ms,
                             partition_assignment_strategy=tuple(
                                 names[s] for s in a.strategies.split(",")),
                             enable_auto_commit=False, client_id=a.name,
                             metadata_max_age_ms=METADATA_MAX_AGE_MS)
        c.subscribe([a.topic])
        await c.start()
        last = None
        while not closing.is_set():
            await c.getmany(timeout_ms=100)
            now = sorted((tp.topic, tp.partition) for tp in c.assignment())
            if now != last:
                report("aiokafka", now)
                last = now
        await c.stop()

    asyncio.run(main())


def main() -> None:
    # The client's own log goes to stderr; the harness shows its tail when a wait times out.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=["kafka-python", "confluent-kafka", "aiokafka"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--name", default="member")
    p.add_argument("--strategies", default="range")
    p.add_argument("--session-timeout-ms", type=int, default=3000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=300)
    # confluent-kafka only: "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848).
    p.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic")
    p.add_argument("--remote-assignor", default=None,
                   help="group.remote.assignor (with --group-protocol consumer)")
    p.add_argument("--instance-id", default=None, help="group.instance.id (confluent-kafka)")
    p.add_argument("--debug", default=None, help="librdkafka debug contexts (to stderr)")
    a = p.parse_args()
    threading.Thread(target=watch_stdin, daemon=True).start()
    {"kafka-python": run_kafka_python, "confluent-kafka": run_confluent,
     "aiokafka": run_aiokafka}[a.client](a)


if __name__ == "__main__":
    main()
