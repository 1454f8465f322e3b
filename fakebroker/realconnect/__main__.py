"""``python -m fakebroker.realconnect resolve``: fetch the Connect worker's jars once.

``python -m fakebroker.realconnect start --bootstrap HOST:PORT [options]`` runs one
distributed worker until SIGINT/SIGTERM and prints its REST URL once it answers; with
``--connectors conn-a:2,conn-b:1`` it then creates those connectors through REST (Kafka's
file connectors; see ``fakebroker.realconnect.connectors``). This is the command the
bundled worker targets (``fixtures/targets/apache-connect-*.toml``) start.

With ``--host SOCKET`` the worker runs in a worker host's JVM instead of one of its own:

``python -m fakebroker.realconnect host --socket SOCKET`` runs that host (one JVM for many
workers, ``fakebroker.realconnect.host``) until SIGINT/SIGTERM; it prints SOCKET once it
listens. The bundled targets' ``host_command``.

``python -m fakebroker.realconnect seed --bootstrap HOST:PORT --topic-prefix P --connectors
conn-a:2,conn-b:1`` writes those connectors into the config topic of the workers started
with ``--topic-prefix P``, as a worker would, without starting one (``seed``): the bundled
targets' ``seed_command``. Exit codes: 0 done, 1 failure (the worker's log tail is printed),
2 usage.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

from ..cli_text import add_version, plain
from ..realkafka.cli import run_command, serve_until_signalled
from . import PROTOCOLS, ConnectWorker, WorkerSettings, connect_build
from .connectors import parse_connectors
from .provision import CONNECT_VERSION
from .host import WorkerHost
from .worker import config_topic, stdout_appending


def _resolve(args: argparse.Namespace) -> int:
    build = connect_build(args.connect, quiet=False)
    host = "yes" if build.hostable else f"no ({build.not_hostable_reason})"
    print(f"Kafka Connect {build.version} jars: {build.libs}; logging: {'log4j2' if build.log4j2 else 'log4j 1'}; "
          f"worker host: {host}")
    return 0


def _exit_on_sigterm(*_: object) -> None:
    raise SystemExit(0)


def _start(args: argparse.Namespace) -> int:
    specs = parse_connectors(args.connectors)
    # A SIGTERM while the worker is still starting stops its JVM with SIGTERM too (start()
    # cleans up on any exit), so even a worker stopped that early leaves its group.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    w = ConnectWorker(WorkerSettings(
        bootstrap=args.bootstrap, group=args.group, protocol=args.protocol, rest_port=args.rest_port,
        client_id=args.client_id, topic_prefix=args.topic_prefix, status_topic=args.status_topic,
        session_timeout_ms=args.session_timeout_ms,
        rebalance_timeout_ms=args.rebalance_timeout_ms, heartbeat_interval_ms=args.heartbeat_interval_ms,
        scheduled_rebalance_max_delay_ms=args.scheduled_rebalance_delay_ms, host=args.host,
        connect=args.connect,
        # In the foreground the worker's log is this command's output (the harness keeps it).
        log_file="/dev/stdout"), verbose=True).start()
    stopping = threading.Event()
    if specs:
        def create() -> None:
            missing = w.create_connectors(specs, args.connectors_deadline_s,
                                          lambda m: print(f"[realconnect] {m}", file=sys.stderr, flush=True),
                                          stopping.is_set)
            if missing and not stopping.is_set():
                print(f"[realconnect] connectors not created within {args.connectors_deadline_s:.0f}s: "
                      f"{', '.join(missing)}", file=sys.stderr, flush=True)
        threading.Thread(target=create, name="connectors", daemon=True).start()
    try:
        return serve_until_signalled(w, w.rest_url)
    finally:
        stopping.set()


def _host(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # a stop while starting stops the JVM too
    stdout_appending()
    host = WorkerHost(Path(args.socket), "/dev/stdout", heap_mb=args.heap_mb, connect=args.connect).start()
    return serve_until_signalled(host, str(host.socket_path))


def _seed(args: argparse.Namespace) -> int:
    # Here, not at the top: every worker of a certification runs `start`, which needs none of it.
    from ..client import ClientError
    from ..realkafka.group_log import GroupLogError
    from .provision import build_version, version_key
    from .seed import seed_connectors
    try:
        written = seed_connectors(args.bootstrap, args.topic_prefix, parse_connectors(args.connectors),
                                  sessioned=args.protocol in (None, "sessioned"),
                                  version=version_key(build_version(args.connect)), now_ms=int(time.time() * 1000))
    except (GroupLogError, ClientError, OSError) as e:
        print(f"[realconnect] seeding {config_topic(args.topic_prefix)} at {args.bootstrap}: {e}",
              file=sys.stderr, flush=True)
        return 1
    print(f"[realconnect] {config_topic(args.topic_prefix)}: "
          f"{', '.join(written) + ' written' if written else 'every connector there already'}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.command in ("start", "seed"):
        try:
            parse_connectors(args.connectors)
        except ValueError as e:
            p.error(f"--connectors: {e}")
    return run_command(p, args, {"resolve": _resolve, "start": _start, "host": _host, "seed": _seed}, "realconnect")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fakebroker.realconnect", description=plain(__doc__),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(p, "fakebroker.realconnect")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    rs = sub.add_parser("resolve", help="resolve the worker's jars into the cache (offline once done)")
    st = sub.add_parser("start", help="run one distributed worker until interrupted")
    st.add_argument("--bootstrap", required=True, help="bootstrap.servers (a fake broker in proxy mode)")
    st.add_argument("--group", default="connect-cluster", help="group.id")
    st.add_argument("--protocol", choices=PROTOCOLS, default=None,
                    help="connect.protocol (default: not set, Connect's own default: sessioned)")
    st.add_argument("--rest-port", type=int, default=0, help="REST port on 127.0.0.1 (0: a free one)")
    st.add_argument("--topic-prefix", default=None,
                    help="internal topics PREFIX-configs/-offsets/-status instead of the group's "
                         "(groups sharing a prefix share their connectors)")
    st.add_argument("--status-topic", default=None,
                    help="the status topic instead of PREFIX-status: a worker writes its tasks' statuses "
                         "there, also while it stops (one per group: a stopping worker cannot overwrite "
                         "those of another group's worker sharing the other topics)")
    st.add_argument("--client-id", default=None, help="client.id of the worker's group member")
    st.add_argument("--session-timeout-ms", type=int, default=6000, help="session.timeout.ms (default %(default)s)")
    st.add_argument("--rebalance-timeout-ms", type=int, default=20000,
                    help="rebalance.timeout.ms (default %(default)s)")
    st.add_argument("--heartbeat-interval-ms", type=int, default=1000,
                    help="heartbeat.interval.ms (default %(default)s)")
    st.add_argument("--scheduled-rebalance-delay-ms", type=int, default=None,
                    help="scheduled.rebalance.max.delay.ms (default: not set, Connect's own default: 300000)")
    st.add_argument("--connectors", default="", metavar="NAME:TASKS,...",
                    help="connectors to create through REST once the worker answers")
    st.add_argument("--host", default=None, metavar="SOCKET",
                    help="run the worker in the worker host listening on SOCKET (see `host`), "
                         "not in a JVM of its own")
    st.add_argument("--connectors-deadline-s", type=float, default=120.0,
                    help="give up creating connectors after this long (default 120)")
    ho = sub.add_parser("host", help="run one JVM that runs the workers started with --host SOCKET")
    ho.add_argument("--socket", required=True, help="the Unix socket to listen on (replaced if it exists)")
    ho.add_argument("--heap-mb", type=int, default=1024, help="the JVM's heap bound, for all its workers (default 1024)")
    sd = sub.add_parser("seed", help="write connectors into a config topic, as a worker creating them would")
    sd.add_argument("--bootstrap", required=True, help="a Kafka (or a fake broker in proxy mode in front of one)")
    sd.add_argument("--topic-prefix", required=True, help="the workers' --topic-prefix: writes PREFIX-configs")
    sd.add_argument("--connectors", required=True, metavar="NAME:TASKS,...", help="the connectors to write")
    sd.add_argument("--protocol", choices=PROTOCOLS, default=None,
                    help="the workers' connect.protocol: sessioned (or none: Connect's default) also "
                         "writes the session key their first leader would")
    for command in (rs, st, ho, sd):
        command.add_argument("--connect", default=None, metavar="VERSION|DIR",
                             help=f"the Connect build: a release resolved from Maven Central (default "
                                  f"{CONNECT_VERSION}) or a directory of a build's jars")
    return p


if __name__ == "__main__":
    sys.exit(main())
