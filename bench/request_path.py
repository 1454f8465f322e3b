"""The fake broker's Python request path in process, without sockets: CPU per heartbeat and
per member of a rebalance (the broker's share only: this script's own encoding and decoding
is not counted), function calls per heartbeat, and the collector's share (all of it).

Each member is a `Link` (the server's asyncio Protocol) on a stub transport; requests are
fed to `data_received` and answers read back from the stub. What this leaves out is the
loop's and the kernel's share of a socket round trip (see `coordinator.py --broker floor`
for that), so it measures the broker's own code: on a machine shared with other work its
CPU figures move far less than `coordinator.py`'s, and the call count not at all.

    python bench/request_path.py -n 1000 -n 5000 [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import pstats
import time
from typing import Any

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import Struct, default_registry
from fakebroker.protocol.framing import decode_response, encode_request
from fakebroker.server import event_loop
from fakebroker.server.broker import FakeBroker
from fakebroker.server.connection import Link
from fakebroker.server.config import BrokerConfig
from fakebroker.server.serve_cli import FULL_GC_EVERY

REG = default_registry()
JOIN, SYNC, HB = REG["JoinGroupRequest"], REG["SyncGroupRequest"], REG["HeartbeatRequest"]
JOIN_V, SYNC_V, HB_V = 9, 5, 4


class _Transport:
    """Keeps what the broker writes."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _Members:
    def __init__(self, broker: FakeBroker, n: int) -> None:
        self.links = []
        for _ in range(n):
            link, t = Link(broker), _Transport()
            link.connection_made(t)  # type: ignore[arg-type]
            self.links.append((link, t))
        self.ids: list[str] = []
        self.broker_cpu = 0.0  # CPU seconds in the broker's code (not in encoding or decoding here)

    async def answers(self, key: int, version: int) -> list[Any]:
        """Every member's next answer (parked ones come from the loop: wait for them)."""
        c0 = time.process_time()
        for turn in range(2000):
            if all(t.out for _, t in self.links):
                break
            await asyncio.sleep(0 if turn < 50 else 0.01)
        else:
            raise RuntimeError(f"{sum(1 for _, t in self.links if not t.out)} member(s) got no answer")
        self.broker_cpu += time.process_time() - c0
        return [decode_response(REG, t.out.pop(0)[4:], key, version).body for _, t in self.links]

    def send(self, frames: list[bytes]) -> None:
        c0 = time.process_time()
        for (link, _), f in zip(self.links, frames):
            link.data_received(f)
        self.broker_cpu += time.process_time() - c0


def _join(member_id: str, metadata: bytes) -> Struct:
    return JOIN.new(group_id="g", session_timeout_ms=60_000, rebalance_timeout_ms=60_000, member_id=member_id,
                    protocol_type="connect",
                    protocols=[JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=metadata)])


async def _rebalance(m: _Members, metadata: bytes) -> int:
    """Every member rejoins and syncs (the leader with N assignments), as bench/coordinator.py."""
    m.send([encode_request(REG, _join(i, metadata), JOIN_V, 2, "bench", size_prefix=True) for i in m.ids])
    joins = await m.answers(11, JOIN_V)
    if {j.error_code for j in joins} != {0}:
        raise RuntimeError(f"join errors {sorted({j.error_code for j in joins})}")
    assign = SYNC.cls.SyncGroupRequestAssignment
    syncs = []
    for i, j in zip(m.ids, joins):
        plan = [assign(member_id=x.member_id, assignment=b"a" * 32) for x in j.members] if j.leader == i else []
        syncs.append(encode_request(REG, SYNC.new(group_id="g", generation_id=j.generation_id, member_id=i,
                                                  protocol_type="connect", protocol_name="default",
                                                  assignments=plan), SYNC_V, 3, "bench", size_prefix=True))
    m.send(syncs)
    if {s.error_code for s in await m.answers(14, SYNC_V)} != {0}:
        raise RuntimeError("sync errors")
    return int(joins[0].generation_id)


async def measure(n: int, heartbeats: int, profile: bool) -> dict[str, float]:
    broker = FakeBroker(BrokerConfig(port=0, max_connections=10**7),
                        CoordinatorConfig(initial_rebalance_delay_ms=3000, min_session_timeout_ms=1000))
    await broker.start()
    try:
        m = _Members(broker, n)
        m.send([encode_request(REG, _join("", b"m"), JOIN_V, 1, "bench", size_prefix=True)] * n)
        m.ids = [j.member_id for j in await m.answers(11, JOIN_V)]
        # Forms the group after the initial delay, which (as in coordinator.py) outlasts
        # sending every join: requests fire the coordinator's due timers too.
        await _rebalance(m, b"x" * 64)
        collections: list[tuple[int, float]] = []
        started = [0.0]

        def watch(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                started[0] = time.process_time()
            else:
                collections.append((info["generation"], time.process_time() - started[0]))

        gc.callbacks.append(watch)
        m.broker_cpu = 0.0
        gen = await _rebalance(m, b"n" * 64)
        rebalance_s = m.broker_cpu
        gc.callbacks.remove(watch)
        gc_ms = sum(t for _, t in collections) * 1e3
        frames = [encode_request(REG, HB.new(group_id="g", generation_id=gen, member_id=i), HB_V, 7, "bench",
                                 size_prefix=True) for i in m.ids]
        rounds = max(1, heartbeats // n)
        prof = cProfile.Profile()
        c2 = time.process_time()
        for _ in range(rounds):
            m.send(frames)
        c3 = time.process_time()
        prof.enable()
        m.send(frames)
        prof.disable()
        for _, t in m.links:
            if decode_response(REG, t.out[-1][4:], 12, HB_V).body.error_code:
                raise RuntimeError("heartbeat error")
            t.out.clear()
        stats = pstats.Stats(prof)
        if profile:
            stats.sort_stats("tottime").print_stats(25)
        return {"members": n, "rebalance_us_per_member": rebalance_s * 1e6 / n,
                "rebalance_gc_ms": gc_ms, "rebalance_collections": len(collections),
                "heartbeat_us": (c3 - c2) * 1e6 / (rounds * n), "calls_per_heartbeat": stats.total_calls / n}
    finally:
        await broker.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, action="append", help="members (repeatable; default 1000, 5000)")
    p.add_argument("--heartbeats", type=int, default=50_000, help="heartbeats timed per size")
    p.add_argument("--repeats", type=int, default=3, help="runs per size; the lowest CPU is printed")
    p.add_argument("--profile", action="store_true", help="print a cProfile of one round of heartbeats")
    a = p.parse_args()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_GC_EVERY)  # as `fakebroker serve` runs
    print(f"{'members':>8} {'rebalance us/member':>20} {'(GC ms':>7} {'collections)':>12} "
          f"{'heartbeat us':>13} {'calls/heartbeat':>16}")
    for n in a.n or [1000, 5000]:
        runs = [event_loop.run(measure(n, a.heartbeats, a.profile and r == 0)) for r in range(a.repeats)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(f"{n:>8} {best['rebalance_us_per_member']:>20.1f} {best['rebalance_gc_ms']:>7.1f} "
              f"{best['rebalance_collections']:>12.0f} {best['heartbeat_us']:>13.2f} "
              f"{best['calls_per_heartbeat']:>16.1f}", flush=True)
    print(f"(lowest of {a.repeats} runs each: CPU time of this process; no sockets)")


if __name__ == "__main__":
    main()
