"""Encode+decode throughput of our codec against kafka-python 3.x and kio, side by side.

One iteration = encode the message body to bytes, then decode those bytes back into an
object, each library through its own public API. Before any timing, the three encodings
of each workload are asserted byte-identical and each decode is checked.

    python bench/codec.py                      # 7 repeats of ~0.2 s per library/workload
    python bench/codec.py --repeats 11 --seconds 0.5 --json

Each measurement is a fixed-count loop timed with ``time.perf_counter_ns``; the count is
calibrated per library to last about ``--seconds``. Libraries are measured round-robin
within each repeat, so slow drift (thermal, other load) hits all of them alike.
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import platform
import statistics
import struct
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakebroker.protocol import default_registry  # noqa: E402

OURS, KP, KIO = "ours", "kafka-python", "kio"
LIBS = (OURS, KP, KIO)

# ---------------------------------------------------------------- realistic payloads

GROUP_ID = "connect-cluster"
MEMBER_ID = "connect-1-5f0c1d9e-7a4b-4c7e-9d61-2b3a8e5f4c10"
INSTANCE_ID = "worker-1"
SESSION_MS, REBALANCE_MS = 10_000, 60_000
PROTOCOL_NAMES = ("sessioned", "compatible", "default")
METADATA_SIZE = 200
ASSIGNMENT_TOPICS = (("orders.v1", 20), ("payments", 20))


def _kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def subscription_metadata(size: int = METADATA_SIZE) -> bytes:
    """A ConsumerProtocolSubscription v0 (topics + user data), user data padded to ``size``."""
    head = struct.pack(">h", 0) + struct.pack(">i", 3) + b"".join(
        _kstr(t) for t in ("orders.v1", "payments", "inventory"))
    pad = size - len(head) - 4
    return head + struct.pack(">i", pad) + bytes(i % 251 for i in range(pad))


def consumer_assignment() -> bytes:
    """A ConsumerProtocolAssignment v0: two topics of 20 partitions, null user data (199 bytes)."""
    out = struct.pack(">hi", 0, len(ASSIGNMENT_TOPICS))
    for topic, parts in ASSIGNMENT_TOPICS:
        out += _kstr(topic) + struct.pack(f">i{parts}i", parts, *range(parts))
    return out + struct.pack(">i", -1)


# ---------------------------------------------------------------- per-library cases

@dataclass
class Case:
    """One library on one workload: a message and its encode/decode calls."""

    obj: Any
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    same: Callable[[Any, Any], bool]  # decoded value equals the original?


def ours_cases() -> dict[str, Case]:
    reg = default_registry()
    jg, sg = reg["JoinGroupRequest"], reg["SyncGroupResponse"]
    meta = subscription_metadata()

    def join(v: int) -> Case:
        P = jg.cls.JoinGroupRequestProtocol  # type: ignore[attr-defined]
        obj = jg.new(group_id=GROUP_ID, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                     member_id=MEMBER_ID, group_instance_id=INSTANCE_ID, protocol_type="connect",
                     protocols=[P(name=n, metadata=meta) for n in PROTOCOL_NAMES])
        enc, dec = jg.encode, jg.decode
        return Case(obj, lambda o: enc(o, v), lambda b: dec(b, v), lambda a, b: a == b)

    sync = sg.new(throttle_time_ms=0, error_code=0, protocol_type="consumer", protocol_name="range",
                  assignment=consumer_assignment())
    senc, sdec = sg.encode, sg.decode
    return {"JoinGroupRequest v5": join(5), "JoinGroupRequest v9": join(9),
            "SyncGroupResponse v5": Case(sync, lambda o: senc(o, 5), lambda b: sdec(b, 5),
                                         lambda a, b: a == b)}


def kafka_python_cases() -> dict[str, Case]:
    from kafka.protocol.consumer.group import JoinGroupRequest, SyncGroupResponse
    meta = subscription_metadata()

    def join(v: int) -> Case:
        P = JoinGroupRequest.JoinGroupRequestProtocol
        obj = JoinGroupRequest(group_id=GROUP_ID, session_timeout_ms=SESSION_MS,
                               rebalance_timeout_ms=REBALANCE_MS, member_id=MEMBER_ID,
                               group_instance_id=INSTANCE_ID, protocol_type="connect",
                               protocols=[P(name=n, metadata=meta) for n in PROTOCOL_NAMES])
        dec = JoinGroupRequest.decode
        # encode() returns a bytearray (copied out of a pooled buffer); decode() takes it as is
        return Case(obj, lambda o: o.encode(version=v), lambda b: dec(b, version=v), _kp_same)

    sync = SyncGroupResponse(throttle_time_ms=0, error_code=0, protocol_type="consumer",
                             protocol_name="range", assignment=consumer_assignment())
    sdec = SyncGroupResponse.decode
    return {"JoinGroupRequest v5": join(5), "JoinGroupRequest v9": join(9),
            "SyncGroupResponse v5": Case(sync, lambda o: o.encode(version=5),
                                         lambda b: sdec(b, version=5), _kp_same)}


def _kp_same(a: Any, b: Any) -> bool:
    # field values only: == also compares the version each object carries
    return a.to_dict() == b.to_dict()


def kio_cases() -> dict[str, Case]:
    from kio.schema.errors import ErrorCode
    from kio.schema.join_group.v5 import request as j5
    from kio.schema.join_group.v9 import request as j9
    from kio.schema.sync_group.v5.response import SyncGroupResponse
    from kio.serial import entity_reader, entity_writer
    from kio.static.primitive import i32Timedelta
    meta = subscription_metadata()

    def ms(n: int) -> Any:
        return i32Timedelta.parse(datetime.timedelta(milliseconds=n))

    def case(cls: type, obj: Any) -> Case:
        write, read = entity_writer(cls), entity_reader(cls)

        def encode(o: Any) -> bytes:
            buf = io.BytesIO()
            write(buf, o)
            return buf.getvalue()

        def decode(b: bytes) -> Any:
            return read(b, 0)[0]

        return Case(obj, encode, decode, lambda a, b: a == b)

    def join(mod: Any) -> Case:
        obj = mod.JoinGroupRequest(
            group_id=GROUP_ID, session_timeout=ms(SESSION_MS), rebalance_timeout=ms(REBALANCE_MS),
            member_id=MEMBER_ID, group_instance_id=INSTANCE_ID, protocol_type="connect",
            protocols=tuple(mod.JoinGroupRequestProtocol(name=n, metadata=meta) for n in PROTOCOL_NAMES))
        return case(mod.JoinGroupRequest, obj)

    sync = SyncGroupResponse(throttle_time=ms(0), error_code=ErrorCode.none, protocol_type="consumer",
                             protocol_name="range", assignment=consumer_assignment())
    return {"JoinGroupRequest v5": join(j5), "JoinGroupRequest v9": join(j9),
            "SyncGroupResponse v5": case(SyncGroupResponse, sync)}


def all_cases() -> dict[str, dict[str, Case]]:
    """workload -> library -> case, after checking identical bytes and faithful decodes."""
    per_lib = {OURS: ours_cases(), KP: kafka_python_cases(), KIO: kio_cases()}
    out: dict[str, dict[str, Case]] = {}
    for workload in per_lib[OURS]:
        cases = {lib: per_lib[lib][workload] for lib in LIBS}
        encoded = {lib: bytes(c.encode(c.obj)) for lib, c in cases.items()}
        ref = encoded[OURS]
        for lib, data in encoded.items():
            assert data == ref, f"{workload}: {lib} encodes differently from ours\n{data.hex()}\n{ref.hex()}"
            back = cases[lib].decode(data)
            assert cases[lib].same(cases[lib].obj, back), f"{workload}: {lib} decode does not round-trip"
        out[workload] = cases
    return out


# ---------------------------------------------------------------- timing

def make_loop(case: Case) -> Callable[[int], int]:
    """A loop of ``n`` encode+decode iterations; returns elapsed nanoseconds."""
    obj, enc, dec = case.obj, case.encode, case.decode
    clock = time.perf_counter_ns

    def loop(n: int) -> int:
        it = range(n)
        t0 = clock()
        for _ in it:
            dec(enc(obj))
        return clock() - t0

    return loop


def calibrate(loop: Callable[[int], int], seconds: float) -> int:
    """Iterations that take about ``seconds`` (this also serves as the warm-up)."""
    n = 1
    while True:
        ns = loop(n)
        if ns >= 20_000_000 or n >= 1 << 26:  # 20 ms is long enough to extrapolate from
            break
        n *= 4
    loop(n)  # one more warm-up at full size
    ns = loop(n)
    return max(1, int(n * seconds * 1e9 / max(ns, 1)))


@dataclass
class Result:
    workload: str
    lib: str
    iterations: int
    ns: list[int]

    @property
    def median_rate(self) -> float:
        return self.iterations * 1e9 / statistics.median(self.ns)

    @property
    def best_rate(self) -> float:
        return self.iterations * 1e9 / min(self.ns)

    @property
    def median_us(self) -> float:
        return statistics.median(self.ns) / self.iterations / 1e3


def run(cases: dict[str, dict[str, Case]], repeats: int, seconds: float,
        progress: Callable[[str], None]) -> list[Result]:
    results: list[Result] = []
    for workload, by_lib in cases.items():
        loops = {lib: make_loop(c) for lib, c in by_lib.items()}
        counts = {lib: calibrate(loop, seconds) for lib, loop in loops.items()}
        ns: dict[str, list[int]] = {lib: [] for lib in loops}
        for r in range(repeats):
            progress(f"{workload}: repeat {r + 1}/{repeats}")
            for lib, loop in loops.items():
                ns[lib].append(loop(counts[lib]))
        results += [Result(workload, lib, counts[lib], ns[lib]) for lib in loops]
    return results


# ---------------------------------------------------------------- report

def versions() -> dict[str, str]:
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "kafka-python": dist_version("kafka-python"), "kio": dist_version("kio")}


def headline(v: dict[str, str]) -> str:
    return (f"Baseline: kafka-python {v['kafka-python']} and kio {v['kio']} on "
            f"{v['implementation']} {v['python']}; ratios are ours / baseline "
            f"(median encode+decode calls/s; goal: >= 2.0x kafka-python, >= 1.0x kio)")


def table(results: list[Result], repeats: int, seconds: float) -> str:
    lines = [f"{repeats} repeats of ~{seconds:g} s per library and workload; one call = encode + decode",
             "",
             f"{'workload':<22} {'library':<13} {'median calls/s':>15} {'best calls/s':>13} "
             f"{'median us/call':>15} {'vs ours':>8}"]
    by_wl: dict[str, dict[str, Result]] = {}
    for r in results:
        by_wl.setdefault(r.workload, {})[r.lib] = r
    for wl, libs in by_wl.items():
        ours = libs[OURS].median_rate
        for lib in LIBS:
            r = libs[lib]
            ratio = "" if lib == OURS else f"{ours / r.median_rate:.2f}x"
            lines.append(f"{wl:<22} {lib:<13} {r.median_rate:>15,.0f} {r.best_rate:>13,.0f} "
                         f"{r.median_us:>15.2f} {ratio:>8}")
        lines.append("")
    lines.append(f"{'workload':<22} {'ours/kafka-python':>18} {'ours/kio':>9}  goal met")
    for wl, libs in by_wl.items():
        rk = libs[OURS].median_rate / libs[KP].median_rate
        ri = libs[OURS].median_rate / libs[KIO].median_rate
        met = "yes" if rk >= 2.0 and ri >= 1.0 else "NO"
        lines.append(f"{wl:<22} {rk:>17.2f}x {ri:>8.2f}x  {met}")
    return "\n".join(lines)


def as_json(results: list[Result], repeats: int, seconds: float) -> dict[str, Any]:
    by_wl: dict[str, dict[str, Any]] = {}
    for r in results:
        w = by_wl.setdefault(r.workload, {"libraries": {}})
        w["libraries"][r.lib] = {"iterations": r.iterations, "ns": r.ns,
                                 "median_calls_per_s": r.median_rate, "best_calls_per_s": r.best_rate,
                                 "median_us_per_call": r.median_us}
    for w in by_wl.values():
        libs = w["libraries"]
        ours = libs[OURS]["median_calls_per_s"]
        w["ours_over_kafka_python"] = ours / libs[KP]["median_calls_per_s"]
        w["ours_over_kio"] = ours / libs[KIO]["median_calls_per_s"]
    v = versions()
    return {"baseline": headline(v), "versions": v, "repeats": repeats, "seconds": seconds,
            "workloads": by_wl}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="measurements per library and workload")
    ap.add_argument("--seconds", type=float, default=0.2, help="target duration of one measurement")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.seconds <= 0:
        ap.error("--repeats must be >= 1 and --seconds > 0")

    cases = all_cases()  # asserts identical bytes before anything is timed
    if not args.json:
        print(headline(versions()), flush=True)

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"\r{msg:<60}", end="", file=sys.stderr, flush=True)

    results = run(cases, args.repeats, args.seconds, progress)
    progress("")
    if not args.quiet:
        print("\r", end="", file=sys.stderr)
    if args.json:
        print(json.dumps(as_json(results, args.repeats, args.seconds), indent=2))
    else:
        print(table(results, args.repeats, args.seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
