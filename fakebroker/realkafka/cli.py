"""The command-line skeleton ``python -m fakebroker.realkafka`` and ``python -m
fakebroker.realconnect`` share: dispatch to a command with the exit codes 0 done, 1 a
``RealKafkaError`` (its message on stderr), 2 usage; and running a started process until
Ctrl-C or SIGTERM, or until it exits by itself."""

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


EXIT_POLL_S = 0.2


def serve_until_signalled(running: Stoppable, address: str,
                          exited: Callable[[], int | None] = lambda: None) -> int:
    """Print ``address``, wait for SIGINT or SIGTERM, then stop ``running``: 0. If ``exited``
    returns an exit code first (the served process ended by itself, as a Connect worker
    whose herder dies does), stop too and return 1: whoever runs this command then sees
    it gone instead of a wrapper around nothing."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        print(address, flush=True)
        while not stop.wait(EXIT_POLL_S):
            code = exited()
            if code is not None:
                print(f"the process at {address} exited by itself (status {code})", file=sys.stderr, flush=True)
                return 1
    finally:
        running.stop()
    return 0
