"""The thin shell: run a schedule against N real workers of a target behind the fake broker
(proxy mode in front of a real Kafka when the target asks for one), polling each worker's
REST status, and return the history for ``judge``. Every decision is in the schedule; this
module only does what it says, at the time it says, and records what happened."""

from __future__ import annotations

import json
import os
import resource
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any

from fakebroker.intercept.hooks import Call, Delay, ErrorResponse

from ..harness.worker import (GROUP_API_KEYS, WorkerProcess, WorkerSession, exchange_rows, rest_get,
                                       spawn_worker)
from ..harness.target import Target
from .judge import History, Snapshot, Unit
from .schedule import TOPIC_ERRORS, Op, Schedule

SIGNALLED = frozenset({"pause", "kill", "stop"})  # need the worker's own process
CPU_SAMPLE_EVERY = 4  # polls between samples of the workers' CPU


@dataclass
class Usage:
    """CPU seconds over the campaign: this process (harness, fake broker, poller) and the workers."""

    harness_s: float = 0.0
    workers_s: float = 0.0
    wall_s: float = 0.0


@dataclass
class Run:
    history: History
    ops_done: list[str] = field(default_factory=list)  # "t=..ms <op> -> outcome", in order
    usage: Usage = field(default_factory=Usage)


def signalled_ops_supported(target: Target) -> bool:
    """A target whose workers share a host process (Apache Connect's JVM host) gives no
    process per worker to stop, kill or pause."""
    return target.host_command is None


def _tree(pid: int) -> list[int]:
    """pid and its descendants (a worker command may start a child that does the work)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a live process has used so far, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def internal_client_of(client_id: str, worker: str) -> bool:
    """Whether a Produce/Fetch client is one of ``worker``'s (client.id ``worker``): Connect
    gives its internal topics' clients that client.id (2.x), ``worker-configs`` and the like
    (3.0), or ``GROUP-worker-configs`` (later releases: ConnectUtils.clientIdBase)."""
    return client_id == worker or client_id.startswith(f"{worker}-") or f"-{worker}-" in client_id


def _signal(w: WorkerProcess, sig: signal.Signals) -> None:
    for pid in _tree(w.proc.pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _rest(port: int, method: str, path: str, body: Any = None) -> str:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return f"HTTP {r.status}"
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}"
    except OSError as e:
        return f"no answer ({e})"


def read_units(port: int) -> tuple[frozenset[Unit], frozenset[Unit]]:
    """(units RUNNING on the worker at ``port``, every unit its status lists): its own REST view."""
    me = f"127.0.0.1:{port}"
    mine, listed = set(), set()
    for name in rest_get(port, "/connectors"):
        try:
            st = rest_get(port, f"/connectors/{name}/status")
        except urllib.error.HTTPError:
            continue
        for unit, entry in [((name, -1), st["connector"]), *(((name, t["id"]), t) for t in st["tasks"])]:
            listed.add(unit)
            if entry["state"] == "RUNNING" and entry.get("worker_id") == me:
                mine.add(unit)
    return frozenset(mine), frozenset(listed)


class Driver:
    def __init__(self, target: Target, schedule: Schedule, poll_ms: int = 500, log: Any = print) -> None:
        self.target, self.s, self.poll_ms, self.log = target, schedule, poll_ms, log
        self.group = f"chaos-{schedule.seed}-{uuid.uuid4().hex[:6]}"
        self.slots: dict[int, WorkerProcess | None] = {}
        self.paused: set[int] = set()
        self.snapshots: list[Snapshot] = []
        self.listed: dict[str, frozenset[Unit]] = {}  # each worker's last status listing
        self.done: list[str] = []
        self.op_times: dict[int, int] = {}
        self.configs: dict[str, Any] = {}
        # Each worker process's CPU seconds, the most seen (sampled while it lives: a JVM its
        # launcher does not wait for is no child whose usage getrusage would count).
        self.cpu_seen: dict[int, float] = {}
        self._lock = threading.Lock()
        self._t0 = 0.0

    def now_ms(self) -> int:
        return int((time.monotonic() - self._t0) * 1000)

    # ------------------------------------------------------------ workers

    def _spawn(self, session: WorkerSession, slot: int) -> None:
        w = spawn_worker(self.target, session.broker.bootstrap, self.group, worker_id=f"chaos-w{slot}",
                         topic_prefix=session.topic_prefix, worker_host=session.worker_host)
        with self._lock:
            self.slots[slot] = w

    def _sample_cpu(self, workers: list[WorkerProcess]) -> None:
        for w in workers:
            for pid in _tree(w.proc.pid):
                cpu = _cpu_s(pid)
                if cpu is not None:
                    self.cpu_seen[pid] = max(cpu, self.cpu_seen.get(pid, 0.0))

    def _poll(self, stop: threading.Event) -> None:
        polls = 0
        while not stop.wait(self.poll_ms / 1000):
            with self._lock:
                live = [(s, w) for s, w in self.slots.items() if w is not None and s not in self.paused]
            polls += 1
            if polls % CPU_SAMPLE_EVERY == 0:  # a full /proc scan: not at every poll
                self._sample_cpu([w for _, w in live])
            for slot, w in live:
                t = self.now_ms()
                try:
                    mine, listed = read_units(w.rest_port)
                except (OSError, ValueError, KeyError):
                    self.snapshots.append(Snapshot(t, w.worker_id, frozenset(), alive=False))
                    continue
                self.snapshots.append(Snapshot(t, w.worker_id, mine))
                self.listed[w.worker_id] = listed

    # ------------------------------------------------------------ operations

    def _live_ports(self, slot: int) -> list[int]:
        """The REST ports of the workers running and not paused, ``slot``'s first."""
        with self._lock:
            order = [slot] + [s for s in sorted(self.slots) if s != slot]
            return [w.rest_port for s in order if (w := self.slots.get(s)) is not None and s not in self.paused
                    and w.alive()]

    def _live_port(self, slot: int) -> int | None:
        ports = self._live_ports(slot)
        return ports[0] if ports else None

    def _rest_any(self, slot: int, method: str, path: str, body: Any = None) -> str:
        """A REST call to ``slot``'s worker, else the next live one that answers: a worker
        started again listens on its REST port only once its JVM is up (Connect forwards
        to the leader what a follower may not do itself)."""
        outcome = "skipped: no live worker"
        for port in self._live_ports(slot):
            outcome = _rest(port, method, path, body)
            if not outcome.startswith("no answer"):
                return outcome
        return outcome

    def _connector(self, op: Op) -> str | None:
        names = sorted(self.configs) or sorted({u[0] for us in list(self.listed.values()) for u in us})
        return names[op.connector % len(names)] if names else None

    def start_op(self, session: WorkerSession, op: Op) -> tuple[str, Any]:
        """Do ``op``; returns its outcome and what ``end_op`` needs to undo it."""
        broker = session.broker.broker
        with self._lock:
            w = self.slots.get(op.worker)
        wid = f"chaos-w{op.worker}"
        if op.kind == "join":
            self._spawn(session, op.worker)
            return "started", None
        if op.kind in SIGNALLED:
            if w is None or not w.alive():
                return "skipped: the worker is not running", None
            if op.kind == "pause":
                _signal(w, signal.SIGSTOP)
                self.paused.add(op.worker)
                return "SIGSTOP", w
            self._sample_cpu([w])  # what it used until now: gone with the process
            if op.kind == "kill":
                _signal(w, signal.SIGKILL)
                w.proc.wait(10)
            else:
                w.terminate()
            with self._lock:
                self.slots[op.worker] = None
            return f"exited {w.proc.returncode}", None
        if op.kind == "coord-drop":
            return "group connections closed", broker.cut_off(wid)
        if op.kind in ("coord-delay", "coord-error", "topic-fail", "topic-delay"):
            act = (Delay(op.delay_ms, real=True) if op.kind.endswith("delay") else ErrorResponse(TOPIC_ERRORS.get(op.error, op.error)))
            group_api = op.kind.startswith("coord")

            def fault(call: Call) -> Any:
                cid = call.client_id or ""
                return act if (cid == wid if group_api else internal_client_of(cid, wid)) else None
            apis = GROUP_API_KEYS if group_api else ("Produce", "Fetch")
            return act.describe(), broker.hooks.add(fault, api=apis, keep=True, name=f"chaos:{op.kind}:{wid}")
        name = self._connector(op)
        if name is None:
            return "skipped: no connector", None
        if op.kind == "rest-restart":
            q = "?includeTasks=true&onlyFailed=false" if op.include_tasks else ""
            return self._rest_any(op.worker, "POST", f"/connectors/{name}/restart{q}"), None
        config = self.configs.get(name)
        if config is None:
            return "skipped: the connector's config is unknown (GET /connectors/NAME/config)", None
        if op.kind == "rest-reconfigure":
            n = int(config.get("tasks.max", "1"))
            config = {**config, "tasks.max": str(n + 1 if n < 3 else 1)}
            self.configs[name] = config
            return self._rest_any(op.worker, "PUT", f"/connectors/{name}/config", config), None
        if op.kind == "rest-delete":
            return self._rest_any(op.worker, "DELETE", f"/connectors/{name}"), (name, config)
        return f"unknown kind {op.kind}", None

    def end_op(self, session: WorkerSession, op: Op, undo: Any) -> str:
        if op.kind == "pause" and undo is not None:
            _signal(undo, signal.SIGCONT)
            self.paused.discard(op.worker)
            return "SIGCONT"
        if op.kind in ("stop", "kill"):
            with self._lock:
                running = self.slots.get(op.worker) is not None
            if not running:
                self._spawn(session, op.worker)
                return "started again"
            return "still running"
        if op.kind == "rest-delete" and undo is not None:
            name, config = undo
            return self._rest_any(op.worker, "PUT", f"/connectors/{name}/config", config)
        if undo is not None and hasattr(undo, "fn"):
            session.broker.broker.hooks.remove(undo)
            # acted on 0: the fault met nothing (the worker was down, or sent none of those requests)
            return f"hook removed, it acted on {undo.fired} of the {undo.seen} requests it was offered"
        return ""

    # ------------------------------------------------------------ the campaign

    def run(self, until_ms: int, workerinput: dict[str, Any] | None = None) -> Run:
        """``workerinput``: a test process's (``conformance run``): its run's real Kafka, with
        internal topics of this campaign's own (its operations rewrite the connectors' configs)."""
        if workerinput:
            workerinput = {**workerinput, "workerid": f"{workerinput.get('workerid', '')}-{self.group}"}
        session = WorkerSession.start(self.target, workerinput)
        stop = threading.Event()
        poller = threading.Thread(target=self._poll, args=(stop,), name="chaos-poll", daemon=True)
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        mark = len(session.broker.broker.seen)
        try:
            for slot in range(self.s.workers):
                self._spawn(session, slot)
            self._wait_for_rest()
            self._t0 = time.monotonic()  # the schedule's zero: every worker started, the work listed
            poller.start()
            events = sorted([(o.at_ms, 0, i) for i, o in enumerate(self.s.ops)]
                            + [(o.ends_ms, 1, i) for i, o in enumerate(self.s.ops) if o.for_ms])
            undo: dict[int, Any] = {}
            for at, end, i in events:
                time.sleep(max(0.0, (at - self.now_ms()) / 1000))
                op = self.s.ops[i]
                if end:
                    outcome = self.end_op(session, op, undo.pop(i, None))
                else:
                    self.op_times[i] = self.now_ms()
                    outcome, undo[i] = self.start_op(session, op)
                line = f"t={self.now_ms()}ms {'end ' if end else ''}{op.describe()} -> {outcome}"
                self.done.append(line)
                self.log(f"  {line}")
            time.sleep(max(0.0, (until_ms - self.now_ms()) / 1000))
            end_ms = self.now_ms()
        finally:
            stop.set()
            if poller.is_alive():
                poller.join(10)
            with self._lock:
                workers = [w for w in self.slots.values() if w is not None]
            # The configured units: every unit some worker running at the end lists (the
            # status topic's view may lag in one worker, not in all).
            expected = frozenset(u for w in workers for u in self.listed.get(w.worker_id, ()))
            for slot in list(self.paused):
                w = self.slots.get(slot)
                if w is not None:
                    _signal(w, signal.SIGCONT)
            self._sample_cpu(workers)
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)  # before the workers' shutdown
            for w in workers:
                w.terminate()
            seen = session.broker.broker.snapshot(mark)
            session.stop()
        rows, _ = exchange_rows(seen, f"chaos-{self.s.seed}")
        for r in rows:  # seconds since the campaign started: the judge's and the schedule's clock
            r["req_time"] -= self._t0
            if r["resp_time"] is not None:
                r["resp_time"] -= self._t0
        usage = Usage(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, sum(self.cpu_seen.values()),
                      end_ms / 1000)
        history = History(self.s, rows, list(self.snapshots), expected, end_ms, dict(self.op_times))
        return Run(history, self.done, usage)

    def _wait_for_rest(self) -> None:
        """Until the first worker's REST API lists the connectors (the configs kept for REST
        operations that need them); bounded by the target's startup timeout."""
        self._t0 = time.monotonic()
        deadline = self._t0 + self.target.timing.startup_timeout_s * self.target.timing.wait_scale
        while time.monotonic() < deadline:
            port = self._live_port(0)
            try:
                names = rest_get(port, "/connectors") if port else []
            except (OSError, ValueError):
                names = []
            if names:
                for name in names:
                    try:
                        self.configs[name] = rest_get(port, f"/connectors/{name}/config")
                    except (OSError, ValueError):
                        pass  # a worker without the endpoint (the bundled ones): no config operations
                return
            time.sleep(0.2)
        raise TimeoutError(f"no worker's REST API listed the connectors within "
                           f"{self.target.timing.startup_timeout_s * self.target.timing.wait_scale:.0f}s")
