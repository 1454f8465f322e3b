"""A lone kafka-python 3.0.12 consumer for tests/interop/test_kafka_python_rejoin.py, run as
a process: ``kp_rejoin_member.py BOOTSTRAP GROUP TOPIC``.

It subscribes to TOPIC (which does not exist yet), waits until its coordinator's metadata
snapshot includes the topic, then calls ``poll(timeout_ms=100)`` in a loop; after each poll
it prints one JSON line when its state changed:

    {"poll_ms": 100, "generation": 2, "join": "pending", "rejoin": false, "assignment": [...]}

``join`` is the coordinator's join task (``_join_task``): "none", "pending" (a JoinGroup /
SyncGroup round trip in flight past poll's timeout) or "done" (finished, its result not yet
consumed by ``join_group_async``); ``rejoin`` is ``need_rejoin()``. Reads commands on
stdin: ``poll N`` makes every following poll ``poll(timeout_ms=N)`` (acknowledged by a
line with the new ``poll_ms`` before that poll starts); ``close`` exits.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import Any

state_lock = threading.Lock()
poll_ms = 100
closing = threading.Event()


def watch_stdin() -> None:
    global poll_ms
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["poll"] and len(words) == 2:
            with state_lock:
                poll_ms = int(words[1])
        elif words[:1] == ["close"]:
            break
    closing.set()


def status(c: Any, timeout_ms: int) -> dict[str, Any]:
    coord = c._coordinator  # kafka-python 3.0.12 internals: what the test pins is in there
    task = coord._join_task
    return {"poll_ms": timeout_ms,
            "generation": coord._generation.generation_id,
            "join": "none" if task is None else ("done" if task.is_done else "pending"),
            "rejoin": bool(coord.need_rejoin()),
            "assignment": sorted([tp.topic, tp.partition] for tp in c.assignment())}


def settle_metadata(c: Any, topic: str) -> None:
    """Have the coordinator's metadata snapshot include the (still missing) topic before
    the first poll joins. Otherwise the first join may assign from the snapshot taken before
    the subscription ({}), and the metadata's arrival ({topic: set()}) starts a
    metadata-triggered rejoin of its own, one the bug under test can lose while the test
    waits for the consumer to settle."""
    c.partitions_for_topic(topic)  # fetches the metadata: the topic is unknown, so None
    deadline = time.monotonic() + 30
    while topic not in c._coordinator._metadata_snapshot and time.monotonic() < deadline:
        time.sleep(0.05)


def main() -> int:
    from kafka import KafkaConsumer

    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # "Updated metadata" and, until the topic exists, "Topic ... not found": a line per refresh
    logging.getLogger("kafka.cluster").setLevel(logging.CRITICAL)
    bootstrap, group, topic = sys.argv[1:4]
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="kp-rejoin",
                      enable_auto_commit=False, session_timeout_ms=10_000,
                      heartbeat_interval_ms=1_000, request_timeout_ms=30_000,
                      # the leader notices the topic's partitions within half a second
                      metadata_max_age_ms=500)
    c.subscribe([topic])
    settle_metadata(c, topic)
    threading.Thread(target=watch_stdin, daemon=True).start()
    last: dict[str, Any] | None = None
    try:
        while not closing.is_set():
            with state_lock:
                timeout_ms = poll_ms
            if last is not None and last["poll_ms"] != timeout_ms:
                last = {**last, "poll_ms": timeout_ms}  # the acknowledgement
                print(json.dumps(last), flush=True)
            c.poll(timeout_ms=timeout_ms)
            now = status(c, timeout_ms)
            if now != last:
                print(json.dumps(now), flush=True)
                last = now
    finally:
        c.close(autocommit=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
