"""A kafka-python consumer that joins a group, prints its assignment as one JSON line and
exits (run as a process by the broker-side script tests). Exit 1 if no assignment comes."""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    from kafka import KafkaConsumer

    bootstrap, group, topic = sys.argv[1:4]
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="kp-1",
                      enable_auto_commit=False, session_timeout_ms=10_000,
                      heartbeat_interval_ms=3_000, request_timeout_ms=15_000)
    c.subscribe([topic])
    # Join with the topic's partitions already known: kafka-python 3.0.12 can lose the
    # assignment of a metadata-triggered rejoin (see tests/realclients/member.py).
    deadline = time.monotonic() + 20
    while not c.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        while time.monotonic() < deadline:
            c.poll(timeout_ms=100)
            got = sorted([tp.topic, tp.partition] for tp in c.assignment())
            if got:
                print(json.dumps({"assignment": got}), flush=True)
                return 0
        return 1
    finally:
        c.close(autocommit=False)


if __name__ == "__main__":
    sys.exit(main())
