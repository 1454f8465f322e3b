"""A real Apache Kafka broker as a local JVM process: single-node KRaft (broker and
controller in one process) on loopback, ephemeral ports, a throw-away directory.

    with LocalKafka(KafkaSettings()) as kafka:    # resolve (cached), format, start, probe
        kafka.bootstrap                           # "127.0.0.1:PORT"
        kafka.restart()                           # same data, same ports

The JVM runs in a process group of its own. It is ended (SIGTERM, SIGKILL after
``stop_timeout_s``) by ``stop()``, by the context manager, by a finalizer when the object is
collected, by an ``atexit`` hook, and, when started from the main thread, by the kernel if
this Python process dies without running any of those (``setpriv --pdeathsig KILL``).
Every JVM started here carries ``-Dconnect.conformance.realkafka=<its directory>`` so our
processes can be told apart from anyone else's (``our_java_processes()``).
"""

from __future__ import annotations

import atexit
import base64
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from .jvm import LOG4J2_BASE, kill_group, log_tail, spawn_in_group, stop_group
from .probe import BrokerDied, NotReady, wait_ready
from .provision import KAFKA_VERSION, RealKafkaError, ensure_resolved, find_java
from .settings import KafkaSettings

MARKER = "connect.conformance.realkafka"
HOST = "127.0.0.1"
FORMAT_TIMEOUT_S = 120.0
LOG_NAME = "kafka.log"
# The command-line the kafka-server-start script gives the JVM (KAFKA_JVM_PERFORMANCE_OPTS).
PERFORMANCE_OPTS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                    "-Djava.awt.headless=true")
LOG4J2 = LOG4J2_BASE + """\
logger.state.name = state.change.logger
logger.state.level = warn
logger.request.name = kafka.request.logger
logger.request.level = warn
"""


class PortInUse(RealKafkaError):
    pass


class BrokerNotReady(RealKafkaError):
    pass


class BrokerFailed(RealKafkaError):
    pass


class FormatFailed(BrokerFailed):
    """The storage format step failed (its whole output is in the message)."""


# ---------------------------------------------------------------------------- process hygiene

_LIVE: dict[int, str] = {}  # pid (= process group id) -> work directory
_LIVE_LOCK = threading.Lock()


def _reap(proc: subprocess.Popen[bytes], timeout_s: float) -> int | None:
    """``stop_group``, and the process is no longer ours to kill at exit."""
    try:
        return stop_group(proc, timeout_s)
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)


@atexit.register
def _kill_all_at_exit() -> None:
    with _LIVE_LOCK:
        pids = list(_LIVE)
    for pid in pids:
        kill_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    for pid in pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        kill_group(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def our_java_processes() -> list[tuple[int, str]]:
    """Live processes started by this module on this machine (any Python process's):
    ``(pid, work directory)``, found by the marker property on their command line."""
    found = []
    needle = f"-D{MARKER}=".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for arg in argv:
            if arg.startswith(needle) and _alive(int(entry.name)):
                found.append((int(entry.name), arg[len(needle):].decode(errors="replace")))
                break
    return found


# ---------------------------------------------------------------------------- ports


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_port_free(port: int, host: str = HOST, what: str = "port") -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise PortInUse(f"the real Kafka broker's {what} {host}:{port} is already in use "
                                f"(another broker or service listens there): choose another port "
                                f"in KafkaSettings, or 0 for a free one") from None
            raise


# ---------------------------------------------------------------------------- the broker


def new_cluster_id() -> str:
    """16 random bytes in URL-safe base64 without padding, as Kafka's ``Uuid.randomUuid``;
    like it, never starting with "-" (a command line would read that as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class LocalKafka:
    backend = "process"

    def __init__(self, settings: KafkaSettings | None = None, *, workdir: str | Path | None = None,
                 keep_workdir: bool = False, verbose: bool = False) -> None:
        self.settings = settings or KafkaSettings()
        self.version = KAFKA_VERSION
        self._given_workdir = Path(workdir) if workdir is not None else None
        self.workdir: Path | None = None
        self.keep_workdir = keep_workdir
        self.verbose = verbose
        self.port = 0
        self.controller_port = 0
        self.cluster_id = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.description = ""
        self._finalizer: weakref.finalize | None = None
        self.java = ""
        self.libs: Path | None = None

    # ------------------------------------------------------------------ public

    @property
    def bootstrap(self) -> str:
        if self.proc is None:
            raise RealKafkaError("the real Kafka broker is not running")
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self.workdir / LOG_NAME if self.workdir else None

    def start(self) -> LocalKafka:
        """Resolve (cached), format a fresh directory, start, wait until the group
        coordinator answers. On any failure nothing of ours is left running."""
        if self.proc is not None:
            raise RealKafkaError("already started")
        self.java = find_java().path
        self.libs = ensure_resolved(quiet=not self.verbose)
        s = self.settings
        if s.port:
            check_port_free(s.port, what="client port")
        if s.controller_port:
            check_port_free(s.controller_port, what="controller port")
        attempts = 1 if (s.port or s.controller_port) else 3  # retry only ports we picked
        for attempt in range(1, attempts + 1):
            self._prepare(fresh_ports=True)
            try:
                self._format()
                self._launch_and_wait()
                return self
            except PortInUse:
                self._discard_workdir(failed=False)
                if attempt == attempts:
                    raise
            except FormatFailed:
                self._discard_workdir(failed=False)  # nothing to read there: it is all in the message
                raise
            except BaseException:
                self._discard_workdir(failed=True)  # kept: the message points at its kafka.log
                raise
        raise AssertionError("unreachable")

    def restart(self) -> None:
        """A clean stop, then a start on the same directory and ports (no format)."""
        if self.proc is None or self.workdir is None:
            raise RealKafkaError("restart() needs a started broker")
        code = self._stop_process()
        if code not in (0, 143, -signal.SIGTERM):
            self._note(f"the broker exited with {code} on a clean stop")
        check_port_free(self.port, what="client port (after the stop)")
        self._launch_and_wait()

    def stop(self) -> None:
        if self.proc is not None:
            self._stop_process()
        self._discard_workdir(failed=False)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def __enter__(self) -> LocalKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"at {HOST}:{self.port}" if self.proc else "stopped"
        return f"<LocalKafka {self.version} {state}>"

    # ------------------------------------------------------------------ steps

    def _note(self, text: str) -> None:
        if self.verbose:
            print(f"[realkafka] {text}", file=sys.stderr, flush=True)

    def _prepare(self, fresh_ports: bool) -> None:
        s = self.settings
        if self._given_workdir is not None:
            self.workdir = self._given_workdir
            if self.workdir.exists() and any(self.workdir.iterdir()):
                raise RealKafkaError(f"the broker's directory {self.workdir} is not empty: give an "
                                     f"empty or new one (it is formatted as a fresh broker)")
            self.workdir.mkdir(parents=True, exist_ok=True)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="realkafka-"))
        self.port = s.port or free_port()
        self.controller_port = s.controller_port or free_port()
        while self.controller_port == self.port:
            self.controller_port = free_port()
        self.cluster_id = new_cluster_id()
        props = s.server_properties(host=HOST, port=self.port, controller_host=HOST,
                                    controller_port=self.controller_port,
                                    log_dir=str(self.workdir / "data"))
        (self.workdir / "server.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.properties").write_text(LOG4J2)

    def _classpath(self) -> str:
        assert self.libs is not None
        return str(self.libs / "*")

    def _jvm(self) -> list[str]:
        assert self.workdir is not None
        s = self.settings
        return [self.java, f"-Xms{s.heap_mb}m", f"-Xmx{s.heap_mb}m", *PERFORMANCE_OPTS,
                f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                f"-D{MARKER}={self.workdir}", *s.jvm_args, "-cp", self._classpath()]

    def _format(self) -> None:
        assert self.workdir is not None
        cmd = [*self._jvm(), "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
               "-c", str(self.workdir / "server.properties"), "--ignore-formatted"]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S,
                                 start_new_session=True)
        except subprocess.TimeoutExpired:
            raise FormatFailed(f"formatting the broker's storage did not finish within "
                               f"{FORMAT_TIMEOUT_S:.0f}s ({' '.join(cmd[-6:])})") from None
        (self.workdir / "format.log").write_text(res.stdout + res.stderr)
        if res.returncode != 0:
            raise FormatFailed(f"formatting the broker's storage failed (exit {res.returncode}): "
                               f"{(res.stderr or res.stdout).strip()[-1200:]}")

    def _launch_and_wait(self) -> None:
        assert self.workdir is not None
        cmd = [*self._jvm(), "kafka.Kafka", str(self.workdir / "server.properties")]
        try:
            self.proc = spawn_in_group(cmd, self.workdir / LOG_NAME)
        except OSError as e:
            raise BrokerFailed(f"cannot start the JVM ({self.java}): {e}") from None
        with _LIVE_LOCK:
            _LIVE[self.proc.pid] = str(self.workdir)
        proc = self.proc
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _reap, proc, 5.0)
        self._note(f"started Kafka {self.version} (pid {proc.pid}) at {HOST}:{self.port}, "
                   f"directory {self.workdir}")
        t0 = time.monotonic()
        try:
            self.description = wait_ready(f"{HOST}:{self.port}", self.settings.ready_timeout_s,
                                          alive=self._died)
        except BrokerDied as e:
            self._stop_process()
            tail = self.log_tail(25)
            if "Address already in use" in tail or "BindException" in tail:
                raise PortInUse(f"the real Kafka broker could not bind 127.0.0.1:{self.port} or "
                                f":{self.controller_port}: address already in use (another "
                                f"process took it). Choose other ports, or 0 for free ones.") from None
            raise BrokerFailed(f"the real Kafka broker exited before it was ready ({e}). "
                               f"Last lines of {self.log_path}:\n{tail}") from None
        except NotReady as e:
            self._stop_process()
            raise BrokerNotReady(
                f"the real Kafka broker at {HOST}:{self.port} did not become ready: {e}. It was "
                f"stopped. Raise KafkaSettings.ready_timeout_s on a slow machine, or read "
                f"{self.log_path}; last lines:\n{self.log_tail(15)}") from None
        except BaseException:
            self._stop_process()
            raise
        self._note(f"ready in {time.monotonic() - t0:.1f}s: {self.description}")

    def _died(self) -> str | None:
        assert self.proc is not None
        code = self.proc.poll()
        return None if code is None else f"the JVM exited with code {code}"

    def _stop_process(self) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        code = _reap(proc, self.settings.stop_timeout_s)
        self._note(f"stopped (pid {proc.pid}, exit {code})")
        return code

    def _discard_workdir(self, failed: bool) -> None:
        wd, self.workdir = self.workdir, None
        if wd is None:
            return
        if failed or self.keep_workdir:
            self.workdir = wd if failed else None  # keep it readable for the error's log path
            return
        shutil.rmtree(wd, ignore_errors=True)


def start_local(settings: KafkaSettings | None = None, **kw: Any) -> LocalKafka:
    return LocalKafka(settings, **kw).start()
