"""The fake broker as a testcontainers module, for Python users' own tests.

    from fakebroker.containers.fakebroker_container import FakeBrokerContainer

    with FakeBrokerContainer(topics=["events:3"], record_dir=tmp_path) as broker:
        client = MyClient(bootstrap=broker.get_bootstrap_server())
    # tmp_path now holds the run's transcript (fakebroker replay / pcap read it)

The image is ``connect-conformance/fakebroker:local`` (``python -m fakebroker.containers
fakebroker-image`` builds it from a checkout) or any image of the project's Dockerfile. Files
the broker reads (a fault plan, TLS certificate and key, SASL users, ACLs) are mounted read-only;
the record directory read-write, and the broker runs as the calling user so the transcripts
on the host are that user's. Ready means the image's HEALTHCHECK passed: the broker answers
ApiVersions.

The broker listens on one port number inside and outside the container, so the address it
advertises is the one a client dials: with ``host_network`` (the default; engines without a
bridge need it) it binds 127.0.0.1 on the host's network; without, it binds 0.0.0.0 in the
container and the port is published on the host's 127.0.0.1 only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testcontainers.core.container import DockerContainer

from .engine import REQUEST_TIMEOUT_S, EngineError, one_line, our_labels, use_own_reaper
from .images import FAKEBROKER_IMAGE

HOST = "127.0.0.1"
CONFIG_DIR = "/config"
RECORD_DIR = "/records"
STOP_TIMEOUT_S = 10


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class FakeBrokerContainer(DockerContainer):  # type: ignore[misc]
    def __init__(self, image: str = FAKEBROKER_IMAGE, *, port: int = 0, topics: Sequence[str] = (),
                 faults: Path | None = None, record_dir: Path | None = None,
                 tls_cert: Path | None = None, tls_key: Path | None = None,
                 sasl_mechanisms: Sequence[str] = (), sasl_users: Path | None = None,
                 acls: Path | None = None, args: Sequence[str] = (), host_network: bool = True,
                 ready_timeout_s: float = 60.0, **kwargs: Any) -> None:
        use_own_reaper()
        super().__init__(image, docker_client_kw={"timeout": REQUEST_TIMEOUT_S}, **kwargs)
        self.port = port or _free_port()
        self.ready_timeout_s = ready_timeout_s
        self.host_network = host_network
        argv: list[str] = []
        for t in topics:
            argv += ["--topic", t]
        for option, path in (("--faults", faults), ("--tls-cert", tls_cert), ("--tls-key", tls_key),
                             ("--sasl-users", sasl_users), ("--acls", acls)):
            if path is not None:
                inside = f"{CONFIG_DIR}/{option.lstrip('-')}-{Path(path).name}"
                self.with_volume_mapping(str(Path(path).resolve()), inside, "ro")
                argv += [option, inside]
        for m in sasl_mechanisms:
            argv += ["--sasl-mechanism", m]
        if record_dir is not None:
            self.with_volume_mapping(str(Path(record_dir).resolve()), RECORD_DIR, "rw")
            argv += ["--record", RECORD_DIR]
        self.with_command([*argv, *args])
        self.with_env("FAKEBROKER_PORT", str(self.port))
        self.with_env("FAKEBROKER_ADVERTISED_HOST", HOST)
        run: dict[str, Any] = {"labels": our_labels("fakebroker"), "user": f"{os.getuid()}:{os.getgid()}"}
        if host_network:
            self.with_env("FAKEBROKER_HOST", HOST)
            run["network_mode"] = "host"
        else:
            self.with_env("FAKEBROKER_HOST", "0.0.0.0")
            self.with_bind_ports(self.port, (HOST, self.port))
        self.with_kwargs(**run)

    def get_bootstrap_server(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self) -> FakeBrokerContainer:
        try:
            super().start()
        except Exception as e:  # noqa: BLE001 - the engine's refusal, in one line
            self._remove_quietly()
            raise EngineError(f"cannot start the {self.image} container: {one_line(e)}") from None
        self._wait_healthy()
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """SIGTERM first (the broker closes its transcript), then the removal."""
        try:
            self.get_wrapped_container().stop(timeout=STOP_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - not started, or the engine is gone: removal says
            pass
        super().stop(force=force, delete_volume=delete_volume)

    def health(self) -> str:
        """The engine's health status of the container ("starting", "healthy", ...)."""
        wrapped = self.get_wrapped_container()
        wrapped.reload()
        if wrapped.status in ("exited", "dead"):
            return wrapped.status
        return str(wrapped.attrs.get("State", {}).get("Health", {}).get("Status", "none"))

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        status = "starting"
        while time.monotonic() < deadline:
            try:
                status = self.health()
            except Exception as e:  # noqa: BLE001 - the engine died mid-run
                status = f"not inspectable ({one_line(e)})"
                break
            if status in ("healthy", "unhealthy", "exited", "dead", "none"):
                break
            time.sleep(0.25)
        if status != "healthy":
            logs = self._logs_tail()
            self._remove_quietly()
            raise EngineError(f"the fake broker container is {status} after {self.ready_timeout_s:.0f} s "
                              f"at most: {logs}")

    def _logs_tail(self) -> str:
        try:
            out, err = self.get_logs()
            lines = (out + err).decode(errors="replace").strip().splitlines()
            return lines[-1] if lines else "(no output)"
        except Exception as e:  # noqa: BLE001
            return f"(logs unavailable: {one_line(e)})"

    def _remove_quietly(self) -> None:
        try:
            super().stop()
        except Exception:  # noqa: BLE001 - the exit clean-up removes what is left
            pass
