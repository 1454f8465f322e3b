"""``fakebroker serve --group-log HOST:PORT/TOPIC`` survives a crash mid-rebalance.

Three scripted connect workers talk to a ``serve`` subprocess whose connect groups write
their records to a topic on the real Kafka: two converge, a third joins and the selected
worker installs the new target, and the broker is SIGKILLed while revocations are still
unacknowledged. A new ``serve`` on the same topic loads the group: the workers' next
heartbeats (same member ids and epochs, on new connections) are accepted at the same
epochs, the group converges, and the log holds no group epoch beyond the one before the
crash."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.errors import DraftErrorCode
from fakebroker.coordinator.reconcile.records import GroupMetadataRecord
from fakebroker.realkafka import RealKafka
from fakebroker.realkafka.group_log import decode_log, read_log

pytestmark = pytest.mark.realkafka

G = "connect-cluster"
UNITS = frozenset({("c", "A"), *(("t", ("A", i)) for i in range(4)), ("c", "B"), ("t", ("B", 0))})
COMPUTE = int(DraftErrorCode.COMPUTE_ASSIGNMENT)
REPO = Path(__file__).resolve().parents[2]
Unit = tuple[str, Any]


def _cat(conn: KafkaConnection, api: str, units: frozenset[Unit]) -> Any:
    mt = conn.registry[api + "Request"]
    return mt.classes["ConnectorsAndTasks"](
        connectors=sorted(u for k, u in units if k == "c"),
        tasks=[mt.classes["ConnectorTaskId"](connector_id=c, task_id=t)
               for c, t in sorted(u for k, u in units if k == "t")])


def _units(cat: Any) -> frozenset[Unit]:
    return frozenset({("c", c) for c in cat.connectors}
                     | {("t", (t.connector_id, t.task_id)) for t in cat.tasks})


class Worker:
    """A scripted connect worker (the shapes of conformance/workers/draft_worker.py)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.member_id = f"{name}-{uuid.uuid4()}"
        self.epoch = 0
        self.owned: frozenset[Unit] = frozenset()
        self.pending_revocation = False
        self.conn: KafkaConnection | None = None

    async def connect(self, bootstrap: str) -> None:
        if self.conn is not None:
            await self.conn.close()
        self.conn = await KafkaConnection.open(bootstrap, client_id=self.name, timeout_s=15)

    async def send(self, api: str, **fields: Any) -> Any:
        assert self.conn is not None
        return (await self.conn.send(self.conn.registry[api + "Request"].new(**fields), 0)).response

    async def heartbeat(self) -> Any:
        """A full heartbeat at the worker's epoch, reporting what it runs."""
        assert self.conn is not None
        acls = self.conn.registry["ConnectGroupHeartbeatRequest"].classes["Assignor"]
        return await self.send(
            "ConnectGroupHeartbeat", group_id=G, member_id=self.member_id,
            member_epoch=self.epoch, rebalance_timeout_ms=60_000,
            connectors_and_tasks=_cat(self.conn, "ConnectGroupHeartbeat", self.owned),
            client_assignors=[acls(name="connect", minimum_version=0, maximum_version=2,
                                   reason=0, version=2, metadata=b"")])

    async def beat(self, *, acknowledge: bool) -> Any:
        """Heartbeat and take the answer; revocations are only released (and so
        acknowledged by the next heartbeat) with ``acknowledge``. Computes when asked."""
        r = await self.heartbeat()
        assert r.error_code in (0, COMPUTE), (self.name, r)
        self.epoch = r.member_epoch
        if r.assignment is not None:
            new = _units(r.assignment.connectors_and_tasks)
            if self.owned - new:
                self.pending_revocation = not acknowledge
                if acknowledge:
                    self.owned = self.owned & new
            else:
                self.owned, self.pending_revocation = new, False
        if r.error_code == COMPUTE:
            await self.compute()
        return r

    async def compute(self) -> None:
        p = await self.send("ConnectGroupPrepareAssignment", group_id=G,
                            member_id=self.member_id, member_epoch=self.epoch)
        assert p.error_code == 0, p
        current = {m.member_id: _units(m.connectors_and_tasks) for m in p.members}
        members = sorted(current)
        quota = -(-len(UNITS) // len(members))
        plan: dict[str, set[Unit]] = {m: set() for m in members}
        taken: set[Unit] = set()
        for m in members:  # sticky up to the quota
            for u in sorted(current[m], key=repr):
                if u in UNITS and u not in taken and len(plan[m]) < quota:
                    plan[m].add(u)
                    taken.add(u)
        for u in sorted(UNITS - taken, key=repr):
            plan[min(members, key=lambda x: (len(plan[x]), x))].add(u)
        assert self.conn is not None
        mt = self.conn.registry["ConnectGroupInstallAssignmentRequest"]
        body = [mt.classes["Member"](member_id=m, version=2, metadata=b"",
                                     connectors_and_tasks=_cat(self.conn,
                                                               "ConnectGroupInstallAssignment",
                                                               frozenset(w)))
                for m, w in plan.items()]
        i = await self.send("ConnectGroupInstallAssignment", group_id=G, member_id=self.member_id,
                            member_epoch=self.epoch, group_epoch=p.group_epoch, error=0,
                            members=body)
        assert i.error_code == 0, i


class Serve:
    """``python -m fakebroker.cli serve --group-log ...`` as a subprocess."""

    def __init__(self, tmp: Path, group_log: str, n: int) -> None:
        self.ready = tmp / f"ready-{n}"
        self.err = open(tmp / f"serve-{n}.log", "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fakebroker.cli", "serve", "--port", "0", "--group-log",
             group_log, "--ready-file", str(self.ready)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=self.err,
            env={**os.environ, "PYTHONPATH": str(REPO)})

    def wait_ready(self, timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ready.exists():
                return self.ready.read_text().strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        self.err.seek(0)
        raise AssertionError(f"serve not ready (exit {self.proc.returncode}):\n{self.err.read()}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL: no clean shutdown
        self.proc.wait(10)

    def log_text(self) -> str:
        self.err.seek(0)
        return self.err.read()


async def _group_epochs(bootstrap: str, topic: str) -> list[int]:
    return [r.epoch for r in decode_log(await read_log(bootstrap, topic))
            if isinstance(r, GroupMetadataRecord) and r.group_id == G]


async def _round(workers: list[Worker], *, acknowledge: bool) -> None:
    for w in workers:
        await w.beat(acknowledge=acknowledge)


def _converged(workers: list[Worker], epoch: int) -> bool:
    owned = [w.owned for w in workers]
    return (all(w.epoch == epoch and not w.pending_revocation for w in workers)
            and frozenset().union(*owned) == UNITS and sum(map(len, owned)) == len(UNITS))


async def _scenario(kafka: str, tmp: Path) -> None:
    topic = f"group-log-serve-{uuid.uuid4().hex[:12]}"
    w1, w2, w3 = workers = [Worker("w1"), Worker("w2"), Worker("w3")]
    first = Serve(tmp, f"{kafka}/{topic}", 1)
    second: Serve | None = None
    try:
        bootstrap = first.wait_ready()
        for w in workers:
            await w.connect(bootstrap)
        # Two workers converge.
        for _ in range(30):
            await _round([w1, w2], acknowledge=True)
            epochs = await _group_epochs(kafka, topic)
            if epochs and _converged([w1, w2], epochs[-1]):
                break
        else:
            raise AssertionError(f"w1, w2 did not converge: {[(w.epoch, w.owned) for w in workers]}")
        # The third joins; heartbeat until the new target is installed and a revocation is
        # handed out, without acknowledging it.
        await w3.beat(acknowledge=False)
        for _ in range(30):
            if any(w.pending_revocation for w in workers):
                break
            await _round(workers, acknowledge=False)
        else:
            raise AssertionError("no revocation handed out")
        before = await _group_epochs(kafka, topic)
        epochs_before = {w.member_id: w.epoch for w in workers}
        assert not _converged(workers, before[-1])

        first.kill()
        second = Serve(tmp, f"{kafka}/{topic}", 2)
        bootstrap = second.wait_ready()
        for w in workers:
            await w.connect(bootstrap)
        # The same members at the same epochs are accepted by the rebuilt group.
        for w in workers:
            r = await w.heartbeat()
            assert r.error_code in (0, COMPUTE), (w.name, r, second.log_text())
            assert r.member_epoch == epochs_before[w.member_id], (w.name, r)
        for _ in range(30):
            await _round(workers, acknowledge=True)
            if _converged(workers, before[-1]):
                break
        else:
            raise AssertionError(f"no convergence: {[(w.epoch, sorted(w.owned, key=repr)) for w in workers]}")
        after = await _group_epochs(kafka, topic)
        assert after[-1] == before[-1], (before, after)  # no spurious epoch after the crash
        assert "loaded 1 connect group(s): connect-cluster" in second.log_text()
    finally:
        for w in workers:
            if w.conn is not None:
                await w.conn.close()
        first.kill()
        if second is not None:
            second.kill()


def test_serve_group_log_survives_sigkill_mid_rebalance(real_kafka: RealKafka,
                                                        tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(_scenario(real_kafka.bootstrap, tmp_path), 240))
