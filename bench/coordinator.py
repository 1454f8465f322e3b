"""Coordinator benchmark: heartbeats per second and rebalance time for N members, on the
fake broker and on Apache Kafka 4.2.0 side by side, with fake/real ratios.

Each broker under test runs as its own process (`fakebroker serve`; Kafka as a local JVM
or a container, see fakebroker.realkafka), so its CPU time and resident memory are read
from /proc apart from the load generator's. Each simulated member has its own connection
(a parked JoinGroup holds its connection, as in Kafka). Both brokers get the same group
settings: a 3 s initial rebalance delay (Kafka's default), sessions from 1 s.

    python bench/coordinator.py                         # N = 100, 1000, 5000, 10000; fake and real
    python bench/coordinator.py -n 100 --seconds 3 --repeats 5
    python bench/coordinator.py --broker fake           # the fake broker alone
    python bench/coordinator.py --broker fake -n 1000 --profile-server prof.out
    python bench/coordinator.py --broker all -n 1000 --clients 2   # + the serving floor; 2 heartbeat processes

Figures: rebalance = a settled group of N: every member rejoins -> every member holds its
SyncGroup answer (wall ms, and the server's and the load generator's CPU ms in it: the
load generator is not the bottleneck while its CPU stays below the server's);
heartbeats/s = completed Heartbeat round trips per wall second with every member
heartbeating back to back; CPU ms per 1k heartbeats for the server and for the load
generator separately; server RSS growth per member. The fake/real table also gives the
ratios per server CPU second: on a shared machine they measure the brokers' own costs.

The serving floor (``--broker floor`` or ``all``: bench/floor_server.py) answers each request
with pre-encoded bytes, no codec and no coordinator: the least a Python server on the same
loop costs per request. ``--clients P`` runs the heartbeat phase in P load-generator
processes (each with its own connections for its share of the members; their CPU is summed),
for when one process cannot keep a broker busy.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any
from pathlib import Path

from fakebroker.protocol import default_registry
from fakebroker.realkafka import KafkaSettings, RealKafka, start_real_kafka
from fakebroker.server import event_loop

sys.path.insert(0, str(Path(__file__).parent))
from load_client import LoadConnection, heartbeat_all, open_many  # noqa: E402 - bench/ is not a package

REG = default_registry()
JOIN, SYNC = REG["JoinGroupRequest"], REG["SyncGroupRequest"]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PROFILED = str(Path(__file__).with_name("profiled.py"))
FLOOR = str(Path(__file__).with_name("floor_server.py"))
LOAD_CLIENT = str(Path(__file__).with_name("load_client.py"))


INITIAL_DELAY_MS = 3000  # Kafka's default: gathers the first wave of joins into one generation
MIN_SESSION_MS = 1000
# Kafka writes a classic group's state as one record: ~170 bytes a member here, over the
# default 1 MB message.max.bytes from ~6000 members (every SyncGroup then fails with
# UNKNOWN_SERVER_ERROR, Kafka's answer to RECORD_TOO_LARGE).
GROUP_RECORD_MAX = 16 * 1024 * 1024
FORM_TRIES = 5  # untimed rebalances to bring all N members into one generation


@dataclass
class Result:
    broker: str
    members: int
    rebalance_ms: float
    rebalance_server_cpu_ms: float
    rebalance_client_cpu_ms: float
    heartbeats_per_s: float
    server_cpu_ms_per_1k_hb: float
    client_cpu_ms_per_1k_hb: float
    server_rss_bytes_per_member: float


def proc_cpu_s(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def proc_rss(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    return int(open(f"/proc/{pid}/statm").read().split()[1]) * PAGE


def start_server(profile: str | None = None,
                 loop: str = event_loop.DEFAULT_LOOP) -> tuple[subprocess.Popen[str], str]:
    """`fakebroker serve` in its own process on event loop ``loop``; under cProfile counting
    CPU time (stats written to ``profile`` when it stops on SIGTERM) if asked."""
    cmd = [PROFILED, profile] if profile else ["-m", "fakebroker.cli"]
    proc = subprocess.Popen(
        [sys.executable, *cmd, "serve", "--port", "0", "--log-level", "WARNING",
         "--initial-rebalance-delay-ms", str(INITIAL_DELAY_MS),
         "--min-session-timeout-ms", str(MIN_SESSION_MS), "--max-group-size", "1000000",
         "--max-connections", "1000000", "--event-loop", loop],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def start_floor(loop: str = event_loop.DEFAULT_LOOP) -> tuple[subprocess.Popen[str], str]:
    """The serving floor (bench/floor_server.py) in its own process."""
    proc = subprocess.Popen([sys.executable, FLOOR, "--loop", loop], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def start_real(heap_mb: int) -> tuple[RealKafka, int | None]:
    """Apache Kafka with the fake's group settings; its pid when it is a local process
    (a container's CPU and memory are not read: those columns are then NaN)."""
    kafka = start_real_kafka(KafkaSettings(initial_rebalance_delay_ms=INITIAL_DELAY_MS,
                                           min_session_timeout_ms=MIN_SESSION_MS, heap_mb=heap_mb,
                                           properties={"message.max.bytes": GROUP_RECORD_MAX}))
    proc = getattr(kafka, "proc", None)
    return kafka, (proc.pid if proc is not None else None)


def join_req(member_id: str, group: str, metadata: bytes = b"m" * 64) -> object:
    return JOIN.new(group_id=group, session_timeout_ms=60_000, rebalance_timeout_ms=60_000,
                    member_id=member_id, protocol_type="connect",
                    protocols=[JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=metadata)])


async def rebalance(conns: list[LoadConnection], ids: list[str], group: str,
                    metadata: bytes = b"m" * 64) -> tuple[int, str | None]:
    """Every member (re)joins with its id and, once its join is answered, syncs (as a real
    member does: no member waits for the others' joins); the leader sends the assignment,
    one entry per member its JoinGroup answer lists. Returns the generation and None when
    every member got it without error, or what went wrong.

    A rejoin into a Stable group must carry changed metadata: a follower rejoining with
    unchanged metadata is answered at once with the current generation (Kafka's rule), and
    a real broker's request threads do not keep the order the joins were sent in."""
    loop = asyncio.get_running_loop()
    assign = SYNC.cls.SyncGroupRequestAssignment

    def member(c: LoadConnection, m: str) -> asyncio.Future[tuple[Any, Any]]:
        done: asyncio.Future[tuple[Any, Any]] = loop.create_future()

        def joined(f: asyncio.Future[Any]) -> None:
            if f.exception() is not None:  # (the connection was lost)
                done.set_exception(f.exception())  # type: ignore[arg-type]
                return
            j = f.result()
            if j.error_code:
                done.set_result((j, None))
                return
            plan = ([assign(member_id=x.member_id, assignment=b"a" * 32) for x in j.members]
                    if j.leader == m else [])
            sync = c.submit(SYNC.new(group_id=group, generation_id=j.generation_id, member_id=m,
                                     protocol_type="connect", protocol_name="default",
                                     assignments=plan), 5)
            sync.add_done_callback(lambda s: done.set_exception(s.exception())  # type: ignore[arg-type]
                                   if s.exception() is not None else done.set_result((j, s.result())))

        c.submit(join_req(m, group, metadata), 9).add_done_callback(joined)
        return done

    answers = await asyncio.gather(*(member(c, m) for c, m in zip(conns, ids)))
    joins = collections.Counter(j.error_code for j, _ in answers)
    syncs = collections.Counter(s.error_code for _, s in answers if s is not None)
    gens = {j.generation_id for j, _ in answers}
    if set(joins) != {0} or set(syncs) != {0} or len(gens) != 1:
        return -1, (f"join error codes {dict(joins)}, sync error codes {dict(syncs)}, "
                    f"generations {sorted(gens)[:5]}")
    return gens.pop(), None


async def form_group(conns: list[LoadConnection], group: str,
                     pid: int | None) -> tuple[list[str], int, float, float, float]:
    """Members get ids (v9: MEMBER_ID_REQUIRED) and form the group (untimed: it includes the
    initial rebalance delay), then one full rebalance of all N members is timed: every
    member rejoins (with changed metadata, so the first rejoin of any member starts the
    rebalance) and syncs. Returns the ids, the generation, and the timed rebalance's wall
    time and server and client CPU time (ms)."""
    first = await asyncio.gather(*(c.submit(join_req("", group), 9) for c in conns))
    ids = [ex.member_id for ex in first]
    for _ in range(FORM_TRIES):  # a real broker may complete a generation before every
        gen, failed = await rebalance(conns, ids, group)  # member's join is in (10000 members)
        if failed is None:
            break
        print(f"forming the group: {failed}; again", file=sys.stderr)
    else:
        raise RuntimeError(f"the group did not form in one generation in {FORM_TRIES} tries")
    s0, c0, t0 = proc_cpu_s(pid), time.process_time(), time.perf_counter()
    gen, failed = await rebalance(conns, ids, group, b"n" * 64)
    s1, c1, t1 = proc_cpu_s(pid), time.process_time(), time.perf_counter()
    if failed is not None:
        raise RuntimeError(f"the timed rebalance did not complete cleanly: {failed}")
    return ids, gen, (t1 - t0) * 1000, (s1 - s0) * 1000, (c1 - c0) * 1000


async def heartbeat_in_processes(bootstrap: str, ids: list[str], gen: int, group: str,
                                 seconds: float, clients: int, loop: str,
                                 pid: int | None) -> tuple[int, float, float, float]:
    """The heartbeat phase in ``clients`` load-generator processes (bench/load_client.py),
    each with its own connections for its share of the members, started together once all
    are connected. Returns the count, the wall time (the slowest process's), the server's
    CPU seconds over it and the processes' CPU seconds summed."""
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, LOAD_CLIENT, bootstrap, group, str(gen), str(seconds), "--loop", loop,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(clients)]
    try:
        for i, p in enumerate(procs):
            assert p.stdin is not None
            p.stdin.write((json.dumps(ids[i::clients]) + "\n").encode())
            await p.stdin.drain()
        for p in procs:
            assert p.stdout is not None
            if (await p.stdout.readline()).strip() != b"ready":
                raise RuntimeError("a load-generator process did not connect")
        s0 = proc_cpu_s(pid)
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(b"go\n")
            await p.stdin.drain()
        reports = [json.loads(await p.stdout.readline()) for p in procs]  # type: ignore[union-attr]
        s1 = proc_cpu_s(pid)
    finally:
        for p in procs:
            await p.wait()
    return (sum(r["beats"] for r in reports), max(r["wall_s"] for r in reports), s1 - s0,
            sum(r["cpu_s"] for r in reports))


async def one_run(broker: str, bootstrap: str, pid: int | None, n: int, seconds: float, run: int,
                  clients: int = 1, loop: str = event_loop.DEFAULT_LOOP) -> Result:
    group = f"bench-{n}-{run}"
    conns = await open_many(REG, bootstrap, n)
    try:
        # One bound for the whole run instead of a timer per request (the load generator's
        # per-request cost must stay below the broker's; timers in a heap of N cost log N).
        async with asyncio.timeout(600 + seconds):
            rss0 = proc_rss(pid)
            ids, gen, rebalance_ms, reb_server, reb_client = await form_group(conns, group, pid)
            rss1 = proc_rss(pid)
            if clients > 1:
                beats, wall, server_s, client_s = await heartbeat_in_processes(
                    bootstrap, ids, gen, group, seconds, clients, loop, pid)
            else:
                s0, c0, w0 = proc_cpu_s(pid), time.process_time(), time.perf_counter()
                beats = await heartbeat_all(REG, conns, ids, gen, group, seconds)
                s1, c1, w1 = proc_cpu_s(pid), time.process_time(), time.perf_counter()
                wall, server_s, client_s = w1 - w0, s1 - s0, c1 - c0
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    return Result(broker, n, rebalance_ms, reb_server, reb_client, beats / wall, server_s * 1e6 / beats,
                  client_s * 1e6 / beats, (rss1 - rss0) / n)


FIELDS = ("rebalance_ms", "rebalance_server_cpu_ms", "rebalance_client_cpu_ms", "heartbeats_per_s", "server_cpu_ms_per_1k_hb", "client_cpu_ms_per_1k_hb",
          "server_rss_bytes_per_member")


def ratios(rows: list[Result], broker: str = "fake") -> list[dict[str, float]]:
    """``broker``/real per N (fake/real, or floor/real: what any Python server could reach): heartbeats/s (above 1: the fake is faster) and rebalance time
    (below 1: the fake is faster), in wall time and in the server's CPU time (heartbeats
    per server CPU second; the rebalance's server CPU). On a machine shared with other
    work the wall ratios also measure the scheduler's shares: a one-thread Python process
    gets fewer of them than a JVM with many runnable threads."""
    out = []
    by = {(r.broker, r.members): r for r in rows}
    for n in sorted({r.members for r in rows}):
        f, k = by.get((broker, n)), by.get(("real", n))
        if f and k:
            out.append({"members": n, "heartbeats_per_s": f.heartbeats_per_s / k.heartbeats_per_s,
                        "rebalance_ms": f.rebalance_ms / k.rebalance_ms,
                        "heartbeats_per_server_cpu_s":
                            k.server_cpu_ms_per_1k_hb / f.server_cpu_ms_per_1k_hb,
                        "rebalance_server_cpu_ms":
                            f.rebalance_server_cpu_ms / k.rebalance_server_cpu_ms})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, action="append",
                   help="members (repeatable; default 100, 1000, 5000, 10000)")
    p.add_argument("--seconds", type=float, default=3.0, help="heartbeat phase length per run")
    p.add_argument("--repeats", type=int, default=3, help="runs per N; medians are printed")
    p.add_argument("--broker", choices=("both", "fake", "real", "floor", "all"), default="both",
                   help="which brokers to measure (default both, with fake/real ratios; floor: "
                        "bench/floor_server.py, the serving floor; all: floor, fake and real)")
    p.add_argument("--clients", type=int, default=1,
                   help="load-generator processes for the heartbeat phase (default 1: this one)")
    p.add_argument("--kafka-heap-mb", type=int, default=1024, help="the real broker's JVM heap")
    p.add_argument("--loop", choices=list(event_loop.LOOPS), default=event_loop.DEFAULT_LOOP,
                   help="the event loop of the fake broker and of the load generator")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.add_argument("--profile-server", metavar="FILE",
                   help="run the fake broker under cProfile and write its stats to FILE "
                        "(read them with python -m pstats FILE)")
    a = p.parse_args()
    sizes = a.n or [100, 1000, 5000, 10000]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Before the brokers start: they inherit the limit (each member is a connection).
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * max(sizes) + 256)), hard))
    brokers: list[tuple[str, str, int | None]] = []
    fake_proc = floor_proc = kafka = None
    rows = []
    try:
        if a.broker in ("floor", "all"):
            floor_proc, bootstrap = start_floor(a.loop)
            brokers.append(("floor", bootstrap, floor_proc.pid))
            print(f"serving floor at {bootstrap} (pid {floor_proc.pid})", file=sys.stderr)
        if a.broker in ("both", "fake", "all"):
            fake_proc, bootstrap = start_server(a.profile_server, a.loop)
            brokers.append(("fake", bootstrap, fake_proc.pid))
            print(f"fake broker at {bootstrap} (pid {fake_proc.pid})", file=sys.stderr)
        if a.broker in ("both", "real", "all"):
            kafka, pid = start_real(a.kafka_heap_mb)
            brokers.append(("real", kafka.bootstrap, pid))
            print(f"Apache Kafka {kafka.version} at {kafka.bootstrap} ({kafka.backend}, pid {pid})",
                  file=sys.stderr)
        for n in sizes:
            for name, bootstrap, pid in brokers:
                runs = [event_loop.run(one_run(name, bootstrap, pid, n, a.seconds, r, a.clients, a.loop), a.loop)
                        for r in range(a.repeats)]
                med = Result(name, n, *(statistics.median(getattr(r, f) for r in runs) for f in FIELDS))
                rows.append(med)
                print(f"{name} N={n}: done ({a.repeats} runs): {asdict(med)}", file=sys.stderr, flush=True)
    finally:
        if floor_proc is not None:
            floor_proc.terminate()
            floor_proc.wait(30)
        if fake_proc is not None:
            fake_proc.terminate()
            fake_proc.wait(120)  # (under --profile-server it writes its stats first)
        if kafka is not None:
            kafka.stop()
    if a.json:
        print(json.dumps({"results": [asdict(r) for r in rows], "fake_over_real": ratios(rows),
                          "floor_over_real": ratios(rows, "floor")}, indent=2))
        return
    print(f"{'broker':>6} {'members':>8} {'rebalance ms':>13} {'(server CPU':>11} {'client CPU)':>11} "
          f"{'heartbeats/s':>13} {'server CPU ms/1k hb':>20} "
          f"{'client CPU ms/1k hb':>20} {'server RSS B/member':>20}")
    for r in rows:
        print(f"{r.broker:>6} {r.members:>8} {r.rebalance_ms:>13.1f} {r.rebalance_server_cpu_ms:>11.0f} "
              f"{r.rebalance_client_cpu_ms:>11.0f} {r.heartbeats_per_s:>13.0f} "
              f"{r.server_cpu_ms_per_1k_hb:>20.1f} {r.client_cpu_ms_per_1k_hb:>20.1f} "
              f"{r.server_rss_bytes_per_member:>20.0f}")
    print(f"(medians of {a.repeats} runs; {a.seconds}s heartbeat phase each)")
    for name in ("fake", "floor"):
        rs = ratios(rows, name)
        if not rs:
            continue
        print(f"\n{name}/real (heartbeats/s above 1: {name} is faster; rebalance time below 1: {name} is faster)")
        print(f"{'members':>8} {'heartbeats/s':>13} {'rebalance time':>15} "
              f"{'hb per server CPU s':>20} {'rebalance server CPU':>21}")
        for r in rs:
            print(f"{r['members']:>8} {r['heartbeats_per_s']:>13.2f} {r['rebalance_ms']:>15.2f} "
                  f"{r['heartbeats_per_server_cpu_s']:>20.2f} {r['rebalance_server_cpu_ms']:>21.2f}")


if __name__ == "__main__":
    main()
