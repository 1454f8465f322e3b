"""The worker harness: the worker suite's context (``WorkerContext``, a sibling of the
coordinator suite's), the fake broker as coordinator (recording every exchange), the worker
under test started from the target's command template, and scripted peers.

    async def case(ctx: WorkerContext) -> None:
        w = await ctx.start_worker()
        join = await ctx.next_request(w, "JoinGroup")        # what the worker sends next
        peer = await ctx.member("peer")                       # a scripted member in its group

Time is real here (the worker is a real process); every wait is bounded and scaled by the
target's ``wait_scale``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.realconnect.connectors import parse_connectors
from fakebroker.intercept.hooks import Call, Close, Gate, Hold, Respond
from fakebroker.script.recorder import Recorder
from fakebroker.exchange.pairing import OpenRequests
from fakebroker.exchange.transcript import Event
from fakebroker.server.acl import AclRule, Acls, Operation, ResourceType
from fakebroker.server.authorize import Authorizer
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import RealClock
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread

from ..catalogue.requirements import Requirement
from .command import base_dir, child_env
from .clock import RealCaseClock
from fakebroker.connect.embedded import connect_protocols
from .context import CaseContext
from .outcomes import Broken, NotApplicable, Violation
from ..invariants.report import findings
from fakebroker.exchange.fields import exchange_fields
from .shared_kafka import TOPIC_PREFIX, prefix_of, real_kafka_for
from .target import Target
from .worker_host import WorkerHostProcess, start_worker_host


@dataclass
class Seen:
    """One request a client sent the coordinator (recorded on arrival), and its answer once
    given (a JoinGroup may be parked for a while)."""

    index: int
    connection: int
    client_id: str
    api: str
    version: int
    request: Any
    t_request: float                 # monotonic seconds
    response: Any = None
    t_response: float | None = None

    @property
    def answered(self) -> bool:
        return self.response is not None

    @property
    def ok(self) -> bool:
        return self.response is not None and self.response.error_code == 0


# FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup: what a case's transcript shows
# of the worker under test (in proxy mode everything else is the real Kafka's business).
GROUP_API_KEYS = frozenset({10, 11, 12, 13, 14})
# Everyone may do everything, but a refused group (``RecordingBroker.refuse_group``): a DENY
# on it wins over these, as in Kafka's authorizer.
_ALLOW_ALL = tuple(AclRule(True, "User:*", Operation.ALL, r, "*") for r in ResourceType)


class RecordingBroker(FakeBroker):
    """The fake broker, keeping every request it answered (thread-safe reads) and a
    recording of the group APIs' frames (``group_frames``) for the cases' transcripts.
    Both observe through hooks and a recorder; ``forge`` adds a one-shot hook that answers."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._seen_of: OpenRequests[Seen] = OpenRequests()
        self.refused: set[str] = set()
        # First of all hooks: a forged answer (a later hook) is seen like any other.
        self.hooks.add(self._see_request, keep=True, name="seen")
        self.hooks.add(self._see_response, side="response", keep=True, name="seen")
        self.group_frames: Recorder = self.record(Recorder(api_keys=GROUP_API_KEYS))

    def _see_request(self, call: Call) -> None:
        with self._lock:
            seen = Seen(len(self.seen), int(call.conn), call.client_id or "", call.api,
                        call.version, call.request, time.monotonic())
            self.seen.append(seen)
            self._seen_of.sent(call.conn, call.correlation_id, seen)

    def _see_response(self, call: Call) -> None:
        with self._lock:
            seen = self._seen_of.answer(call.conn, call.correlation_id)
            if seen is not None:
                seen.response, seen.t_response = call.response, time.monotonic()

    def frame_mark(self) -> int:
        return len(self.group_frames.events)

    def frames_of(self, clients: set[str], since: int = 0) -> list[tuple[str, Event]]:
        """The group frames since ``since`` of ``clients``, each with its client id; a
        response comes with its request (it answers one of the same connection)."""
        events = self.group_frames.events[:]  # the broker's thread appends; a copy is stable
        client_of: OpenRequests[str] = OpenRequests()
        out = []
        for ev in events[since:]:
            if ev.kind == "request" and (ev.client_id or "") in clients:
                client_of.sent(ev.conn, ev.correlation_id, ev.client_id or "")
                out.append((ev.client_id or "", ev))
            elif ev.kind == "response" and (client := client_of.answer(ev.conn, ev.correlation_id)) is not None:
                out.append((client, ev))
        return out

    def forge(self, client_id: str, api: str, answer: Any, where: Any = None) -> None:
        """Answer the next ``api`` request of ``client_id`` (matching ``where``) with
        ``answer(request)`` instead of the coordinator's (the coordinator never sees it)."""
        def forged(call: Call) -> Respond | None:
            if call.client_id == client_id and (where is None or where(call.request)):
                return Respond(answer(call.request))
            return None
        self.hooks.add(forged, api=api, name=f"forge:{client_id}:{api}")

    def sync_after_peers(self, worker_id: str, peers: set[str], timeout_ms: int = 5000) -> None:
        """Hold the worker's next SyncGroup until each of ``peers`` has sent its own (at most
        ``timeout_ms``), for set-up rounds whose scripted peers sync right after their join
        answer: a worker may rejoin as soon as its sync is answered (KIP-415's follow-up
        round), and on a loaded machine the harness (sharing the GIL with this broker) can
        lag the worker's process, so the peers' SyncGroups would meet the next round
        (REBALANCE_IN_PROGRESS) and the round the case set up would be lost."""
        if not peers:
            return
        gate = Gate(f"peers-synced:{worker_id}")
        waiting, lock = set(peers), threading.Lock()

        def peer_synced(call: Call) -> None:
            with lock:
                waiting.discard(call.client_id or "")
                if not waiting:
                    gate.open()
                    self.hooks.remove(observer)

        def hold(call: Call) -> Hold | None:
            return Hold(gate, timeout_ms=timeout_ms) if call.client_id == worker_id else None
        observer = self.hooks.add(peer_synced, api="SyncGroup", keep=True, name="peers-synced")
        self.hooks.add(hold, api="SyncGroup", name=f"hold-sync:{worker_id}")

    def cut_off(self, client_id: str) -> Any:
        """From now on a connection of ``client_id`` is closed, unanswered, on its next group
        request (FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup; the coordinator
        never sees it): a worker's group member cut off from its coordinator. Its other
        requests pass: Connect before 3.x gives its config and status topics' clients the
        same client.id, and its status (the REST evidence) must still be written and read.
        Returns the hook; ``hooks.remove`` it to let the client back."""
        def close(call: Call) -> Close | None:
            return Close() if call.client_id == client_id else None
        return self.hooks.add(close, api=GROUP_API_KEYS, keep=True, name=f"cut-off:{client_id}")

    def refuse_group(self, group: str, refused: bool = True) -> None:
        """From now on (until called with ``refused=False``) ACLs deny every operation on
        ``group`` to everyone: its requests get Kafka's GROUP_AUTHORIZATION_FAILED answers;
        other groups, topics and the cluster stay open (no authorizer once none is refused)."""
        with self._lock:
            (self.refused.add if refused else self.refused.discard)(group)
            denies = tuple(AclRule(False, "User:*", Operation.ALL, ResourceType.GROUP, g)
                           for g in sorted(self.refused))
            # One reference swap: the broker's thread reads it per request.
            self.authorizer = (Authorizer(Acls(_ALLOW_ALL + denies), self.registry, self.config)
                               if denies else None)

    def snapshot(self, since: int = 0) -> list[Seen]:
        """The exchanges seen from index ``since`` on (a case polls its own, 50 times a
        second: not the whole run's, copied each time)."""
        with self._lock:
            return self.seen[since:]


def exchange_rows(seen: list[Seen], source: str) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The case's group exchanges as the exchanges table's rows (``fakebroker.exchange.fields``
    reads Connect's embedded bytes, as the audit does), refs in arrival order of requests and
    answers alike; and, per ref, the exchange as a person finds it in the case's transcript."""
    events = sorted([(s.t_request, 0, s) for s in seen] + [(s.t_response, 1, s) for s in seen if s.answered],
                    key=lambda e: (e[0], e[1], e[2].index))
    ref: dict[tuple[int, int], int] = {(s.index, kind): n for n, (_, kind, s) in enumerate(events, 1)}
    rows, where = [], {}
    for s in seen:
        if s.api not in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "ConnectGroupHeartbeat"):
            continue
        req, resp = s.request.to_json(), s.response.to_json() if s.answered else None
        row = {"source": source, "source_kind": "case", "ref": ref[s.index, 0],
               "resp_ref": ref.get((s.index, 1)), "req_time": s.t_request, "resp_time": s.t_response,
               "api": s.api, "client_id": s.client_id, **exchange_fields(s.api, req, resp)}
        rows.append(row)
        what = f"{s.client_id} {s.api} v{s.version} (request #{s.index - seen[0].index + 1} of the case)"
        where[row["ref"]] = where[row["resp_ref"]] = what
    return rows, where


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class WorkerProcess:
    worker_id: str
    group: str
    command: str
    proc: subprocess.Popen[bytes]
    log_path: str
    rest_port: int = 0
    started: float = field(default_factory=time.monotonic)
    first_request: float | None = None  # when the coordinator saw its first request (WorkerContext)

    def log_tail(self, n: int = 40) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_line(self, pattern: re.Pattern[str]) -> str | None:
        """The first line of the worker's whole log that ``pattern`` finds (a JVM may log
        hundreds of shutdown lines after the one that matters), or None."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return next((line.strip() for line in f if pattern.search(line)), None)
        except OSError:
            return None

    def terminate(self, timeout_s: float = 15.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def spawn_worker(target: Target, bootstrap: str, group: str, worker_id: str | None = None, *,
                 topic_prefix: str = TOPIC_PREFIX, worker_host: str = "", connect_protocol: str | None = None,
                 scheduled_rebalance_delay_ms: int | None = None,
                 unset: frozenset[str] = frozenset()) -> WorkerProcess:
    """One worker process from the target's command template, its output in a log file;
    the settings of the placeholders in ``unset`` are left to the worker's own default."""
    t = target.timing
    wid = worker_id or f"w-{uuid.uuid4().hex[:6]}"
    rest_port = free_port()
    values = dict(bootstrap=bootstrap, group=group, worker_id=wid, rest_port=rest_port,
                  python=shlex.quote(sys.executable), topic_prefix=topic_prefix, worker_host=worker_host,
                  connect_protocol=connect_protocol or target.connect_protocol,
                  session_timeout_ms=t.session_timeout_ms, rebalance_timeout_ms=t.rebalance_timeout_ms,
                  heartbeat_interval_ms=t.heartbeat_interval_ms,
                  scheduled_rebalance_delay_ms=(t.scheduled_rebalance_delay_ms
                                                if scheduled_rebalance_delay_ms is None
                                                else scheduled_rebalance_delay_ms))
    command = target.render_command(unset=unset, **values)
    fd, log_path = tempfile.mkstemp(prefix=f"conformance-{wid}-", suffix=".log")
    os.close(fd)
    try:
        # Appending: a worker may hand its output file to a child (a JVM) writing it too.
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(shlex.split(command), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=base_dir(target),
                                    env=child_env({"PYTHONUNBUFFERED": "1"}))
    except OSError as e:
        raise Broken(f"cannot start the worker with {command!r}: {e}") from None
    return WorkerProcess(wid, group, command, proc, log_path, rest_port=rest_port)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def stop_and_remove(w: WorkerProcess, timeout_s: float = 15.0) -> None:
    """Stop ``w`` (SIGTERM, SIGKILL after ``timeout_s``) and remove its log."""
    w.terminate(timeout_s)
    _remove(w.log_path)


def rest_get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.loads(r.read().decode())


# Generous: the first Apache Connect worker writes its class archive as it stops
# (fakebroker.jvm_fast_start); killed meanwhile, the next one writes it.
SEED_STOP_TIMEOUT_S = 120.0


def seed_work(target: Target, bootstrap: str, topic_prefix: str = TOPIC_PREFIX, attempts: int = 3,
              stop_later: Callable[[WorkerProcess, float], None] | None = None, worker_host: str = "") -> None:
    """Connectors in place before any case runs, for a worker with a REST API whose internal
    topics every case shares (its command fixes them). Every case's worker then starts with
    the same work in the config topic, at the same config offset, as a worker joining a
    running cluster does. A target's ``seed_command`` writes it (run to its exit); without
    one, one worker of the target's command, alone in a group of its own, creates the
    connectors its command names through REST and is stopped once its REST API lists every
    one with its tasks. A seeding worker that exits is started again (its REST port, picked
    free, may have been taken meanwhile), up to ``attempts`` times. ``stop_later``: the
    seeding worker's stop need not be waited for (a target with overlap_stops); ``worker_host``:
    the target's host's socket (host_command)."""
    if target.seed_command is not None:
        run_seed_command(target, bootstrap, topic_prefix)
        return
    stop = stop_later or stop_and_remove
    for _ in range(attempts):
        w = spawn_worker(target, bootstrap, f"conformance-seed-{uuid.uuid4().hex[:6]}", "seed",
                         topic_prefix=topic_prefix, worker_host=worker_host)
        try:
            listed = _wait_for_work(target, w)
        except BaseException:
            stop_and_remove(w, SEED_STOP_TIMEOUT_S)
            raise
        if listed:
            stop(w, SEED_STOP_TIMEOUT_S)
            return
        tail = w.log_tail()
        stop_and_remove(w, SEED_STOP_TIMEOUT_S)
    raise RuntimeError(f"the seeding worker exited ({w.proc.returncode}), {attempts} times; last log:\n{tail}")


def run_seed_command(target: Target, bootstrap: str, topic_prefix: str) -> None:
    """The target's ``seed_command``, to its exit within the start-up bound; a failure names
    the command and its output."""
    command = target.render_seed_command(bootstrap=bootstrap, topic_prefix=topic_prefix,
                                         python=shlex.quote(sys.executable),
                                         connect_protocol=target.connect_protocol)
    bound = target.timing.startup_timeout_s * target.timing.wait_scale
    try:
        r = subprocess.run(shlex.split(command), stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=bound, cwd=base_dir(target), env=child_env())
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the seed command {command!r} did not finish within {bound:.0f}s") from None
    except OSError as e:
        raise RuntimeError(f"cannot run the seed command {command!r}: {e}") from None
    if r.returncode != 0:
        raise RuntimeError(f"the seed command {command!r} exited {r.returncode}:\n{r.stdout}{r.stderr}")


CONNECTORS_OPTION = re.compile(r"--connectors[ =](\S+)")


def expected_work(command: str) -> dict[str, int]:
    """The connectors a worker's command creates, by name with their task counts: its
    ``--connectors NAME:TASKS,...`` (fakebroker.realconnect's option); none if it has none."""
    m = CONNECTORS_OPTION.search(command)
    return {c.name: c.tasks for c in parse_connectors(m.group(1))} if m else {}


def work_listed(listing: Any, expected: dict[str, int]) -> bool:
    """Whether ``GET /connectors?expand=status`` lists every connector with its tasks: each
    of ``expected`` with that many (the command creates them one after another, so one
    listed with its tasks says nothing of the next), else every listed one with some."""
    if not isinstance(listing, dict) or not listing:
        return False
    if expected:
        return all(name in listing and len(listing[name]["status"]["tasks"]) >= tasks
                   for name, tasks in expected.items())
    return all(c["status"]["tasks"] for c in listing.values())


def _wait_for_work(target: Target, w: WorkerProcess) -> bool:
    """True once ``w`` lists every connector with its tasks; False if it exited first."""
    deadline = time.monotonic() + 2 * target.timing.startup_timeout_s
    expected = expected_work(w.command)
    last: Any = None
    while time.monotonic() < deadline:
        if not w.alive():
            return False
        try:
            last = rest_get(w.rest_port, "/connectors?expand=status")
        except (OSError, ValueError) as e:
            last = str(e)
        if work_listed(last, expected):
            return True
        time.sleep(0.5)  # a real JVM on real time; the bound is the deadline
    raise RuntimeError(f"the seeding worker did not list its connectors with their tasks within "
                       f"{2 * target.timing.startup_timeout_s:.0f}s (last answer: {last}); "
                       f"log:\n{w.log_tail()}")


@dataclass
class WorkerSession:
    """One recording fake broker per test process; each case gets its own group. A target
    with ``upstream = "real-kafka"`` also gets a real Kafka (the run's, shared by its test
    processes, or one of this process's own: ``shared_kafka``), which the fake broker
    fronts in proxy mode (group APIs coordinated and recorded here, the rest forwarded)."""

    target: Target
    broker: BrokerThread | None = None
    version: str = "unknown"
    kafka: Any = None  # fakebroker.realkafka.RealKafka when the target asks for one
    topic_prefix: str = TOPIC_PREFIX  # this process's internal topics ({topic_prefix})
    stopping: list[threading.Thread] = field(default_factory=list)  # stop_later's, shared by copies
    host: WorkerHostProcess | None = None  # the target's host_command, running its workers

    @property
    def worker_host(self) -> str:
        """{worker_host}: the host's socket ('' without a host_command)."""
        return self.host.socket_path if self.host else ""

    @classmethod
    def start(cls, target: Target, workerinput: dict[str, Any] | None = None) -> WorkerSession:
        """``workerinput``: pytest-xdist's for this process (its id names its internal
        topics; a shared real Kafka, see shared_kafka)."""
        kafka = real_kafka_for(target, workerinput) if target.upstream == "real-kafka" else None
        session = cls(target, None, target.implementation_version, kafka,
                      prefix_of((workerinput or {}).get("workerid")))
        try:
            broker = RecordingBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0,
                                                                       min_session_timeout_ms=1000,
                                                                       connect_heartbeat_interval_ms=500,
                                                                       connect_session_timeout_ms=6000),
                                     RealClock(), upstream=kafka.bootstrap if kafka else None)
            session.broker = BrokerThread(broker).start()
            if target.host_command is not None:
                session.host = start_worker_host(target)
            if kafka is not None and "rest" in target.capabilities:
                seed_work(target, session.broker.bootstrap, session.topic_prefix,
                          stop_later=session.stop_later if target.overlap_stops else None,
                          worker_host=session.worker_host)
        except BaseException:
            session.stop()
            raise
        return session

    def stop_later(self, w: WorkerProcess, timeout_s: float = 15.0) -> None:
        """Stop ``w`` on a thread of its own (SIGTERM now, SIGKILL after ``timeout_s``), then
        remove its log; ``stop`` waits for every such stop."""
        thread = threading.Thread(target=stop_and_remove, args=(w, timeout_s), name=f"stop {w.worker_id}",
                                  daemon=True)
        thread.start()
        self.stopping.append(thread)

    def stop(self) -> None:
        for thread in self.stopping:
            thread.join()
        if self.host is not None:  # after its workers: each stops its own first
            self.host.stop()
        if self.broker is not None:
            self.broker.stop()
        if self.kafka is not None:
            self.kafka.stop()

    def context(self, requirement: Requirement, recording: Recorder) -> WorkerContext:
        assert self.broker is not None
        clock = RealCaseClock(self.target.timing.wait_scale)
        return WorkerContext(self.target, requirement, self.broker.bootstrap, clock, recording, self.broker,
                             self.topic_prefix, self.stop_later, self.worker_host)


class WorkerContext(CaseContext):
    def __init__(self, target: Target, requirement: Requirement, bootstrap: str, clock: RealCaseClock,
                 recording: Recorder, broker: BrokerThread, topic_prefix: str = TOPIC_PREFIX,
                 stop_later: Callable[[WorkerProcess], None] | None = None, worker_host: str = "") -> None:
        super().__init__(target, requirement, bootstrap, clock, recording)
        self.broker_thread = broker
        self.topic_prefix = topic_prefix
        self.worker_host = worker_host  # {worker_host}: the session's
        self.stop_later = stop_later  # the session's, for a target with overlap_stops
        self.recorder: RecordingBroker = broker.broker  # type: ignore[assignment]
        self.workers: list[WorkerProcess] = []
        self.first_seen = len(self.recorder.snapshot())
        self.first_frame = self.recorder.frame_mark()
        self.initial_delay_ms = 0
        self.attachments: dict[str, str] = {}
        self.invariants: dict[str, dict[str, Any]] = {}  # set by close(): conformance.invariants.report
        self.refusing = False
        # worker id -> (connector, task or -1) -> (state, worker_id) at its last REST status read
        self.unit_states: dict[str, dict[tuple[str, int], tuple[str, str]]] = {}

    def refuse_group(self) -> None:
        """The coordinator's ACLs refuse this case's group to everyone until the case ends
        (GROUP_AUTHORIZATION_FAILED, as Kafka answers a principal its ACLs do not allow)."""
        self.recorder.refuse_group(self.group_id)
        self.refusing = True
        self.note(f"ACLs: deny User:* All Group:{self.group_id} (everything else allowed)")

    async def member(self, name: str, **kw: Any) -> Any:
        """A scripted peer; by default it speaks Connect's embedded protocol (valid worker
        metadata for sessioned, compatible and default), as a real peer would."""
        kw.setdefault("protocols", connect_protocols(name))
        return await super().member(name, **kw)

    # ---------------------------------------------------------------- the worker under test

    @property
    def connect_protocol(self) -> str:
        """The Connect sub-protocol under test: a per-protocol run's (conformance.harness.scope)."""
        return self.target.connect_protocol

    async def start_worker(self, worker_id: str | None = None, *, connect_protocol: str | None = None,
                           scheduled_rebalance_delay_ms: int | None = None,
                           unset: frozenset[str] = frozenset()) -> WorkerProcess:
        """A worker from the target's command; ``unset``: placeholders whose settings it
        leaves at the worker's default (NOT-APPLICABLE when the command always sets one)."""
        fixed = sorted(n for n in unset if not self.target.can_leave_unset(n))
        if fixed:
            raise NotApplicable(f"the target's command always sets {', '.join('{' + n + '}' for n in fixed)} "
                                f"(an optional part [...] around it lets the suite leave it unset)")
        w = spawn_worker(self.target, self.bootstrap, self.group_id, worker_id, topic_prefix=self.topic_prefix,
                         worker_host=self.worker_host, connect_protocol=connect_protocol or self.connect_protocol,
                         scheduled_rebalance_delay_ms=scheduled_rebalance_delay_ms, unset=unset)
        self.workers.append(w)
        self.note(f"worker {w.worker_id}: {w.command}")
        return w

    # ---------------------------------------------------------------- what it runs (REST)

    @property
    def has_rest(self) -> bool:
        return "rest" in self.target.capabilities

    async def running(self, w: WorkerProcess) -> set[tuple[str, int]] | None:
        """Connectors (task -1) and tasks the worker reports RUNNING on itself, from its REST
        API (``GET /connectors``, then each one's ``/status``; a connector with no status
        yet counts as running nothing); None while the API is not serving yet (404: a worker
        answers before its resources are registered). Every unit's state is kept
        (``unit_states``: a unit missing from the set was stopped, or is elsewhere, or FAILED,
        and a case says which). A unit FAILED on the worker is BROKEN: the harness's work
        (Kafka's file connectors on the configs it seeded) failed, which says nothing of the
        group protocol. A worker that cannot answer at all is BROKEN."""
        me = f"127.0.0.1:{w.rest_port}"
        states: dict[tuple[str, int], tuple[str, str]] = {}
        try:
            try:
                names = await asyncio.to_thread(rest_get, w.rest_port, "/connectors")
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    return None
                raise
            failed: list[str] = []
            for name in names:
                try:
                    st = await asyncio.to_thread(rest_get, w.rest_port, f"/connectors/{name}/status")
                except urllib.error.HTTPError as e:
                    if e.code == 404:  # no status record yet
                        continue
                    raise
                for unit, entry in [((name, -1), st["connector"]), *(((name, t["id"]), t) for t in st["tasks"])]:
                    states[unit] = (entry["state"], entry.get("worker_id", ""))
                    if entry["state"] == "FAILED" and entry.get("worker_id") == me:
                        trace = (entry.get("trace") or "no trace").strip().splitlines()[0]
                        failed.append(f"{unit} FAILED on the worker: {trace}")
        except (OSError, ValueError) as e:
            if not w.alive():
                raise Broken(f"the worker exited ({w.proc.returncode}); log:\n{w.log_tail()}") from None
            raise Broken(f"the worker's REST API on port {w.rest_port}: {e}") from None
        self.unit_states[w.worker_id] = states
        if failed:
            raise Broken("the harness's work failed on the worker (REST status), not a protocol verdict: "
                         + "; ".join(failed))
        return {unit for unit, (state, where) in states.items() if state == "RUNNING" and where == me}

    def where_units_are(self, w: WorkerProcess, units: set[tuple[str, int]]) -> str:
        """What the worker's last REST status read said of ``units`` (missing from its running
        set): each one's state and the worker it names, or that it was not listed."""
        me = f"127.0.0.1:{w.rest_port}"
        states = self.unit_states.get(w.worker_id, {})
        def one(unit: tuple[str, int]) -> str:
            if unit not in states:
                return f"{unit} not listed"
            state, where = states[unit]
            return f"{unit} {state} " + ("on the worker" if where == me else f"on {where or 'no worker'}")
        return "; ".join(one(u) for u in sorted(units))

    async def running_when(self, w: WorkerProcess, ok: Any, within_ms: int,
                           keep_alive: list[Any] | None = None) -> tuple[bool, set[tuple[str, int]]]:
        """Poll the worker's running set until ``ok(set)`` or ``within_ms`` (scaled) passes;
        returns (ok reached, the last set read)."""
        start = time.monotonic()
        deadline = start + within_ms * self.target.timing.wait_scale / 1000
        last_hb = start
        now_running: set[tuple[str, int]] = set()
        changes: list[str] = []  # the evidence when ``ok`` is never reached
        while True:
            answer = await self.running(w)
            shown = sorted(answer) if answer is not None else "REST not serving yet"
            if not changes or not changes[-1].endswith(f" {shown}"):
                changes.append(f"+{time.monotonic() - start:.1f}s {shown}")
            if answer is not None:
                now_running = answer
                if ok(answer):
                    return True, answer
            if time.monotonic() >= deadline:
                self.note(f"REST status of worker {w.worker_id} while waiting:\n  " + "\n  ".join(changes))
                return False, now_running
            last_hb = await self._keep_alive(keep_alive, last_hb)
            await asyncio.sleep(0.3)  # a real worker's status topic; the bound is the deadline

    def seen(self, w: WorkerProcess | None = None, api: str | None = None) -> list[Seen]:
        """Exchanges of this case, from the worker ``w`` (by client id) and of ``api`` (any
        when None)."""
        return [s for s in self.recorder.snapshot(self.first_seen)
                if (w is None or s.client_id == w.worker_id) and (api is None or s.api == api)
                and getattr(s.request, "group_id", self.group_id) in (self.group_id, None)]

    async def next_request(self, w: WorkerProcess, api: str, *, after: Seen | None = None,
                           within_ms: int = 20_000, where: Any = None, what: str = "",
                           answered: bool = True, keep_alive: list[Any] | None = None) -> Seen:
        """The first request of ``api`` from the worker after ``after`` (by default once the
        coordinator answered it), waiting up to ``within_ms``; a Violation if none comes."""
        cond = where
        if answered:
            cond = (lambda s: s.answered and (where is None or where(s)))
        found = await self.maybe_next_request(w, api, after=after, within_ms=within_ms, where=cond,
                                              keep_alive=keep_alive)
        if found is None:
            if not w.alive():
                raise Broken(f"the worker exited ({w.proc.returncode}); log:\n{w.log_tail()}")
            raise Violation(what or f"{api} from the worker", f"a {api} within {within_ms} ms", "none")
        return found

    @staticmethod
    async def _keep_alive(members: list[Any] | None, last_hb: float) -> float:
        """Heartbeat the idle scripted ``members`` once a second while a case polls the worker;
        returns when that was last done."""
        now = time.monotonic()
        if not members or now - last_hb <= 1.0:
            return last_hb
        for m in members:
            if m.idle and m.member_id:
                await m.heartbeat()
        return now

    async def maybe_next_request(self, w: WorkerProcess, api: str | None, *, after: Seen | None = None,
                                 within_ms: int = 20_000, where: Any = None,
                                 keep_alive: list[Any] | None = None, scaled: bool = True) -> Seen | None:
        """Like ``next_request`` but None when nothing comes. ``scaled=False`` keeps
        ``within_ms`` as given: a window in which something must NOT happen must not be
        stretched by the target's ``wait_scale`` past the time it is about."""
        scale = self.target.timing.wait_scale if scaled else 1.0
        if w is not None:
            await self._started(w)
        deadline = time.monotonic() + within_ms * scale / 1000
        last_hb = time.monotonic()
        while True:
            for s in self.seen(w, api):
                if (after is None or s.index > after.index) and (where is None or where(s)):
                    return s
            if time.monotonic() >= deadline:
                return None
            last_hb = await self._keep_alive(keep_alive, last_hb)
            await asyncio.sleep(0.02)  # polling the recorder; the bound is the deadline

    async def _started(self, w: WorkerProcess) -> None:
        """Until ``w``'s first request reached the coordinator (its start-up: a process's
        imports, a JVM's), at most the target's ``startup_timeout_s`` (scaled) from its spawn.
        A window a case gives the worker opens no earlier than the worker itself: on a starved
        CPU (three Connect JVM targets beside it, load ~25) a Python worker took ~20 s to send
        its first request, past a 20 s window for its first JoinGroup. Windows after the
        worker's first request are untouched; a worker that never sends one still meets its
        window (as none), only later."""
        bound = w.started + self.target.timing.startup_timeout_s * self.target.timing.wait_scale
        while w.first_request is None:
            first = next((s for s in self.recorder.snapshot(self.first_seen) if s.client_id == w.worker_id), None)
            if first is not None:
                w.first_request = first.t_request
            elif time.monotonic() >= bound or not w.alive():
                return
            else:
                await asyncio.sleep(0.02)  # polling the recorder; the bound is the start-up timeout

    async def worker_synced(self, w: WorkerProcess, *, after: Seen | None = None,
                            within_ms: int = 20_000, keep_alive: list[Any] | None = None) -> Seen:
        """The worker's next successful SyncGroup."""
        s = await self.maybe_next_request(w, "SyncGroup", after=after, within_ms=within_ms,
                                          where=lambda s: s.ok, keep_alive=keep_alive)
        if s is None:
            if not w.alive():
                raise Broken(f"the worker exited ({w.proc.returncode}); log:\n{w.log_tail()}")
            raise Violation("the worker completing a rebalance", "a successful SyncGroup", "none")
        return s

    def add_worker_exchanges(self) -> None:
        """The workers' own group exchanges with the fake broker join the case's transcript
        (and so its pcap), as connection ``worker <id> #<broker's connection>``."""
        frames = self.recorder.frames_of({w.worker_id for w in self.workers}, self.first_frame)
        if frames:
            self.begin_transcript()
        names = {id(ev): f"worker {client} #{ev.conn}" for client, ev in frames}
        self.recording.adopt((ev for _, ev in frames), lambda ev: names[id(ev)])

    async def close(self) -> None:
        # The case is decided. With overlap_stops its workers stop while the next case runs
        # (each stop is a JVM's shutdown of a second or more; Connect 4.2.0's JVM hangs until
        # killed at the 15 s bound once its herder died, CLS-W-11): their logs are taken as
        # they are now. Otherwise all at once, each waited for.
        stop_later = self.stop_later if self.target.overlap_stops else None
        if stop_later is None:
            await asyncio.gather(*(asyncio.to_thread(w.terminate) for w in self.workers))
        for w in self.workers:
            self.note(f"worker {w.worker_id} log tail:\n{w.log_tail(15)}")
            self.attachments[f"worker {w.worker_id} log"] = w.log_tail(2000)
            if stop_later is not None:
                stop_later(w)
            else:
                _remove(w.log_path)
        if self.refusing:
            self.recorder.refuse_group(self.group_id, refused=False)
        self.add_worker_exchanges()
        self.check_invariants()
        await super().close()

    def check_invariants(self) -> None:
        """Every group invariant over every exchange of the case's group (the workers' and the
        scripted peers'), judging the rounds a worker under test led; a violation names the
        exchange, ``worker <id>`` / a peer's client id, API and position in the case. The
        workers' own member ids are judged; scripted peers may lead or send what a case wants."""
        rows, where = exchange_rows(self.seen(), self.requirement.id)
        workers = {w.worker_id for w in self.workers}
        mine = {r.get("resp_member_id") if r["api"] == "JoinGroup" else r.get("member_id") for r in rows
                if r["client_id"] in workers and r["api"] in ("JoinGroup", "ConnectGroupHeartbeat")}
        found = findings(rows, {m for m in mine if m})
        for f in found.values():
            for v in f["violations"]:
                v["exchange"] = where.get(v["ref"], "")
        self.invariants = found
