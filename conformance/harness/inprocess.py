"""Targets the harness runs itself: the builtin fake broker (optionally as a mutant), on an
ephemeral loopback port, in a background thread; one per pytest-xdist worker process."""

from __future__ import annotations

from fakebroker import __version__ as fakebroker_version
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.coordinator.reconcile.records import RecordStore
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import RealClock, VirtualClock
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread

from .target import Target


def builtin_version(target: Target) -> str:
    if target.builtin == "fakebroker":
        return fakebroker_version
    return "unknown"


def coordinator_config(target: Target) -> CoordinatorConfig:
    t = target.timing
    return CoordinatorConfig(initial_rebalance_delay_ms=t.initial_rebalance_delay_ms,
                             min_session_timeout_ms=t.min_session_timeout_ms,
                             max_session_timeout_ms=t.max_session_timeout_ms)


def start_builtin(target: Target, connect_store: RecordStore | None = None) -> BrokerThread:
    """``connect_store``: where connect groups write their records (a group-log target's
    ``KafkaGroupLog``, as ``serve --group-log``); the broker closes it when it stops."""
    if target.builtin != "fakebroker":
        raise ValueError(f"unknown builtin implementation {target.builtin!r}")
    broker = FakeBroker(BrokerConfig(), coordinator_config(target),
                        VirtualClock() if target.virtual_clock else RealClock(),
                        connect_store=connect_store)
    if target.mutant is not None:
        from ..mutants import apply_mutant
        apply_mutant(broker, target.mutant)
    return BrokerThread(broker).start()
