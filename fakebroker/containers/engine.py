"""The Docker engine: is one answering (bounded, never a hang), a client with bounded
requests, and the project's labels and clean-up.

testcontainers' reaper (Ryuk) is an image it pulls before the first container; where no
registry answers that pull fails every start. ``use_own_reaper()`` turns it off with
testcontainers' own setting (``TESTCONTAINERS_RYUK_DISABLED``) and this module removes our
containers instead: each carries ``OWNER_LABEL=<pid>``; an ``atexit`` hook removes the
process's own, ``remove_ours()`` those whose process is gone (the engine wrapper's stop,
``cleanup``).
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
from typing import Any
from urllib.parse import urlparse

PING_TIMEOUT_S = 2.0
#: Every engine request is bounded: a daemon that dies or stalls mid-run is an error, not a hang.
REQUEST_TIMEOUT_S = 30
MANAGED_LABEL = "connect-conformance.managed"
OWNER_LABEL = "connect-conformance.owner"
INPUTS_LABEL = "connect-conformance.inputs"


class EngineError(Exception):
    """The engine cannot serve what was asked; the message is one line saying why."""


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
        return f"{host}: {one_line(e)}"
    return None


def one_line(e: BaseException) -> str:
    """The first line of an error; of the engine's (``500 Server Error for http+docker://...:
    Internal Server Error ("why")``) only the engine's why."""
    text = str(e).strip().splitlines()
    line = text[0] if text else type(e).__name__
    explanation = getattr(e, "explanation", None)
    if isinstance(explanation, str) and explanation.strip():
        line = explanation.strip().splitlines()[0]
    return line[:300]


def client(timeout_s: int = REQUEST_TIMEOUT_S) -> Any:
    """A Docker SDK client whose every request is bounded by ``timeout_s``."""
    import docker
    try:
        return docker.DockerClient(base_url=docker_host(), timeout=timeout_s)
    except Exception as e:  # noqa: BLE001
        raise EngineError(f"no Docker engine at {docker_host()}: {one_line(e)}") from None


def use_own_reaper() -> None:
    """Ryuk off (its image is a pull), whether or not testcontainers was imported already."""
    os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    from testcontainers.core.config import testcontainers_config
    testcontainers_config.ryuk_disabled = True


def our_labels(role: str) -> dict[str, str]:
    _register_exit_cleanup()
    return {MANAGED_LABEL: "true", OWNER_LABEL: str(os.getpid()), "connect-conformance.role": role}


def remove_ours(owner: int | None = None, timeout_s: int = 10) -> list[str]:
    """Remove (forcibly) our containers: ``owner``'s, or, without one, those whose owner is
    no longer a live process here (a crashed run's; a concurrent run's stay). Returns their
    short ids; an engine that does not answer removes nothing."""
    label = f"{OWNER_LABEL}={owner}" if owner is not None else f"{MANAGED_LABEL}=true"
    try:
        c = client(timeout_s)
        found = [x for x in c.containers.list(all=True, filters={"label": label})
                 if owner is not None or not _alive(x.labels.get(OWNER_LABEL, ""))]
        for container in found:
            container.remove(force=True, v=True)
        return [container.short_id for container in found]
    except Exception:  # noqa: BLE001 - at exit, nothing more to do
        return []


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_exit_lock = threading.Lock()
_exit_registered = False


def _register_exit_cleanup() -> None:
    global _exit_registered
    with _exit_lock:
        if not _exit_registered:
            pid = os.getpid()
            atexit.register(lambda: os.getpid() == pid and remove_ours(pid))
            _exit_registered = True
