"""Availability under a maximal legal frame, and ``serve --record`` memory.

    python bench/frame_stall.py                    # both measurements
    python bench/frame_stall.py --only stall       # p99 heartbeat latency, with / without
    python bench/frame_stall.py --only record --requests 100000

stall: a `fakebroker serve` process (default --max-frame-bytes); one member joined and
synced heartbeats back to back on its own connection for --seconds, while (in the "with"
run) another connection sends JoinGroup v5 frames of the largest size the broker accepts,
packed with empty 6-byte protocols (the worst case for decoding: one array element per 6
bytes), one after another. Prints heartbeat count, p50, p99 and max latency for both runs.

record: `fakebroker serve --record DIR`; --requests ApiVersions round trips on one
connection; prints the server's RSS (from /proc) every 10% of the way: flat means the
recorder holds nothing per request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry
from fakebroker.server.config import DEFAULT_MAX_FRAME_BYTES

REG = default_registry()
JOIN, SYNC, HB = REG["JoinGroupRequest"], REG["SyncGroupRequest"], REG["HeartbeatRequest"]


def start_server(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    ready = Path(tempfile.mkdtemp()) / "ready"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "fakebroker.cli", "serve", "--port", "0",
                             "--ready-file", str(ready), "--log-level", "WARNING", *extra],
                            env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the broker did not start")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worst_join_frame(max_frame: int, correlation_id: int) -> bytes:
    """A JoinGroup v5 request frame of exactly ``max_frame`` bytes (no size prefix counted)
    whose protocols are empty names with empty metadata."""
    head = struct.pack(">hhih", 11, 5, correlation_id, 1) + b"x"
    body = (struct.pack(">h", 3) + b"big" + struct.pack(">ii", 10000, 10000) + struct.pack(">h", 0)
            + struct.pack(">h", -1) + struct.pack(">h", 7) + b"connect")
    n = (max_frame - len(head) - len(body) - 4) // 6
    frame = head + body + struct.pack(">i", n) + b"\x00\x00\x00\x00\x00\x00" * n
    return struct.pack(">i", len(frame)) + frame


async def joined_member(bootstrap: str) -> tuple[KafkaConnection, str, int]:
    conn = await KafkaConnection.open(bootstrap, timeout_s=120)
    proto = [JOIN.cls.JoinGroupRequestProtocol(name="default", metadata=b"\x00")]
    new = lambda m: JOIN.new(group_id="hb", session_timeout_ms=30000, rebalance_timeout_ms=30000,  # noqa: E731
                             member_id=m, protocol_type="connect", protocols=proto)
    member = (await conn.send(new(""), 5)).response.member_id
    j = (await conn.send(new(member), 5)).response
    await conn.send(SYNC.new(group_id="hb", generation_id=j.generation_id, member_id=member,
                             assignments=[]), 3)
    return conn, member, j.generation_id


async def heartbeats(bootstrap: str, seconds: float, big: bool, max_frame: int) -> list[float]:
    conn, member, gen = await joined_member(bootstrap)
    stop = time.monotonic() + seconds
    sent = 0

    async def flood() -> None:
        nonlocal sent
        host, port = bootstrap.rsplit(":", 1)
        _, w = await asyncio.open_connection(host, int(port))
        cid = 1
        while time.monotonic() < stop:
            w.write(worst_join_frame(max_frame, cid))
            await w.drain()
            sent += 1
            cid += 1
            await asyncio.sleep(0.5)
        w.close()

    flooder = asyncio.ensure_future(flood()) if big else None
    lat = []
    hb = HB.new(group_id="hb", generation_id=gen, member_id=member)
    while time.monotonic() < stop:
        t = time.perf_counter()
        await conn.send(hb, 3)
        lat.append((time.perf_counter() - t) * 1000)
    if flooder:
        await flooder
    await conn.close()
    print(f"  big frames sent: {sent}" if big else "  no big frames", flush=True)
    return lat


def stall(seconds: float, max_frame: int) -> None:
    proc, bootstrap = start_server("--max-frame-bytes", str(max_frame))
    try:
        for big in (False, True):
            lat = sorted(asyncio.run(heartbeats(bootstrap, seconds, big, max_frame)))
            p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
            print(f"{'with' if big else 'without'} {max_frame}-byte JoinGroup frames: "
                  f"{len(lat)} heartbeats, p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, "
                  f"max {lat[-1]:.2f} ms; server RSS {rss_mb(proc.pid):.0f} MB", flush=True)
    finally:
        proc.terminate()
        proc.wait()


async def _requests(bootstrap: str, n: int, pid: int) -> None:
    conn = await KafkaConnection.open(bootstrap, timeout_s=60)
    req = REG["ApiVersionsRequest"].new()
    window = 64
    for i in range(0, n, window):
        futs = [conn.submit(req, 0) for _ in range(min(window, n - i))]
        for f in futs:
            await conn.wait(f)
        if (i // window) % max(1, n // window // 10) == 0:
            print(f"  {i:>7} requests: server RSS {rss_mb(pid):.1f} MB", flush=True)
    print(f"  {n:>7} requests: server RSS {rss_mb(pid):.1f} MB", flush=True)
    await conn.close()


def record(n: int) -> None:
    out = Path(tempfile.mkdtemp())
    proc, bootstrap = start_server("--record", str(out))
    try:
        asyncio.run(_requests(bootstrap, n, proc.pid))
    finally:
        proc.terminate()
        proc.wait()
    files = list(out.glob("*.jsonl"))
    print(f"transcript: {files[0]} ({files[0].stat().st_size / 1e6:.0f} MB)" if files else "no transcript")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("stall", "record"))
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES)
    ap.add_argument("--requests", type=int, default=100_000)
    args = ap.parse_args()
    if args.only in (None, "stall"):
        stall(args.seconds, args.max_frame_bytes)
    if args.only in (None, "record"):
        record(args.requests)


if __name__ == "__main__":
    main()
