"""``python -m fakebroker.realkafka``: provision and run a real Apache Kafka broker.

    python -m fakebroker.realkafka resolve       # fetch the jars once (CI's setup runs this)
    python -m fakebroker.realkafka start         # run one until Ctrl-C; prints HOST:PORT
                                                 # (Kafka's default group settings)
    python -m fakebroker.realkafka doctor        # what would be used, and why
    python -m fakebroker.realkafka image         # the local Kafka image (built once; needs an engine)
    python -m fakebroker.realkafka diff [NAME..] # differential scenarios: Kafka vs the fake

Exit codes: 0 done, 1 the broker could not be provisioned or started (the message says
why and what to do), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import KAFKA_VERSION, KafkaSettings, RealKafkaError, choose_backend, start_real_kafka
from ..cli_text import add_version, plain
from .cli import run_command, serve_until_signalled
from .provision import cached_libs, ensure_resolved, find_java, kafka_home
from .settings import (KAFKA_INITIAL_REBALANCE_DELAY_MS, KAFKA_MAX_SESSION_TIMEOUT_MS,
                       KAFKA_MIN_SESSION_TIMEOUT_MS)


def _resolve(args: argparse.Namespace) -> int:
    cached = cached_libs()
    if cached is not None and not args.verbose:
        print(f"Apache Kafka {KAFKA_VERSION} jars: {cached} (cached)")
        return 0
    libs = ensure_resolved(quiet=False)
    print(f"Apache Kafka {KAFKA_VERSION} jars: {libs} ({sum(1 for _ in libs.glob('*.jar'))} jars)")
    return 0


def start_settings(args: argparse.Namespace) -> KafkaSettings:
    """What ``start`` runs the broker with."""
    return KafkaSettings(port=args.port, initial_rebalance_delay_ms=args.initial_rebalance_delay_ms,
                         min_session_timeout_ms=args.min_session_timeout_ms,
                         max_session_timeout_ms=args.max_session_timeout_ms,
                         properties=dict(p.split("=", 1) for p in args.property or []))


def _start(args: argparse.Namespace) -> int:
    kafka = start_real_kafka(start_settings(args), backend=args.backend, verbose=True)
    return serve_until_signalled(kafka, kafka.bootstrap)


def _image(args: argparse.Namespace) -> int:
    """The Kafka image the docker backend would run, made now (the engine wrapper runs this
    before the tests, so no test waits for the first build)."""
    import time

    from .docker_backend import choose_image
    t0 = time.monotonic()
    image, why = choose_image()
    print(f"{image} ({why}; {time.monotonic() - t0:.1f} s)")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    report: dict[str, object] = {"kafka_version": KAFKA_VERSION, "cache": str(kafka_home())}
    try:
        j = find_java()
        report["java"] = f"{j.path} ({j.version})"
    except RealKafkaError as e:
        report["java"] = f"MISSING: {e}"
    libs = cached_libs()
    report["jars"] = str(libs) if libs else "not resolved yet (run `python -m fakebroker.realkafka resolve`)"
    report["backend"] = "%s (%s)" % choose_backend(args.backend)
    print(json.dumps(report, indent=2))
    return 0


def _diff(args: argparse.Namespace) -> int:
    import asyncio

    from .differential import load_accepted, render_report, run_both, stale, unaccepted
    from .scenarios import DIFF_SETTINGS, SCENARIOS, TOPIC, TOPIC_PARTITIONS
    from .twin import start_twin

    names = args.scenario or sorted(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenarios {unknown}; known: {', '.join(sorted(SCENARIOS))}", file=sys.stderr)
        return 2
    accepted = load_accepted(args.accepted) if args.accepted else load_accepted()
    kafka = start_real_kafka(DIFF_SETTINGS, backend=args.backend)
    twin = start_twin(DIFF_SETTINGS, topics={TOPIC: TOPIC_PARTITIONS})
    failed = 0
    try:
        async def run_all() -> list:  # type: ignore[type-arg]
            return list(await asyncio.gather(*(run_both(SCENARIOS[n], n, kafka.bootstrap, twin.bootstrap)
                                               for n in names)))
        for r in asyncio.run(run_all()):
            bad, old = unaccepted(r.differences, accepted), stale(accepted, r)
            ok = not bad and not old and r.real.aborted is None
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {r.scenario}: {len(r.real.steps)} steps, "
                  f"{len(r.differences)} differences ({len(r.differences) - len(bad)} accepted)")
            if not ok or args.verbose:
                print(render_report(r, bad, old))
    finally:
        twin.stop()
        kafka.stop()
    print(f"{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fakebroker.realkafka", description=plain(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(p, "fakebroker.realkafka")
    p.add_argument("-v", "--verbose", action="store_true", help="resolve: resolve again even when cached; diff: print every scenario's report")
    backend = dict(choices=("auto", "process", "docker", "external"),
                   help="docker (the apache/kafka image), process (a local JVM), external (REAL_KAFKA_BOOTSTRAP); "
                        "default REAL_KAFKA_BACKEND, else auto: external when that is set, docker when an "
                        "engine answers, else process")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("resolve", help="resolve the broker's jars into the cache (offline once done)")
    st = sub.add_parser("start", help="start a broker and keep it running until interrupted")
    st.add_argument("--backend", **backend)  # type: ignore[arg-type]
    st.add_argument("--port", type=int, default=0, help="client port (0: a free one)")
    # Kafka's own defaults, which a conformance target's [timing] assumes too.
    st.add_argument("--initial-rebalance-delay-ms", type=int, default=KAFKA_INITIAL_REBALANCE_DELAY_MS,
                    help="group.initial.rebalance.delay.ms (default %(default)s)")
    st.add_argument("--min-session-timeout-ms", type=int, default=KAFKA_MIN_SESSION_TIMEOUT_MS,
                    help="group.min.session.timeout.ms (default %(default)s)")
    st.add_argument("--max-session-timeout-ms", type=int, default=KAFKA_MAX_SESSION_TIMEOUT_MS,
                    help="group.max.session.timeout.ms (default %(default)s)")
    st.add_argument("--property", "-p", action="append", metavar="NAME=VALUE",
                    help="a further server property (repeatable)")
    sub.add_parser("image", help="make the Kafka image the docker backend runs (official, else built here)")
    dr = sub.add_parser("doctor", help="print what would be used")
    dr.add_argument("--backend", **backend)  # type: ignore[arg-type]
    df = sub.add_parser("diff", help="run the differential scenarios against Kafka and the fake")
    df.add_argument("scenario", nargs="*", help="scenario names (default: all)")
    df.add_argument("--backend", **backend)  # type: ignore[arg-type]
    df.add_argument("--accepted", type=Path, help="accepted-differences file (default: the project's)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    return run_command(p, args, {"resolve": _resolve, "start": _start, "doctor": _doctor, "image": _image, "diff": _diff},
                       "realkafka")


if __name__ == "__main__":
    sys.exit(main())
