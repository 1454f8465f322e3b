"""librdkafka's mock cluster (the one confluent-kafka ships) as a standalone broker.

    python -m fakebroker.thirdparty.librdkafka_mock --port-file /tmp/mock.port

A librdkafka client configured with ``test.mock.num.brokers`` starts the mock in-process on
an ephemeral loopback port; this program keeps such a client alive, learns the mock's
address from the client's own metadata (the mock replaces ``bootstrap.servers``), prints
``READY <host:port>`` and writes ``host:port`` to ``--port-file``, then runs until SIGTERM
or SIGINT. The mock's log (e.g. "unsupported ... version") goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from ..exit_codes import EXIT_BROKEN, EXIT_OK


def start_mock(brokers: int = 1, timeout_s: float = 10.0) -> tuple[object, str]:
    """A client holding a started mock cluster, and the cluster's bootstrap ``host:port``."""
    from confluent_kafka.admin import AdminClient
    client = AdminClient({"test.mock.num.brokers": brokers})
    md = client.list_topics(timeout=timeout_s)
    addrs = sorted(f"{b.host}:{b.port}" for b in md.brokers.values())
    if not addrs:
        raise RuntimeError("the mock cluster listed no brokers")
    return client, ",".join(addrs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fakebroker.thirdparty.librdkafka_mock",
                                description="Run librdkafka's mock cluster until SIGTERM.")
    p.add_argument("--port-file", type=Path, help="write the bootstrap host:port here once ready")
    p.add_argument("--brokers", type=int, default=1, help="brokers in the mock cluster (default 1)")
    a = p.parse_args(argv)
    if a.brokers < 1:
        p.error("--brokers: must be at least 1")
    try:
        client, bootstrap = start_mock(a.brokers)
    except ImportError:
        print("librdkafka_mock: confluent-kafka is not installed (pip install confluent-kafka)",
              file=sys.stderr)
        return EXIT_BROKEN
    except Exception as e:  # noqa: BLE001 - librdkafka's KafkaException: one line, no traceback
        print(f"librdkafka_mock: the mock cluster did not start: {e}", file=sys.stderr)
        return EXIT_BROKEN
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if a.port_file is not None:
        tmp = a.port_file.with_name(a.port_file.name + ".tmp")
        tmp.write_text(bootstrap + "\n", encoding="utf-8")
        os.replace(tmp, a.port_file)  # a reader never sees half an address
    print(f"READY {bootstrap}", flush=True)
    while not stop.wait(3600):
        pass
    del client  # destroys the mock cluster with its client
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
