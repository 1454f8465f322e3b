"""One real Kafka for every test process of a run, started by pytest-xdist's controller.

A target that needs a real Kafka (``launch = "real-kafka"``: it is the coordinator under
test; ``upstream = "real-kafka"``: it holds a Connect worker's internal topics) used to get
one per test process. Its cases each use a group of their own, so the processes can share
one: the controller starts it once, before its first test process (``pytest_configure_node``),
hands its address to every process (``workerinput``), and stops it when the run ends
(``SharedKafka``). A
process then runs more cases at once for the same Kafka start-up (about 4 s of CPU and a
few seconds of wall time each, all at once at the start of a run).

A Connect target shares it only when its command takes ``{topic_prefix}``: every test
process then has internal topics of its own (``prefix_of``), since a worker writes its
tasks' statuses into its status topic and would overwrite those of another process's
worker running the same task. Without xdist the one process starts its own Kafka, as before.
"""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from .target import Target

WORKERINPUT_KEY = "conformance_real_kafka"  # bootstrap of the shared broker
WORKERINPUT_FAILED = "conformance_real_kafka_failed"  # a file: why it could not be started
# A worker target's internal topics (its command's {topic_prefix}); per test process with xdist.
TOPIC_PREFIX = "connect-conformance"


def launch_settings(target: Target) -> Any:
    """The broker settings of a launched real Kafka: the group settings the target declares
    (its [timing] is what the cases read, so the broker must run with exactly those)."""
    from fakebroker.realkafka import KafkaSettings
    t = target.timing
    return KafkaSettings(initial_rebalance_delay_ms=t.initial_rebalance_delay_ms,
                         min_session_timeout_ms=t.min_session_timeout_ms,
                         max_session_timeout_ms=t.max_session_timeout_ms)


def kafka_settings(target: Target) -> Any | None:
    """What a real Kafka for ``target`` is started with; None when it needs none."""
    from fakebroker.realkafka import KafkaSettings
    if target.launch == "real-kafka":
        return launch_settings(target)
    if target.upstream == "real-kafka":
        # It only stores the workers' internal topics: started for start-up, not throughput
        # (C1 only, as the Connect workers run; fakebroker.jvm_fast_start).
        return KafkaSettings(jvm_args=("-XX:TieredStopAtLevel=1",))
    return None


def shareable(target: Target) -> bool:
    """Whether the test processes of a run of ``target`` may share one real Kafka."""
    if kafka_settings(target) is None:
        return False
    return target.upstream != "real-kafka" or target.takes("topic_prefix")


def prefix_of(worker_id: str | None) -> str:
    """The internal topics' prefix of a test process (``gw0``...; None: not under xdist)."""
    return f"{TOPIC_PREFIX}-{worker_id}" if worker_id else TOPIC_PREFIX


class SharedKafka:
    """The controller's side. A local JVM broker (the ``process`` backend) gets its ports
    when the first test process is configured, so every process knows its address at once
    and waits for it; ``start`` (from the controller's main thread, once the processes are
    spawned) then runs it while they import and collect. Another backend (a container, an
    external broker) is started right away. ``stop`` at the end of the run."""

    def __init__(self, target: Target) -> None:
        self.settings = kafka_settings(target)
        self.kafka: Any = None
        self.bootstrap: str | None = None
        self._held: list[socket.socket] = []  # the ports, reserved until Kafka listens on them
        fd, name = tempfile.mkstemp(prefix="conformance-kafka-", suffix=".failed")
        os.close(fd)
        self.failed = Path(name)  # empty while nothing failed; else why the start failed

    def workerinput(self) -> dict[str, str]:
        if self.bootstrap is None and not self.failed.read_text():
            from fakebroker.realkafka import choose_backend
            from fakebroker.realkafka.launcher import HOST
            if choose_backend()[0] == "process":
                self._held = [_reserve(HOST), _reserve(HOST)]
                port, controller_port = (s.getsockname()[1] for s in self._held)
                self.settings = replace(self.settings, port=port, controller_port=controller_port)
                self.bootstrap = f"{HOST}:{port}"
            else:
                self.start()
        return {WORKERINPUT_KEY: self.bootstrap or "", WORKERINPUT_FAILED: str(self.failed)}

    def start(self) -> None:
        if self.kafka is not None or self.failed.read_text():
            return
        from fakebroker.realkafka import RealKafkaError, start_real_kafka
        try:
            self.kafka = start_real_kafka(self.settings)
            self.bootstrap = self.kafka.bootstrap
        except RealKafkaError as e:
            self.failed.write_text(str(e) or type(e).__name__)
        finally:
            for s in self._held:
                s.close()
            self._held = []

    def stop(self) -> None:
        kafka, self.kafka = self.kafka, None
        try:
            if kafka is not None:
                kafka.stop()
        finally:
            self.failed.unlink(missing_ok=True)


def _reserve(host: str) -> socket.socket:
    """A free port, kept from everyone else's bind(0) until closed: bound, not listening,
    with SO_REUSEADDR, so that Kafka (Java's server sockets set it too) can still bind it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 0))
    return s


def real_kafka_for(target: Target, workerinput: dict[str, Any] | None) -> Any:
    """A started real Kafka for this process: the controller's (never stopped from here:
    ``ExternalKafka.stop`` does nothing; waited for until it answers or the controller
    reports its start failed) or, when it shares none, one of its own."""
    from fakebroker.realkafka import ExternalKafka, start_real_kafka
    settings = kafka_settings(target)
    if not workerinput or WORKERINPUT_FAILED not in workerinput:
        return start_real_kafka(settings)
    failed = Path(workerinput[WORKERINPUT_FAILED])

    def why() -> str | None:
        try:
            return failed.read_text() or None
        except OSError:
            return None
    reason = why()
    if reason or not workerinput[WORKERINPUT_KEY]:
        from fakebroker.realkafka import RealKafkaError
        raise RealKafkaError(f"the run's real Kafka did not start: {reason or 'no address'}")
    return ExternalKafka(workerinput[WORKERINPUT_KEY], settings, failed=why).start()
