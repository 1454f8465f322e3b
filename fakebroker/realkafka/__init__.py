"""A real Apache Kafka broker beside the fake one, for differential, persistence and speed
checks.

    from fakebroker.realkafka import start_real_kafka, KafkaSettings
    kafka = start_real_kafka(KafkaSettings(initial_rebalance_delay_ms=0))
    try:
        ...  # kafka.bootstrap
    finally:
        kafka.stop()

Backends, chosen by ``REAL_KAFKA_BACKEND`` (``auto`` by default):

- ``docker``: a container through testcontainers: the official ``apache/kafka`` image, or,
  where it cannot be pulled, the project's own build of the same jars (``docker_backend``);
- ``process``: the broker's jars from Maven Central (resolved once into a cache, see
  ``provision``) run as a local JVM;
- ``external``: an already running broker at ``REAL_KAFKA_BOOTSTRAP`` (never stopped or
  restarted by us);
- ``auto``: ``external`` when ``REAL_KAFKA_BOOTSTRAP`` is set, ``docker`` when a Docker engine
  answers a ping, else ``process``; ``docker`` falls back to ``process`` when the engine
  cannot run a Kafka image (``DockerUnusable``). The choice and its reason are printed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Protocol

from .launcher import BrokerFailed, BrokerNotReady, LocalKafka, PortInUse, our_java_processes
from .probe import BrokerDied, NotReady, wait_ready
from .provision import KAFKA_VERSION, JavaMissing, RealKafkaError, ResolveFailed
from .settings import KafkaSettings

__all__ = ["KAFKA_VERSION", "BrokerFailed", "BrokerNotReady", "ExternalKafka", "JavaMissing",
           "KafkaSettings", "LocalKafka", "PortInUse", "RealKafka", "RealKafkaError",
           "ResolveFailed", "choose_backend", "our_java_processes", "start_real_kafka"]

BACKENDS = ("auto", "process", "docker", "external")


class RealKafka(Protocol):
    backend: str
    version: str
    settings: KafkaSettings

    @property
    def bootstrap(self) -> str: ...
    def restart(self) -> None: ...
    def stop(self) -> None: ...
    def log_tail(self, lines: int = 40) -> str: ...


class ExternalKafka:
    """A broker someone else runs. Its settings are whatever it was started with: the
    checks assume the ones ``KafkaSettings`` documents. ``failed()`` returns why, when
    whoever starts it knows it will never answer (then ``start`` stops waiting at once)."""

    backend = "external"

    def __init__(self, bootstrap: str, settings: KafkaSettings | None = None,
                 failed: Callable[[], str | None] | None = None) -> None:
        self._bootstrap = bootstrap
        self.settings = settings or KafkaSettings()
        self.version = os.environ.get("REAL_KAFKA_VERSION", KAFKA_VERSION)
        self.description = ""
        self._failed = failed

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    def start(self) -> ExternalKafka:
        try:
            self.description = wait_ready(self._bootstrap, self.settings.ready_timeout_s, alive=self._failed)
        except BrokerDied as e:
            raise BrokerFailed(f"the broker at {self._bootstrap} did not start: {e}") from None
        except NotReady as e:
            raise BrokerNotReady(f"REAL_KAFKA_BOOTSTRAP={self._bootstrap} does not answer as a ready "
                                 f"broker: {e}") from None
        return self

    def restart(self) -> None:
        raise RealKafkaError("an external broker (REAL_KAFKA_BOOTSTRAP) cannot be restarted by the suite")

    def stop(self) -> None:
        pass

    def log_tail(self, lines: int = 40) -> str:
        return "(external broker: no log)"


def choose_backend(requested: str | None = None) -> tuple[str, str]:
    """``(backend, why)``."""
    name = (requested or os.environ.get("REAL_KAFKA_BACKEND") or "auto").strip().lower()
    if name not in BACKENDS:
        raise RealKafkaError(f"REAL_KAFKA_BACKEND={name!r}: expected one of {', '.join(BACKENDS)}")
    if name != "auto":
        return name, "requested"
    if os.environ.get("REAL_KAFKA_BOOTSTRAP"):
        return "external", "REAL_KAFKA_BOOTSTRAP is set"
    from ..containers.engine import docker_host, docker_unavailable
    why_not = docker_unavailable()
    if why_not is None:
        return "docker", f"a Docker engine answers at {docker_host()}"
    return "process", f"no Docker engine ({why_not})"


def start_real_kafka(settings: KafkaSettings | None = None, *, backend: str | None = None,
                     announce: bool = True, verbose: bool = False) -> RealKafka:
    """Start (or attach to) a real Kafka broker; the caller must ``stop()`` it."""
    name, why = choose_backend(backend)
    if announce:
        print(f"[realkafka] Apache Kafka {KAFKA_VERSION} backend: {name} ({why})",
              file=sys.stderr, flush=True)
    if name == "external":
        bootstrap = os.environ.get("REAL_KAFKA_BOOTSTRAP")
        if not bootstrap:
            raise RealKafkaError("REAL_KAFKA_BACKEND=external needs REAL_KAFKA_BOOTSTRAP=host:port")
        return ExternalKafka(bootstrap, settings).start()
    if name == "docker":
        from .docker_backend import DockerKafka, DockerUnusable
        try:
            return DockerKafka(settings, verbose=verbose).start()
        except DockerUnusable as e:
            if why == "requested":
                raise
            print(f"[realkafka] backend: process instead of docker ({e})", file=sys.stderr, flush=True)
    return LocalKafka(settings, verbose=verbose).start()
