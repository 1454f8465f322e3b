"""The worker suite's machinery: the fake broker as coordinator (recording every exchange),
the worker under test started from the target's command template, and scripted peers.

    async def case(ctx: WorkerContext) -> None:
        w = await ctx.start_worker()
        join = await ctx.next_request(w, "JoinGroup")        # what the worker sends next
        peer = await ctx.member("peer")                       # a scripted member in its group

Time is real here (the worker is a real process); every wait is bounded and scaled by the
target's ``wait_scale``.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import Struct
from fakebroker.protocol.framing import Request
from fakebroker.server.broker import Connection, FakeBroker
from fakebroker.server.clock import RealClock
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread

from ...catalogue import Requirement
from ...harness.clock import RealCaseClock
from ...harness.connect_bytes import connect_protocols
from ...harness.context import CoordinatorContext
from ...harness.outcomes import Broken, Violation
from ...harness.transcript import Transcript
from ...target import Target


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


class RecordingBroker(FakeBroker):
    """The fake broker, keeping every request it answered (thread-safe reads)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        # one-shot forged answers: (client id, api, predicate on the request, answer factory)
        self.forged: list[tuple[str, str, Any, Any]] = []

    async def dispatch(self, conn: Connection, req: Request) -> Struct | None:
        client_id = req.header.client_id or ""  # type: ignore[attr-defined]
        with self._lock:
            seen = Seen(len(self.seen), conn.id, client_id, self.registry.api_name(req.api_key),
                        req.version, req.body, time.monotonic())
            self.seen.append(seen)
            forge = next((f for f in self.forged if f[0] == client_id and f[1] == seen.api
                          and f[2](req.body)), None)
            if forge is not None:
                self.forged.remove(forge)
        if forge is not None:
            body = forge[3](req.body)
        else:
            body = await super().dispatch(conn, req)
        with self._lock:
            seen.response, seen.t_response = body, time.monotonic()
        return body

    def forge(self, client_id: str, api: str, answer: Any, where: Any = None) -> None:
        """Answer the next ``api`` request of ``client_id`` (matching ``where``) with
        ``answer(request)`` instead of the coordinator's (the coordinator never sees it)."""
        with self._lock:
            self.forged.append((client_id, api, where or (lambda b: True), answer))

    def snapshot(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)


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
    started: float = field(default_factory=time.monotonic)

    def log_tail(self, n: int = 40) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def terminate(self, timeout_s: float = 15.0) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


@dataclass
class WorkerSession:
    """One recording fake broker per test process; each case gets its own group."""

    target: Target
    broker: BrokerThread | None = None
    version: str = "unknown"

    @classmethod
    def start(cls, target: Target) -> WorkerSession:
        broker = RecordingBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0,
                                                                   min_session_timeout_ms=1000,
                                                                   connect_heartbeat_interval_ms=500,
                                                                   connect_session_timeout_ms=6000),
                                 RealClock())
        return cls(target, BrokerThread(broker).start(), target.implementation_version)

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()

    def context(self, requirement: Requirement, transcript: Transcript) -> WorkerContext:
        assert self.broker is not None
        clock = RealCaseClock(self.target.timing.wait_scale)
        transcript.clock = clock
        transcript.server_port = int(self.broker.bootstrap.rpartition(":")[2])
        return WorkerContext(self.target, requirement, self.broker.bootstrap, clock, transcript, self.broker)


class WorkerContext(CoordinatorContext):
    def __init__(self, target: Target, requirement: Requirement, bootstrap: str, clock: RealCaseClock,
                 transcript: Transcript, broker: BrokerThread) -> None:
        super().__init__(target, requirement, bootstrap, clock, transcript)
        self.broker_thread = broker
        self.recorder: RecordingBroker = broker.broker  # type: ignore[assignment]
        self.workers: list[WorkerProcess] = []
        self.first_seen = len(self.recorder.snapshot())
        self.initial_delay_ms = 0

    async def member(self, name: str, **kw: Any) -> Any:
        """A scripted peer; by default it speaks Connect's embedded protocol (valid worker
        metadata for sessioned, compatible and default), as a real peer would."""
        kw.setdefault("protocols", connect_protocols(name))
        return await super().member(name, **kw)

    # ---------------------------------------------------------------- the worker under test

    async def start_worker(self, worker_id: str | None = None, *, connect_protocol: str | None = None,
                           scheduled_rebalance_delay_ms: int | None = None) -> WorkerProcess:
        t = self.target.timing
        wid = worker_id or f"w-{uuid.uuid4().hex[:6]}"
        values = dict(bootstrap=self.bootstrap, group=self.group_id, worker_id=wid, rest_port=free_port(),
                      python=shlex.quote(sys.executable),
                      connect_protocol=connect_protocol or self.target.connect_protocol,
                      session_timeout_ms=t.session_timeout_ms, rebalance_timeout_ms=t.rebalance_timeout_ms,
                      heartbeat_interval_ms=t.heartbeat_interval_ms,
                      scheduled_rebalance_delay_ms=(t.scheduled_rebalance_delay_ms
                                                    if scheduled_rebalance_delay_ms is None
                                                    else scheduled_rebalance_delay_ms))
        command = self.target.render_command(**values)
        fd, log_path = tempfile.mkstemp(prefix=f"conformance-{wid}-", suffix=".log")
        try:
            proc = subprocess.Popen(shlex.split(command), stdout=fd, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except OSError as e:
            raise Broken(f"cannot start the worker with {command!r}: {e}") from None
        finally:
            os.close(fd)
        w = WorkerProcess(wid, self.group_id, command, proc, log_path)
        self.workers.append(w)
        self.note(f"worker {wid}: {command}")
        return w

    def seen(self, w: WorkerProcess | None = None, api: str | None = None) -> list[Seen]:
        """Exchanges of this case, from the worker ``w`` (by client id) and of ``api``."""
        return [s for s in self.recorder.snapshot()[self.first_seen:]
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

    async def maybe_next_request(self, w: WorkerProcess, api: str, *, after: Seen | None = None,
                                 within_ms: int = 20_000, where: Any = None,
                                 keep_alive: list[Any] | None = None) -> Seen | None:
        deadline = time.monotonic() + within_ms * self.target.timing.wait_scale / 1000
        last_hb = time.monotonic()
        while True:
            for s in self.seen(w, api):
                if (after is None or s.index > after.index) and (where is None or where(s)):
                    return s
            now = time.monotonic()
            if now >= deadline:
                return None
            if keep_alive and now - last_hb > 1.0:
                last_hb = now
                for m in keep_alive:
                    if m.idle and m.member_id:
                        await m.heartbeat()
            await asyncio.sleep(0.02)  # polling the recorder; the bound is the deadline

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

    async def close(self) -> None:
        for w in self.workers:
            await asyncio.to_thread(w.terminate)
            self.note(f"worker {w.worker_id} log tail:\n{w.log_tail(15)}")
            try:
                os.unlink(w.log_path)
            except OSError:
                pass
        await super().close()
