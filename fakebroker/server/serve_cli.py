"""``fakebroker serve``: run a fake broker until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ..coordinator.config import CoordinatorConfig
from ..exit_codes import EXIT_BROKEN, EXIT_OK, EXIT_USAGE
from ..protocol import Registry
from . import event_loop
from .broker import FakeBroker
from .config import (DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_FRAME_BYTES,
                     MIN_FRAME_BYTES, BrokerConfig, TlsConfig, Topic)
from .proxy import UpstreamError
from .acl import parse_acl_file
from .sasl import SaslConfig, parse_users_file
from .sasl.credentials import MECHANISMS

log = logging.getLogger(__name__)


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    d = CoordinatorConfig()
    p = sub.add_parser(
        "serve", parents=[common], help="run a fake Kafka broker and group coordinator",
        description="Run a fake Kafka broker that is the group coordinator for every group. "
                    "Once it accepts connections it prints its bound HOST:PORT as one line on "
                    "stdout (and writes it to --ready-file). Log lines go to stderr. Stop it "
                    "with Ctrl-C or SIGTERM.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (loopback by default)")
    p.add_argument("--port", type=int, default=9092, help="port to bind; 0 picks a free one")
    p.add_argument("--advertised-host", metavar="HOST",
                   help="the host Metadata and FindCoordinator name (and the ready line prints) "
                        "instead of the bound address: for a broker bound to 0.0.0.0 in a container")
    p.add_argument("--ready-file", type=Path, metavar="PATH",
                   help="write HOST:PORT to PATH once the broker accepts connections")
    p.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS",
                   help="a topic to report in Metadata (repeatable; it holds no records)")
    p.add_argument("--initial-rebalance-delay-ms", type=int,
                   default=d.initial_rebalance_delay_ms,
                   help="group.initial.rebalance.delay.ms: wait for more members when an "
                        "empty group gets its first JoinGroup")
    p.add_argument("--min-session-timeout-ms", type=int, default=d.min_session_timeout_ms,
                   help="group.min.session.timeout.ms: smaller session timeouts are refused")
    p.add_argument("--max-session-timeout-ms", type=int, default=d.max_session_timeout_ms,
                   help="group.max.session.timeout.ms: larger session timeouts are refused")
    p.add_argument("--max-group-size", type=int, default=d.max_group_size,
                   help="group.max.size: members beyond it get GROUP_MAX_SIZE_REACHED")
    p.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES,
                   help="largest request frame accepted; a larger one closes the connection "
                        "(Kafka's socket.request.max.bytes is 100 MB, but it decodes on many "
                        "threads: 8 MiB is ample for group traffic and bounds what one client "
                        "costs the others)")
    p.add_argument("--idle-timeout-ms", type=int, default=DEFAULT_IDLE_TIMEOUT_MS,
                   help="connections.max.idle.ms: close a connection that has no request in "
                        "progress and sends nothing, or only part of a frame, for this long; "
                        "0 never closes")
    p.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS,
                   help="open connections at most; one more is closed at once (logged at "
                        "the 1st, 2nd, 4th, ... occurrence)")
    p.add_argument("--api-max-version", action="append", default=[], metavar="API=N",
                   help="advertise at most version N of API (name or key), e.g. JoinGroup=5; "
                        "pins clients to old versions (repeatable)")
    p.add_argument("--upstream", metavar="HOST:PORT",
                   help="proxy mode: forward every API except the group APIs, FindCoordinator "
                        "and ApiVersions to this real Kafka broker, rewriting broker addresses "
                        "to ours (Metadata then reports the upstream's topics; --topic only feeds the "
                        "assignor of KIP-848 consumer groups)")
    sec = p.add_argument_group(
        "security", "The listener's security protocol follows from these: PLAINTEXT (none), SSL "
                    "(--tls-cert/--tls-key), SASL_PLAINTEXT (--sasl-mechanism/--sasl-users) or "
                    "SASL_SSL (both).")
    sec.add_argument("--tls-cert", type=Path, metavar="PEM",
                     help="serve TLS with this certificate chain (needs --tls-key)")
    sec.add_argument("--tls-key", type=Path, metavar="PEM", help="the certificate's private key")
    sec.add_argument("--sasl-mechanism", action="append", default=[], choices=MECHANISMS,
                     help="require SASL authentication with this mechanism (repeatable; "
                          "SaslHandshake lists them in this order; needs --sasl-users)")
    sec.add_argument("--sasl-users", type=Path, metavar="FILE",
                     help="who may authenticate: NAME=PASSWORD per line, # comments "
                          "(SCRAM credentials are derived from them at start, 4096 iterations)")
    sec.add_argument("--acls", type=Path, metavar="FILE",
                     help="authorize with these ACLs, one 'ALLOW|DENY PRINCIPAL OPERATION "
                          "TYPE:PATTERN' per line (e.g. 'allow User:alice Read Group:connect-*'; "
                          "types Group, Topic, Cluster; operations Read, Write, Describe, All); "
                          "a request nothing allows gets GROUP_/TOPIC_AUTHORIZATION_FAILED as "
                          "Kafka answers it. Without SASL every client is User:ANONYMOUS")
    p.add_argument("--log-level", default="INFO",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log verbosity")
    p.add_argument("--event-loop", default=event_loop.DEFAULT_LOOP, choices=list(event_loop.LOOPS),
                   help="the event loop to serve on: uvloop (libuv, about half the loop's CPU "
                        "per request) or asyncio's own")
    p.set_defaults(func=cmd_serve)


def _parse_caps(values: list[str], registry: Registry) -> dict[int, int]:
    caps = {}
    for text in values:
        api, sep, n = text.partition("=")
        if not sep:
            raise ValueError(f"--api-max-version {text!r}: expected API=N")
        try:
            caps[registry.by_api_name(api)] = int(n)
        except KeyError as e:
            raise ValueError(f"--api-max-version {text!r}: {e.args[0]}") from None
        except ValueError:
            raise ValueError(f"--api-max-version {text!r}: {n!r} is not a number") from None
    return caps


def build_broker(args: argparse.Namespace, registry: Registry, **extra: Any) -> FakeBroker:
    """The broker ``serve``'s options describe; ``extra`` goes to FakeBroker as is (upstream,
    strict_topics). A bad option raises ValueError, before any socket is bound."""
    check_options(args)
    config = BrokerConfig(host=args.host, port=args.port,
                          topics=[Topic.parse(t) for t in args.topic],
                          max_frame_bytes=args.max_frame_bytes,
                          idle_timeout_ms=args.idle_timeout_ms or None,
                          max_connections=args.max_connections,
                          advertised_host=args.advertised_host, api_max_versions=_parse_caps(args.api_max_version, registry),
                          tls=_tls(args), sasl=_sasl(args),
                          acls=parse_acl_file(args.acls) if getattr(args, "acls", None) else None)
    coord = CoordinatorConfig(initial_rebalance_delay_ms=args.initial_rebalance_delay_ms,
                              min_session_timeout_ms=args.min_session_timeout_ms,
                              max_session_timeout_ms=args.max_session_timeout_ms,
                              max_group_size=args.max_group_size)
    # A layer above may add an option naming where connect groups persist (``--group-log``,
    # fakebroker.realkafka.serve_group_log): it opens the store, the server only takes it.
    opener = getattr(args, "open_connect_store", None)
    opened = opener(args) if opener is not None else None
    if opened is not None:
        store, records = opened
        try:
            return FakeBroker(config, coord, registry=registry, connect_store=store,
                              connect_records=records, **extra)
        except BaseException:
            store.close()
            raise
    return FakeBroker(config, coord, registry=registry, **extra)


def _tls(args: argparse.Namespace) -> TlsConfig | None:
    cert, key = getattr(args, "tls_cert", None), getattr(args, "tls_key", None)
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ValueError("--tls-cert and --tls-key go together")
    tls = TlsConfig(cert, key)
    tls.server_context()  # unreadable or mismatched files are refused before binding
    return tls


def _sasl(args: argparse.Namespace) -> SaslConfig | None:
    mechanisms, users = getattr(args, "sasl_mechanism", []), getattr(args, "sasl_users", None)
    if not mechanisms and users is None:
        return None
    if not mechanisms or users is None:
        raise ValueError("--sasl-mechanism and --sasl-users go together")
    return SaslConfig(tuple(mechanisms), parse_users_file(users))


def check_options(args: argparse.Namespace) -> None:
    """Options argparse cannot check alone; a ValueError names the option and the rule."""
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: not a TCP port (0-65535; 0 picks a free one)")
    if args.max_frame_bytes < MIN_FRAME_BYTES:
        raise ValueError(f"--max-frame-bytes {args.max_frame_bytes}: must be at least "
                         f"{MIN_FRAME_BYTES} (a request header alone needs that)")
    if args.idle_timeout_ms < 0:
        raise ValueError(f"--idle-timeout-ms {args.idle_timeout_ms}: must not be negative")
    if args.max_connections < 1:
        raise ValueError(f"--max-connections {args.max_connections}: must be at least 1")
    if args.advertised_host is not None and not args.advertised_host.strip():
        raise ValueError("--advertised-host: must not be empty")
    ready = getattr(args, "ready_file", None)
    if ready is not None:
        parent = ready.parent
        if not parent.is_dir():
            raise ValueError(f"--ready-file {ready}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise ValueError(f"--ready-file {ready}: directory {parent} is not writable")


# A full collection walks every object the process holds, on the event loop: with thousands
# of members that is ~100 ms each, and CPython's default (one per 10 middle-generation
# collections, once long-lived objects grew by a quarter) ran 13 of them in one
# 5000-member benchmark run (1.3 of its 5.7 s CPU). What they walk is mostly long-lived
# group and connection state, so the serving process runs them ten times less often
# (young collections, which find short-lived cycles, are unchanged).
FULL_GC_EVERY = 100


def cmd_serve(args: argparse.Namespace, registry: Registry) -> int:
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        broker = build_broker(args, registry, upstream=args.upstream)  # checks --upstream too
    except ValueError as e:
        print(f"fakebroker serve: {e}", file=sys.stderr)
        return EXIT_USAGE
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_GC_EVERY)
    try:
        event_loop.run(_serve(broker, args.ready_file), args.event_loop)
    except UpstreamError as e:  # the upstream does not answer: the broker cannot run
        print(f"fakebroker serve: {e}", file=sys.stderr)
        return EXIT_BROKEN
    except OSError as e:  # the port is taken, or not ours to bind: could not run
        print(f"fakebroker serve: cannot listen on {args.host}:{args.port}: {e.strerror or e}",
              file=sys.stderr)
        return EXIT_BROKEN
    return EXIT_OK


def stop_on_signals() -> asyncio.Event:
    """An event SIGINT or SIGTERM sets (where the loop supports signal handlers)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def write_ready_file(ready_file: Path, bootstrap: str) -> None:
    tmp = ready_file.with_name(ready_file.name + ".tmp")
    tmp.write_text(bootstrap + "\n")
    tmp.replace(ready_file)  # atomic: a reader never sees half a line


async def _serve(broker: FakeBroker, ready_file: Path | None) -> None:
    stop = stop_on_signals()
    async with broker:
        if ready_file is not None:
            write_ready_file(ready_file, broker.bootstrap)
        log.info("security protocol %s", broker.config.security_protocol)
        print(broker.bootstrap, flush=True)  # last: whoever reads it may rely on the file
        await stop.wait()
