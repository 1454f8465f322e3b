"""What every bundled worker built on kafka-python shares: its event lines on stdout, the
client set-up, the stop signals, and a bounded shutdown (kafka-python's own close waits
for its IO thread without a limit)."""

from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any, Protocol

from kafka.net.compat import KafkaNetClient


class Member(Protocol):
    def run(self, stop: threading.Event) -> None: ...

    def close(self, timeout_ms: int) -> None: ...


def _json_default(value: Any) -> Any:
    # Sets (of units, of partitions) print sorted, so event lines are deterministic.
    return sorted(value) if isinstance(value, (set, frozenset)) else str(value)


def emit(event: str, **fields: Any) -> None:
    """One event as a JSON line on stdout: what the harness reads from a worker."""
    print(json.dumps({"event": event, "t": round(time.time(), 3), **fields}, default=_json_default),
          flush=True)


def stop_on_signals() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


def start_client(bootstrap: str, client_id: str) -> KafkaNetClient:
    client = KafkaNetClient(bootstrap_servers=bootstrap, client_id=client_id)
    client._net.start()
    client._manager.bootstrap(10000)
    return client


def serve(member: Member, client: KafkaNetClient, stop: threading.Event) -> int:
    """Run until stopped, then leave the group (close sends LeaveGroup) within bounds."""
    try:
        member.run(stop)
    finally:
        emit("stopping")
        try:
            member.close(timeout_ms=5000)
        finally:
            client._net.stop(timeout_ms=5000)
            client.close()
        emit("stopped")
    return 0
