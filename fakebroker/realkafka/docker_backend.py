"""A real Apache Kafka broker in a container (testcontainers), chosen when a Docker engine
answers.

The image, in order: the official ``apache/kafka`` image (present, or pulled within
``PULL_TIMEOUT_S``); else the project's own build of the same jars on Debian
(``fakebroker.containers.images.kafka_image``, made once per machine where no registry
answers); else ``DockerUnusable`` says why, and ``start_real_kafka`` falls back to the local
process. testcontainers' own ``KafkaContainer`` scripts Confluent's ``cp-kafka`` image, so
either image runs as a generic ``DockerContainer`` configured as the Apache image documents:
every server property as a ``KAFKA_*`` environment variable, ``CLUSTER_ID`` for the storage
format. The container shares the host's network (engines here run without a bridge) and
binds 127.0.0.1 only, on a free port, so the address it advertises is the one a client
dials. testcontainers' reaper is off (``use_own_reaper``): our labels and clean-up remove
the container instead.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from ..containers.engine import (REQUEST_TIMEOUT_S, EngineError, client, docker_host,
                                 docker_unavailable, one_line, our_labels, use_own_reaper)
from ..containers.images import kafka_image_tag
from .launcher import HOST, LOG4J2, free_port
from .probe import BrokerDied, NotReady, wait_ready
from .provision import KAFKA_VERSION, RealKafkaError
from .settings import KafkaSettings

__all__ = ["IMAGE", "DockerKafka", "DockerUnusable", "docker_host", "docker_unavailable", "env_name"]

IMAGE = f"apache/kafka:{KAFKA_VERSION}"
CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"
PULL_TIMEOUT_S = 120.0
_pull_failed: str | None = None


class DockerUnusable(RealKafkaError):
    """The engine cannot run a Kafka image here (no image, none to pull, none buildable):
    another backend may serve the run."""


def env_name(prop: str) -> str:
    """The image's rule: upper case, ``.`` -> ``_``, ``_`` -> ``__``, ``-`` -> ``___``."""
    return "KAFKA_" + prop.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def _pull(image: str, timeout_s: float) -> str | None:
    """None once ``image`` is present (pulled); otherwise why not, within ``timeout_s``."""
    failure: list[str] = []

    def pull() -> None:
        try:
            repo, tag = image.rsplit(":", 1)
            client(int(timeout_s)).images.pull(repo, tag=tag)
        except Exception as e:  # noqa: BLE001 - any failure is a reason to try the next image
            failure.append(one_line(e))

    t = threading.Thread(target=pull, name="docker-pull", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        return f"no pull within {timeout_s:.0f} s"
    return failure[0] if failure else None


def choose_image(libs_dir: Any = None) -> tuple[str, str]:
    """``(image, why)``: the official image when present or pulled, else the local build."""
    import docker
    try:
        c = client()
        try:
            c.images.get(IMAGE)
            return IMAGE, f"{IMAGE} is present"
        except docker.errors.ImageNotFound:
            pass
    except Exception as e:  # noqa: BLE001
        raise DockerUnusable(f"the Docker engine at {docker_host()} does not answer: {one_line(e)}") from None
    global _pull_failed
    why_not = _pull_failed or _pull(IMAGE, PULL_TIMEOUT_S)
    if why_not is None:
        return IMAGE, f"{IMAGE} pulled"
    _pull_failed = why_not  # once per process: a registry that hangs costs one wait, not one per start
    from ..containers.images import kafka_image
    from .provision import ensure_resolved
    try:
        tag = kafka_image(libs_dir or ensure_resolved(), KAFKA_VERSION, LOG4J2)
    except (EngineError, RealKafkaError) as e:
        raise DockerUnusable(f"{IMAGE} cannot be pulled ({why_not}) and no local image: {e}") from None
    return tag, f"{IMAGE} cannot be pulled ({why_not}): the project's own build"


class DockerKafka:
    backend = "docker"

    def __init__(self, settings: KafkaSettings | None = None, *, image: str | None = None,
                 verbose: bool = False) -> None:
        self.settings = settings or KafkaSettings()
        self.image = image
        self.why = "requested" if image else ""
        self.version = KAFKA_VERSION
        self.verbose = verbose
        self.container: Any = None
        self.host = HOST
        self.port = 0
        self.description = ""

    def container_env(self, port: int, controller_port: int) -> dict[str, str]:
        props = self.settings.server_properties(
            host=HOST, port=port, controller_host=HOST, controller_port=controller_port, log_dir=None)
        env = {env_name(k): v for k, v in props.items()}
        env["CLUSTER_ID"] = CLUSTER_ID
        env["KAFKA_HEAP_OPTS"] = f"-Xms{self.settings.heap_mb}m -Xmx{self.settings.heap_mb}m"
        return env

    @property
    def bootstrap(self) -> str:
        if self.container is None:
            raise RealKafkaError("the real Kafka container is not running")
        return f"{self.host}:{self.port}"

    def start(self) -> DockerKafka:
        use_own_reaper()
        from testcontainers.core.container import DockerContainer

        if self.image is None:
            self.image, self.why = choose_image()
        print(f"[realkafka] image {self.image} ({self.why})", file=sys.stderr, flush=True)
        self.port = self.settings.port or free_port()
        controller = self.settings.controller_port or free_port()
        c = DockerContainer(self.image, docker_client_kw={"timeout": REQUEST_TIMEOUT_S})
        for k, v in self.container_env(self.port, controller).items():
            c.with_env(k, v)
        c.with_kwargs(network_mode="host", labels=our_labels("kafka"))
        try:
            c.start()
        except Exception as e:  # noqa: BLE001 - the engine's refusal, in one line
            self._discard(c)
            raise DockerUnusable(f"cannot start the {self.image} container: {one_line(e)}") from None
        self.container = c
        self._wait()
        return self

    @staticmethod
    def _discard(c: Any) -> None:
        try:
            c.stop()
        except Exception:  # noqa: BLE001 - nothing was started, or the engine is gone
            pass

    def _died(self) -> str | None:
        try:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status in ("exited", "dead"):
                return f"the container {wrapped.short_id} is {wrapped.status}"
        except Exception as e:  # noqa: BLE001 - the engine died or lost the container
            return f"the container cannot be inspected: {one_line(e)}"
        return None

    def _wait(self) -> None:
        t0 = time.monotonic()
        try:
            self.description = wait_ready(self.bootstrap, self.settings.ready_timeout_s, alive=self._died)
        except (BrokerDied, NotReady) as e:
            logs = self.log_tail(20)
            self.stop()
            raise RealKafkaError(f"the {self.image} container did not become ready: {e}. "
                                 f"Last log lines:\n{logs}") from None
        if self.verbose:
            print(f"[realkafka] container ready in {time.monotonic() - t0:.1f} s at {self.bootstrap}",
                  file=sys.stderr, flush=True)

    def restart(self) -> None:
        wrapped = self.container.get_wrapped_container()
        wrapped.restart(timeout=int(self.settings.stop_timeout_s))
        time.sleep(0.5)
        self._wait()

    def log_tail(self, lines: int = 40) -> str:
        if self.container is None:
            return "(no container)"
        try:
            out, err = self.container.get_logs()
            return "\n".join((out + err).decode(errors="replace").splitlines()[-lines:])
        except Exception as e:  # noqa: BLE001
            return f"(logs unavailable: {one_line(e)})"

    def stop(self) -> None:
        c, self.container = self.container, None
        if c is None:
            return
        try:
            c.stop()
        except Exception as e:  # noqa: BLE001 - the engine went away; the exit clean-up retries
            print(f"[realkafka] could not remove the Kafka container: {one_line(e)}",
                  file=sys.stderr, flush=True)

    def __enter__(self) -> DockerKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
