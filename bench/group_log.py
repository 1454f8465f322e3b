"""Heartbeats per second of a draft connect group with and without ``--group-log``.

Two `fakebroker serve` processes, one plain and one writing its connect groups' records to
a real Apache Kafka (``--group-log``, a local JVM or a container, see fakebroker.realkafka),
get the same load, in alternating runs: N workers of one connect group, each on its own
connection, heartbeating back to back (the selected worker computes and installs the
target when told COMPUTE_ASSIGNMENT), while a churn worker joins and leaves the group
every --churn-ms: each join and leave is a state change the broker writes (and a new
target the group installs), so writes go on throughout. Before the write-behind, every
such write blocked the broker's event loop until Kafka acknowledged it.

    python bench/group_log.py                      # 100 workers, 5 runs of 3 s per broker
    python bench/group_log.py -n 500 --seconds 5 --repeats 7 --churn-ms 50

Figures: heartbeats/s (answered without error, COMPUTE_ASSIGNMENT included), state
changes/s (churn joins + leaves done), server CPU ms per 1k heartbeats; medians of the
runs, and with-log / without-log for heartbeats/s (goal: at least 0.8).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.reconcile.errors import DraftErrorCode
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.realkafka import start_real_kafka

REG = default_registry()
HB, PREP, INSTALL = (REG[f"ConnectGroup{n}Request"] for n in ("Heartbeat", "PrepareAssignment",
                                                               "InstallAssignment"))
COMPUTE = int(DraftErrorCode.COMPUTE_ASSIGNMENT)
FENCED_OR_UNKNOWN = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
CLK_TCK = os.sysconf("SC_CLK_TCK")
GROUP = "bench-connect"


def proc_cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def start_server(*extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "fakebroker.cli", "serve", "--port", "0",
                             "--log-level", "WARNING", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    bootstrap = proc.stdout.readline().strip()
    if not bootstrap:
        raise RuntimeError(f"fakebroker serve {' '.join(extra)} did not start")
    return proc, bootstrap


def _empty() -> Any:
    return HB.cls.ConnectorsAndTasks(connectors=[], tasks=[])  # type: ignore[attr-defined]


class Worker:
    """A scripted draft worker owning nothing (the group has no connectors): the state
    changes are membership and targets, which is what the group log records."""

    def __init__(self, conn: KafkaConnection) -> None:
        self.conn = conn
        self.member_id = str(uuid.uuid4())
        self.epoch = 0

    async def heartbeat(self, epoch: int | None = None) -> int:
        e = self.epoch if epoch is None else epoch
        r = (await self.conn.send(HB.new(
            group_id=GROUP, member_id=self.member_id, member_epoch=e, rebalance_timeout_ms=60_000,
            client_assignors=[HB.cls.Assignor(name="connect", minimum_version=0,  # type: ignore[attr-defined]
                                              maximum_version=2, reason=0, version=2, metadata=b"")],
            connectors_and_tasks=_empty()), 0, timeout_s=60)).response
        if r.error_code in (0, COMPUTE):
            self.epoch = r.member_epoch
        elif r.error_code in FENCED_OR_UNKNOWN:
            self.epoch = 0  # rejoin
        if r.error_code == COMPUTE:
            await self.compute()
        return r.error_code

    async def compute(self) -> None:
        p = (await self.conn.send(PREP.new(group_id=GROUP, member_id=self.member_id,
                                           member_epoch=self.epoch), 0, timeout_s=60)).response
        if p.error_code:
            return  # the group moved on: a later heartbeat says so
        members = [INSTALL.cls.Member(member_id=m.member_id, version=2, metadata=b"",  # type: ignore[attr-defined]
                                      connectors_and_tasks=INSTALL.cls.ConnectorsAndTasks(  # type: ignore[attr-defined]
                                          connectors=[], tasks=[]))
                   for m in p.members]
        await self.conn.send(INSTALL.new(group_id=GROUP, member_id=self.member_id,
                                         member_epoch=self.epoch, group_epoch=p.group_epoch,
                                         error=0, members=members), 0, timeout_s=60)


@dataclass
class Run:
    heartbeats_per_s: float
    changes_per_s: float
    server_cpu_ms_per_1k_hb: float


async def one_run(bootstrap: str, pid: int, n: int, seconds: float, churn_ms: int) -> Run:
    conns = await asyncio.gather(*(KafkaConnection.open(bootstrap, timeout_s=60) for _ in range(n + 1)))
    workers = [Worker(c) for c in conns[:n]]
    churner = Worker(conns[n])
    try:
        for w in workers:  # join one by one: the group settles between joins
            await w.heartbeat()
        stop = time.perf_counter() + seconds
        beats = changes = 0

        async def beat(w: Worker) -> None:
            nonlocal beats
            while time.perf_counter() < stop:
                if await w.heartbeat() in (0, COMPUTE):
                    beats += 1

        async def churn() -> None:
            nonlocal changes
            while time.perf_counter() < stop:
                churner.member_id, churner.epoch = str(uuid.uuid4()), 0
                await churner.heartbeat()
                await churner.heartbeat(-1)  # leave
                changes += 2
                await asyncio.sleep(churn_ms / 1000)

        cpu0, t0 = proc_cpu_s(pid), time.perf_counter()
        await asyncio.gather(churn(), *(beat(w) for w in workers))
        cpu1, t1 = proc_cpu_s(pid), time.perf_counter()
        for w in workers:
            await w.heartbeat(-1)
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    return Run(beats / (t1 - t0), changes / (t1 - t0), (cpu1 - cpu0) * 1e6 / max(beats, 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=100, help="heartbeating workers (default 100)")
    p.add_argument("--seconds", type=float, default=3.0, help="measured phase per run")
    p.add_argument("--repeats", type=int, default=5, help="runs per broker; medians are printed")
    p.add_argument("--churn-ms", type=int, default=100,
                   help="pause between the churn worker's leave and its next join")
    a = p.parse_args()
    kafka = start_real_kafka()
    servers: dict[str, tuple[subprocess.Popen[str], str]] = {}
    runs: dict[str, list[Run]] = {"without": [], "with": []}
    try:
        servers["without"] = start_server()
        servers["with"] = start_server("--group-log", f"{kafka.bootstrap}/bench-group-log-{uuid.uuid4().hex[:8]}")
        for r in range(a.repeats):
            for name in ("without", "with") if r % 2 == 0 else ("with", "without"):
                proc, bootstrap = servers[name]
                runs[name].append(asyncio.run(one_run(bootstrap, proc.pid, a.n, a.seconds, a.churn_ms)))
            print(f"run {r + 1}/{a.repeats} done", file=sys.stderr)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(30)
        kafka.stop()
    med = {name: Run(*(statistics.median(getattr(x, f) for x in rs)
                       for f in ("heartbeats_per_s", "changes_per_s", "server_cpu_ms_per_1k_hb")))
           for name, rs in runs.items()}
    print(f"{'group log':>10} {'workers':>8} {'heartbeats/s':>13} {'state changes/s':>16} "
          f"{'server CPU ms/1k hb':>20}")
    for name, m in med.items():
        print(f"{name:>10} {a.n:>8} {m.heartbeats_per_s:>13.0f} {m.changes_per_s:>16.1f} "
              f"{m.server_cpu_ms_per_1k_hb:>20.1f}")
    print(f"(medians of {a.repeats} runs of {a.seconds} s, alternating; churn every {a.churn_ms} ms)")
    print(f"\nheartbeats/s with / without the group log: "
          f"{med['with'].heartbeats_per_s / med['without'].heartbeats_per_s:.2f} (goal: >= 0.80)")


if __name__ == "__main__":
    main()
