"""Many Connect workers in one JVM: ``host/WorkerHost.java``, and a worker's end of it.

A certification starts a worker per case. Each in a JVM of its own spends ~1.3 s of CPU
before it joins its group (classes, JIT, Jetty and Jersey set up cold); started in a JVM
that has run workers before, ~0.2 s. ``WorkerHost`` runs that JVM (``python -m
fakebroker.realconnect host --socket PATH``: a bundled target's ``host_command``, one per
test process); ``ConnectWorker`` with ``WorkerSettings.host`` asks it for its worker
(``start --host PATH``) instead of starting a JVM, over a connection of its own:

    START <properties file> <log file>  ->  STARTED | FAILED <reason>
    STOP                                ->  STOPPED
                                            EXITED <code>   (the worker called Exit.exit)

The worker is started as ``ConnectDistributed`` starts its own (``startConnect`` with the
same properties) and stopped as its shutdown hook stops it (``Connect.stop``), also when its
connection closes without STOP (its client killed). Its log lines go to its log file: every
thread it starts inherits its log4j ThreadContext, by which ``host/log4j2-host.xml`` routes
them. The class is compiled once per source and JVM into the cache beside the jars.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

from ..realkafka.jvm import spawn_in_group, stop_group
from ..realkafka.provision import RealKafkaError
from ..jvm_fast_start import DUMP_STOP_TIMEOUT_S, FLAGS, ClassArchive, class_archive
from .provision import ConnectBuild, connect_build, find_java

SOURCES = Path(__file__).resolve().parent / "host"
MAIN_CLASS = "WorkerHost"


class HostFailed(RealKafkaError):
    pass


def compiled_host(java: str, build: ConnectBuild) -> Path:
    """``WorkerHost``'s jar for this source and JVM, compiled into the cache the first time
    (into a temporary directory, renamed into place: test processes starting together each
    compile, one rename wins). A jar, not a class directory: a JVM dumps no class-data
    archive with a non-empty directory on its class path."""
    source = SOURCES / f"{MAIN_CLASS}.java"
    real_java = os.path.realpath(java)
    digest = hashlib.sha256(source.read_bytes() + f"\0{real_java}\0{os.stat(real_java).st_mtime_ns}".encode())
    libs = build.libs
    home = build.home / "host"
    target = home / digest.hexdigest()[:16]
    jar = target / "worker-host.jar"
    if jar.is_file():
        return jar
    javac = Path(real_java).parent / "javac"
    if not javac.is_file():
        raise HostFailed(f"no javac beside {real_java}: the worker host is compiled from {source} (a JDK is needed)")
    home.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="building-", dir=home))
    classes = building / "classes"
    r = subprocess.run([str(javac), "-nowarn", "-d", str(classes), "-cp", str(libs / "*"), str(source)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise HostFailed(f"javac {source} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    with zipfile.ZipFile(building / jar.name, "w") as z:
        for c in sorted(classes.glob("*.class")):
            z.write(c, c.name)
    shutil.rmtree(classes)
    try:
        os.rename(building, target)
    except OSError:  # another process's rename came first
        shutil.rmtree(building, ignore_errors=True)
    if not jar.is_file():
        raise HostFailed(f"{target} holds no {jar.name}: remove it to compile the worker host again")
    return jar


class WorkerHost:
    """The host JVM as a child process in a process group of its own, listening on ``socket_path``."""

    def __init__(self, socket_path: Path, log_file: str, *, heap_mb: int = 1024, connect: str | None = None,
                 ready_timeout_s: float = 90.0, stop_timeout_s: float = 30.0) -> None:
        self.socket_path = socket_path
        self.connect = connect  # the Connect build (provision.connect_build)
        self.log_file = log_file
        self.heap_mb = heap_mb
        self.ready_timeout_s = ready_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self._archive: ClassArchive | None = None  # set while this JVM builds the archive
        self._listening = False  # only a JVM that ran the host leaves an archive of its classes

    def start(self) -> WorkerHost:
        build = connect_build(self.connect)
        if not build.hostable:
            raise HostFailed(f"{build.not_hostable_reason}: run its workers without a host "
                             f"(a target without host_command and --host)")
        java = find_java().path
        libs = build.libs
        jar = compiled_host(java, build)
        class_path = f"{libs / '*'}:{jar}"
        archive = class_archive(build.home, java, libs, extra=str(jar))
        archive_opts, builds = archive.jvm_options()
        self._archive = archive if builds else None
        cmd = [java, "-Xms256m", f"-Xmx{self.heap_mb}m", *FLAGS, *archive_opts, "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={SOURCES / 'log4j2-host.xml'}",
               # Threads inherit their creator's ThreadContext: a worker's are known as its.
               "-Dlog4j2.isThreadContextMapInheritable=true",
               "-cp", class_path, MAIN_CLASS, str(self.socket_path)]
        self.proc = spawn_in_group(cmd, Path(self.log_file))
        try:
            wait_listening(self.proc, str(self.socket_path), self.ready_timeout_s)
            self._listening = True
        except HostFailed as e:
            self.stop()
            raise HostFailed(f"the worker host JVM {e}") from None
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        archive, self._archive = self._archive, None
        listening, self._listening = self._listening, False
        ran = self.ran_marker.exists()
        code = None
        try:
            if proc is not None:  # SIGTERM: its shutdown hooks stop the workers still running
                code = stop_group(proc, max(self.stop_timeout_s, DUMP_STOP_TIMEOUT_S) if archive
                                  else self.stop_timeout_s)
        finally:
            if archive is not None:  # SIGTERM's exit is 143; SIGKILL's -9
                archive.finish(listening and ran and code is not None and code >= 0)
            self.socket_path.unlink(missing_ok=True)
            self.ran_marker.unlink(missing_ok=True)

    @property
    def ran_marker(self) -> Path:
        """Made by the host once it started a worker: only then does its class archive hold a
        worker's classes, worth keeping."""
        return self.socket_path.with_name(self.socket_path.name + ".ran")


def wait_listening(proc: subprocess.Popen[bytes], socket_path: str, timeout_s: float) -> None:
    """Until ``proc`` listens on the Unix socket; HostFailed if it exits first or not within
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HostFailed(f"exited ({proc.returncode}) before listening on {socket_path}")
        if listening(socket_path):
            return
        time.sleep(0.1)  # a JVM starting on real time; the bound is the deadline
    raise HostFailed(f"did not listen on {socket_path} within {timeout_s:.0f}s")


def listening(socket_path: str) -> bool:
    """Whether something accepts connections on the Unix socket (a connection closed at
    once, before a word: a worker host takes it for a probe)."""
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(socket_path)
            return True
        except OSError:
            return False


class HostedWorker:
    """A worker's connection to its host: the worker runs while it is open."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.code: int | None = None  # once the worker ended (EXITED, or the host went away)
        self._buffer = b""

    @classmethod
    def start(cls, socket_path: str, properties: Path, log_file: str, timeout_s: float) -> HostedWorker:
        conn = socket.socket(socket.AF_UNIX)
        try:
            conn.settimeout(timeout_s)
            conn.connect(socket_path)
            conn.sendall(f"START {properties} {log_file}\n".encode())
            worker = cls(conn)
            answer = worker._line()
        except OSError as e:
            conn.close()
            raise HostFailed(f"the worker host at {socket_path}: {e}") from None
        if answer != "STARTED":
            conn.close()
            raise HostFailed(f"the worker host at {socket_path} did not start the worker: {answer or 'no answer'}")
        return worker

    def _line(self) -> str | None:
        """The host's next line; None once it closed the connection."""
        while b"\n" not in self._buffer:
            chunk = self.conn.recv(4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def poll(self) -> int | None:
        """The worker's exit code once it ended by itself, else None (does not wait)."""
        if self.code is None:
            self.conn.setblocking(False)
            try:
                self._ended(self._line())
            except BlockingIOError:
                pass
            except OSError:
                self.code = 1
        return self.code

    def _ended(self, line: str | None) -> None:
        if line is None:
            self.code = 1  # the host went away
        elif line.startswith("EXITED "):
            self.code = int(line.split()[1])

    def stop(self, timeout_s: float) -> int | None:
        """Stop the worker and wait up to ``timeout_s`` until it has; its exit code (0 for a
        stop, as the worker's JVM exits on SIGTERM; None if the host did not answer)."""
        try:
            if self.code is None:
                self.conn.settimeout(timeout_s)
                self.conn.sendall(b"STOP\n")
                while self.code is None:
                    line = self._line()
                    if line == "STOPPED":
                        self.code = 0
                    else:
                        self._ended(line)
            return self.code
        except OSError:
            return self.code
        finally:
            self.conn.close()
