"""``fakebroker serve --group-log``: the option and the store it opens, plugged into the
``serve`` command from above the server (the server only takes a ``connect_store``)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from ..client import ClientError
from ..coordinator.reconcile.records import Record as EngineRecord
from .group_log import GroupLogError, KafkaGroupLog, open_group_log, parse_target

log = logging.getLogger(__name__)


def extend_serve(sub: argparse._SubParsersAction) -> None:
    """Add ``--group-log`` to the ``serve`` sub-command defined in server/serve_cli."""
    p = sub.choices["serve"]
    p.add_argument("--group-log", metavar="HOST:PORT[/TOPIC]",
                   help="persist connect groups on a real Kafka: every state change of a "
                        "connect group is written to partition 0 of TOPIC "
                        "(default __worker_offsets, created compacted if missing) on the Kafka at HOST:PORT, "
                        "and at start every connect group found on that topic is loaded "
                        "(fresh session timeouts, pending revocations' rebalance timeouts "
                        "re-armed). Writes go out from a thread, never blocking the broker: the "
                        "state changes waiting at a time go in order as one record batch, and "
                        "every coordinator answer waits until the writes made before it are "
                        "acknowledged. A write that fails closes the connections waiting on it "
                        "(nothing is retried)")
    p.set_defaults(open_connect_store=open_for_serve)


def open_for_serve(args: argparse.Namespace
                   ) -> tuple[KafkaGroupLog, Sequence[EngineRecord]] | None:
    """The store ``--group-log`` names and the records to load from it; None without the
    option. A bad target or an unreachable Kafka is a ValueError naming the option."""
    if not args.group_log:
        return None
    parse_target(args.group_log)  # a bad target is a ValueError before any connection
    try:
        store, records = open_group_log(args.group_log)
    except (GroupLogError, ClientError, OSError, TimeoutError) as e:
        raise ValueError(f"--group-log {args.group_log}: {e}") from None
    log.info("group log %s: %d record(s) to load", args.group_log, len(records))
    return store, records
