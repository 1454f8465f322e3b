"""The bundled kafka-python worker keeps the assignment of a round that completed while its
main loop was not waiting for it (kafka-python 3.0.12 starts a new JoinGroup then and drops
the SyncGroup's answer; on a starved CPU the worker then rejoined reporting work it never
took up: CLS-W-10 and CONN-INC-13 failed beside three Connect JVM targets)."""

from __future__ import annotations

import argparse
import time

from conformance.workers.kafka_python_worker import Worker, all_units
from conformance.workers.kp_runtime import start_client
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.intercept.hooks import Call, Gate, Hold
from fakebroker.server.broker import FakeBroker
from fakebroker.server.clock import RealClock
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread

CONNECTORS = "conn-a:2,conn-b:1"


def test_a_round_that_completes_between_two_waits_is_taken_up_not_joined_again() -> None:
    broker = FakeBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0), RealClock())
    joins: list[str] = []
    broker.hooks.add(lambda call: joins.append(call.client_id or ""), api="JoinGroup", keep=True, name="joins")
    gate = Gate("sync")
    broker.hooks.add(lambda call: Hold(gate, timeout_ms=30_000), api="SyncGroup", name="hold-sync")
    thread = BrokerThread(broker).start()
    client = start_client(thread.bootstrap, "w1")
    args = argparse.Namespace(worker_id="w1", rest_port=0, connect_protocol="sessioned", connectors=CONNECTORS,
                              scheduled_rebalance_delay_ms=3000, session_timeout_ms=6000, mutant=None)
    worker = Worker(client, args, group_id="g", api_version=client._manager.broker_version,
                    session_timeout_ms=6000, heartbeat_interval_ms=1000, max_poll_interval_ms=15000,
                    retry_backoff_ms=100)
    try:
        assert worker.ensure_coordinator_ready(timeout_ms=10_000)
        # The main loop's wait gives up while the SyncGroup is held (the round in flight) ...
        assert not worker.ensure_active_group(timeout_ms=500)
        # ... and the round completes before it waits again.
        gate.open()
        deadline = time.monotonic() + 10
        while not worker._join_task.is_done:
            assert time.monotonic() < deadline, "the held round never completed"
            time.sleep(0.01)
        assert worker.ensure_active_group(timeout_ms=10_000)
        assert joins == ["w1", "w1"]  # MEMBER_ID_REQUIRED, then the round: no third JoinGroup
        assert worker.owned == set(all_units(CONNECTORS))  # the lone leader's assignment, taken up
    finally:
        worker.close(timeout_ms=2000)
        client._net.stop(timeout_ms=2000)
        client.close()
        thread.stop()
