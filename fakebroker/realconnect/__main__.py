"""``python -m fakebroker.realconnect resolve``: fetch the Connect worker's jars once.

``python -m fakebroker.realconnect start --bootstrap HOST:PORT [--protocol P] [--group G]``
runs one worker until Ctrl-C and prints its REST URL. Exit codes: 0 done, 1 failure, 2 usage.
"""

from __future__ import annotations

import argparse
import sys

from ..realkafka.cli import run_command, serve_until_signalled
from . import CONNECT_VERSION, PROTOCOLS, ConnectWorker, WorkerSettings, cached_libs, ensure_resolved


def _resolve(args: argparse.Namespace) -> int:
    cached = cached_libs()
    libs = cached or ensure_resolved(quiet=False)
    print(f"Kafka Connect {CONNECT_VERSION} jars: {libs}{' (cached)' if cached else ''}")
    return 0


def _start(args: argparse.Namespace) -> int:
    w = ConnectWorker(WorkerSettings(bootstrap=args.bootstrap, group=args.group,
                                     protocol=args.protocol, rest_port=args.rest_port),
                      verbose=True).start()
    return serve_until_signalled(w, w.rest_url)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fakebroker.realconnect", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("resolve", help="resolve the worker's jars into the cache (offline once done)")
    st = sub.add_parser("start", help="run one distributed worker until interrupted")
    st.add_argument("--bootstrap", required=True)
    st.add_argument("--group", default="connect-cluster")
    st.add_argument("--protocol", choices=PROTOCOLS, default="sessioned")
    st.add_argument("--rest-port", type=int, default=0)
    args = p.parse_args(argv)
    return run_command(p, args, {"resolve": _resolve, "start": _start}, "realconnect")


if __name__ == "__main__":
    sys.exit(main())
