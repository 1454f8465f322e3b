"""The command-line skeleton ``python -m fakebroker.realkafka`` and ``python -m
fakebroker.realconnect`` share: dispatch to a command with the exit codes 0 done, 1 a
``RealKafkaError`` (its message on stderr), 2 usage; and running a started process until
Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from .provision import RealKafkaError


class Stoppable(Protocol):
    def stop(self) -> None: ...


def run_command(parser: argparse.ArgumentParser, args: argparse.Namespace,
                commands: Mapping[str, Callable[[argparse.Namespace], int]], prog: str) -> int:
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return commands[args.command](args)
    except RealKafkaError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1


def serve_until_signalled(running: Stoppable, address: str) -> int:
    """Print ``address``, wait for SIGINT or SIGTERM, then stop ``running``."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        print(address, flush=True)
        stop.wait()
    finally:
        running.stop()
    return 0
