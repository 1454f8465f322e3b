"""Apache Kafka Connect's distributed worker (``ConnectDistributed``) as a local JVM.

    worker = ConnectWorker(WorkerSettings(bootstrap=proxy.bootstrap, group="g",
                                          protocol="sessioned")).start()
    try:
        worker.rest_url   # http://127.0.0.1:PORT, answering
    finally:
        worker.stop()

``bootstrap`` is meant to be a fake broker in proxy mode (``FakeBroker(upstream=...)``): the
fake broker coordinates the worker's group, the real Kafka behind it holds the internal
topics (replication factor 1). The worker gets a generated ``worker.properties`` in its own
temporary directory (kept when it fails, for its ``worker.log``), short session/heartbeat
timeouts and a scheduled rebalance delay of a few seconds (``protocol`` or
``scheduled_rebalance_max_delay_ms`` None: not written, Connect's own default). ``start()`` returns once the REST
server answers; ``stop()`` sends SIGTERM, then SIGKILL, to the JVM's process group. With
``host`` (a ``WorkerHost``'s socket) the worker runs in that JVM instead of one of its own
(``fakebroker.realconnect.host``), started and stopped the same way.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..realkafka.jvm import LOG4J2_BASE, log_tail, spawn_in_group, stop_group
from ..realkafka.launcher import free_port
from ..realkafka.provision import RealKafkaError
from .connectors import ConnectorSpec, create_connectors
from ..jvm_fast_start import DUMP_STOP_TIMEOUT_S, FLAGS, ClassArchive, class_archive
from .host import HostedWorker
from .provision import ConnectBuild, connect_build, find_java

HOST = "127.0.0.1"
MARKER = "connect.conformance.realconnect"
PROTOCOLS = ("eager", "compatible", "sessioned")
LOG4J2 = LOG4J2_BASE + """\
logger.reflections.name = org.reflections
logger.reflections.level = error
"""
# The same for Connect before 4.0 (log4j 1 through reload4j; see provision).
LOG4J1 = """\
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.reflections=ERROR
"""


def config_topic(prefix: str) -> str:
    """The config topic of workers sharing ``prefix`` (``--topic-prefix``)."""
    return f"{prefix}-configs"


def work_topic(prefix: str) -> str:
    """The one topic the connectors of workers sharing ``prefix`` read or write."""
    return f"{prefix}-work"


def stdout_appending() -> None:
    """Standard output, when a file, written at its end: a JVM given it as its log writes it
    too, and neither may write over the other."""
    if stat.S_ISREG(os.fstat(1).st_mode):
        fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_APPEND)


class WorkerFailed(RealKafkaError):
    pass


@dataclass
class WorkerSettings:
    bootstrap: str
    group: str = "connect-cluster"
    protocol: str | None = "sessioned"  # connect.protocol: eager | compatible | sessioned (None: Connect's default)
    rest_port: int = 0  # 0: a free one
    topic_prefix: str | None = None  # internal topics: <prefix>-configs/-offsets/-status
    status_topic: str | None = None  # instead of <prefix>-status (e.g. one per group)
    scheduled_rebalance_max_delay_ms: int | None = 3000  # None: Connect's default (300000)
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    rebalance_timeout_ms: int = 20000
    client_id: str | None = None  # the group member's client.id (the harness knows it by this)
    log_file: str | None = None  # where the JVM writes its log (default: worker.log in its directory)
    heap_mb: int = 256
    fast_start: bool = True  # C1 only, serial GC, class-data archive (see fast_start)
    host: str | None = None  # a WorkerHost's socket: run there, not in a JVM of its own
    connect: str | None = None  # the Connect build: a version or a directory of jars (provision.connect_build)
    ready_timeout_s: float = 90.0
    stop_timeout_s: float = 15.0
    properties: dict[str, Any] = field(default_factory=dict)  # win over everything above

    def worker_properties(self, rest_port: int) -> dict[str, str]:
        if self.protocol is not None and self.protocol not in PROTOCOLS:
            raise ValueError(f"connect.protocol {self.protocol!r}: expected one of {PROTOCOLS}")
        prefix = self.topic_prefix or self.group
        props: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": self.heartbeat_interval_ms,
            "rebalance.timeout.ms": self.rebalance_timeout_ms,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "config.storage.topic": config_topic(prefix),
            "offset.storage.topic": f"{prefix}-offsets",
            "status.storage.topic": self.status_topic or f"{prefix}-status",
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.storage.partitions": 1,
            "status.storage.partitions": 1,
            "offset.flush.interval.ms": 1000,
            "listeners": f"http://{HOST}:{rest_port}",
            "rest.advertised.host.name": HOST,
            "rest.advertised.port": rest_port,
            "rest.advertised.listener": "http",
            # Plugins from their ServiceLoader manifests (Kafka's own all carry them) instead
            # of a reflective scan of every class on the class path: seconds per start.
            "plugin.discovery": "service_load",
        }
        # A setting left None is not written: the worker runs with Connect's own default.
        for key, value in (("connect.protocol", self.protocol),
                           ("scheduled.rebalance.max.delay.ms", self.scheduled_rebalance_max_delay_ms)):
            if value is not None:
                props[key] = value
        if self.client_id:
            props["client.id"] = self.client_id
        props.update(self.properties)
        return {k: str(v) for k, v in props.items()}


class ConnectWorker:
    def __init__(self, settings: WorkerSettings, *, verbose: bool = False) -> None:
        self.settings = settings
        self.verbose = verbose
        self.workdir: Path | None = None
        self.rest_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.hosted: HostedWorker | None = None  # with settings.host
        self._archive: ClassArchive | None = None  # set while this JVM builds the archive
        self._started = False  # its REST API answered

    @property
    def rest_url(self) -> str:
        return f"http://{HOST}:{self.rest_port}"

    @property
    def log_path(self) -> Path | None:
        if self.settings.log_file:
            return Path(self.settings.log_file)
        return self.workdir / "worker.log" if self.workdir else None

    def start(self) -> ConnectWorker:
        self.workdir = Path(tempfile.mkdtemp(prefix="realconnect-"))
        self.rest_port = self.settings.rest_port or free_port()
        props = self.settings.worker_properties(self.rest_port)
        (self.workdir / "worker.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        build = connect_build(self.settings.connect, quiet=not self.verbose)
        try:
            if self.settings.host is not None and not build.hostable:
                self._say(f"{build.not_hostable_reason}; not in the worker host at {self.settings.host}")
            if self.settings.host is not None and build.hostable:
                self.hosted = HostedWorker.start(self.settings.host, self.workdir / "worker.properties",
                                                 self._host_log_file(), self.settings.ready_timeout_s)
            else:
                self.proc = self._spawn(build)
            self._wait_rest()
            self._started = True
        except BaseException:
            self._kill()
            raise
        where = f"pid {self.proc.pid}" if self.proc else f"host {self.settings.host}"
        self._say(f"Connect {build.version} worker ({where}) REST at {self.rest_url}, directory {self.workdir}")
        return self

    def _say(self, line: str) -> None:
        if self.verbose:
            print(f"[realconnect] {line}", file=sys.stderr, flush=True)

    def _host_log_file(self) -> str:
        """Where the host writes this worker's log: this process's standard output is opened
        through /proc by the host (a file, a pipe or a terminal alike)."""
        log = self.log_path
        assert log is not None
        if str(log) != "/dev/stdout":
            return str(log)
        stdout_appending()
        return f"/proc/{os.getpid()}/fd/1"

    def _spawn(self, build: ConnectBuild) -> subprocess.Popen[bytes]:
        """The worker in a JVM of its own."""
        assert self.workdir is not None
        java = find_java().path
        libs = build.libs
        if build.log4j2:
            (self.workdir / "log4j2.properties").write_text(LOG4J2)
            logging = f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}"
        else:
            (self.workdir / "log4j.properties").write_text(LOG4J1)
            logging = f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}"
        jvm_opts: list[str] = []
        if self.settings.fast_start:
            archive = class_archive(build.home, java, libs)
            archive_opts, builds = archive.jvm_options()
            jvm_opts = [*FLAGS, *archive_opts]
            self._archive = archive if builds else None
        cmd = [java, f"-Xms{self.settings.heap_mb}m", f"-Xmx{self.settings.heap_mb}m", *jvm_opts,
               "-Djava.awt.headless=true",
               logging, f"-D{MARKER}={self.workdir}", "-cp", str(libs / "*"),
               "org.apache.kafka.connect.cli.ConnectDistributed",
               str(self.workdir / "worker.properties")]
        log = self.log_path
        assert log is not None
        return spawn_in_group(cmd, log)

    def _wait_rest(self) -> None:
        deadline = time.monotonic() + self.settings.ready_timeout_s
        last = ""
        while time.monotonic() < deadline:
            code = self.proc.poll() if self.proc else self.hosted.poll() if self.hosted else 1
            if code is not None:
                raise WorkerFailed(f"the Connect worker exited with {code} before its REST API "
                                   f"answered; last lines of {self.log_path}:\n{self.log_tail(25)}")
            try:
                info = self.get("/")
                if "version" in info:
                    return
            except (OSError, ValueError) as e:
                last = str(e)
            time.sleep(0.3)
        raise WorkerFailed(f"the Connect worker's REST API {self.rest_url} did not answer within "
                           f"{self.settings.ready_timeout_s:.0f}s ({last}); last lines of "
                           f"{self.log_path}:\n{self.log_tail(25)}")

    def get(self, path: str, timeout_s: float = 5.0) -> Any:
        with urllib.request.urlopen(self.rest_url + path, timeout=timeout_s) as r:
            return json.loads(r.read().decode())

    def request(self, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.rest_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                text = r.read().decode()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            return e.code, json.loads(text) if text.startswith("{") else text

    @property
    def work_topic(self) -> str:
        """The one topic this group's connectors read or write."""
        return work_topic(self.settings.topic_prefix or self.settings.group)

    def create_connectors(self, specs: list[ConnectorSpec], deadline_s: float,
                          log: Callable[[str], None],
                          stopped: Callable[[], bool] = lambda: False) -> list[str]:
        """Create ``specs`` through REST (see ``connectors``); the names not created."""
        return create_connectors(self.request, specs, self.work_topic, Path(tempfile.gettempdir()),
                                 deadline_s, log, stopped)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def _kill(self) -> int | None:
        proc, self.proc = self.proc, None
        hosted, self.hosted = self.hosted, None
        archive, self._archive = self._archive, None
        started, self._started = self._started, False
        code = None
        try:
            if hosted is not None:
                code = hosted.stop(self.settings.stop_timeout_s)
            if proc is not None:
                # A JVM writing the class archive at exit needs longer than a plain stop.
                code = stop_group(proc, max(self.settings.stop_timeout_s, DUMP_STOP_TIMEOUT_S)
                                  if archive else self.settings.stop_timeout_s)
        finally:
            if archive is not None:  # SIGTERM's exit is 143; SIGKILL's -9
                archive.finish(started and code is not None and code >= 0)
        return code

    def stop(self, keep_workdir: bool = False) -> None:
        self._kill()
        if self.workdir is not None and not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> ConnectWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(keep_workdir=exc[0] is not None)
