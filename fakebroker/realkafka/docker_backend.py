"""A real Apache Kafka broker in a container (testcontainers, the ``apache/kafka`` image),
chosen when a Docker engine answers.

testcontainers' own ``KafkaContainer`` scripts Confluent's ``cp-kafka`` image (its start-up
script calls ``/etc/confluent/docker/...``), so the Apache image is run as a generic
``DockerContainer`` configured the way that image documents: every server property as a
``KAFKA_*`` environment variable, ``CLUSTER_ID`` for the storage format. The client
listener is published on the same port number on the host, so the address the broker
advertises is the one a client on the host dials.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any
from urllib.parse import urlparse

from .launcher import free_port
from .probe import BrokerDied, NotReady, wait_ready
from .provision import KAFKA_VERSION, RealKafkaError
from .settings import KafkaSettings

IMAGE = f"apache/kafka:{KAFKA_VERSION}"
CONTROLLER_PORT = 9093
PING_TIMEOUT_S = 2.0


def env_name(prop: str) -> str:
    """The image's rule: upper case, ``.`` -> ``_``, ``_`` -> ``__``, ``-`` -> ``___``."""
    return "KAFKA_" + prop.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _ping_unix(path: str, timeout_s: float) -> str | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        try:
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            data = s.recv(256)
        except OSError as e:
            return f"{path}: {e.strerror or e}"
    if b" 200 " not in data.split(b"\r\n", 1)[0]:
        return f"{path}: unexpected answer {data[:60]!r}"
    return None


def docker_unavailable(timeout_s: float = PING_TIMEOUT_S) -> str | None:
    """None when a Docker engine answers a ping within ``timeout_s``; otherwise why not.
    Fast when there is no engine: a missing socket fails at once."""
    try:
        import testcontainers  # noqa: F401
    except ImportError:
        return "the Python package testcontainers is not installed"
    host = docker_host()
    url = urlparse(host)
    if url.scheme == "unix":
        return _ping_unix(url.path, timeout_s)
    try:  # tcp://, ssh://, ...: ask the Docker SDK, bounded
        import docker
        docker.DockerClient(base_url=host, timeout=int(max(timeout_s, 1))).ping()
    except Exception as e:  # noqa: BLE001 - any failure means "no engine"
        return f"{host}: {str(e).splitlines()[0][:200]}"
    return None


class DockerKafka:
    backend = "docker"

    def __init__(self, settings: KafkaSettings | None = None, *, image: str = IMAGE,
                 verbose: bool = False) -> None:
        self.settings = settings or KafkaSettings()
        self.image = image
        self.version = KAFKA_VERSION
        self.verbose = verbose
        self.container: Any = None
        self.host = "127.0.0.1"
        self.port = 0
        self.description = ""

    def container_env(self, host: str, port: int) -> dict[str, str]:
        props = self.settings.server_properties(
            host=host, port=port, controller_host="localhost", controller_port=CONTROLLER_PORT,
            log_dir=None, bind_host="0.0.0.0")
        props["controller.quorum.voters"] = f"1@localhost:{CONTROLLER_PORT}"
        env = {env_name(k): v for k, v in props.items()}
        env["CLUSTER_ID"] = "4L6g3nShT-eMCtK--X86sw"
        env["KAFKA_HEAP_OPTS"] = f"-Xms{self.settings.heap_mb}m -Xmx{self.settings.heap_mb}m"
        return env

    @property
    def bootstrap(self) -> str:
        if self.container is None:
            raise RealKafkaError("the real Kafka container is not running")
        return f"{self.host}:{self.port}"

    def start(self) -> DockerKafka:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.docker_client import DockerClient

        self.host = DockerClient().host()
        self.port = self.settings.port or free_port()
        c = DockerContainer(self.image)
        for k, v in self.container_env(self.host, self.port).items():
            c.with_env(k, v)
        c.with_bind_ports(self.port, self.port)
        try:
            c.start()
        except Exception as e:
            try:
                c.stop()
            except Exception:  # noqa: BLE001
                pass
            raise RealKafkaError(f"cannot start the {self.image} container: {e}. Check that the "
                                 f"image can be pulled, or run with REAL_KAFKA_BACKEND=process.") from None
        self.container = c
        self._wait()
        return self

    def _died(self) -> str | None:
        try:
            wrapped = self.container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status in ("exited", "dead"):
                return f"the container {wrapped.short_id} is {wrapped.status}"
        except Exception as e:  # noqa: BLE001
            return f"the container cannot be inspected: {e}"
        return None

    def _wait(self) -> None:
        try:
            self.description = wait_ready(self.bootstrap, self.settings.ready_timeout_s, alive=self._died)
        except (BrokerDied, NotReady) as e:
            logs = self.log_tail(20)
            self.stop()
            raise RealKafkaError(f"the {self.image} container did not become ready: {e}. "
                                 f"Last log lines:\n{logs}") from None

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
            return f"(logs unavailable: {e})"

    def stop(self) -> None:
        c, self.container = self.container, None
        if c is not None:
            c.stop()

    def __enter__(self) -> DockerKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
