"""Started targets, one per test process: what a coordinator case connects to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fakebroker.server.thread import BrokerThread

from ..catalogue import Requirement
from ..target import Target
from .clock import CaseClock, RealCaseClock, VirtualCaseClock
from .context import CoordinatorContext
from .inprocess import builtin_version, start_builtin
from .transcript import Transcript


@dataclass
class CoordinatorSession:
    target: Target
    bootstrap: str
    clock: CaseClock
    broker: BrokerThread | None = None
    version: str = field(default="unknown")
    kafka: Any = None  # fakebroker.realkafka.RealKafka for a target with start.launch

    @classmethod
    def start(cls, target: Target) -> CoordinatorSession:
        if target.launch == "real-kafka":
            kafka = launch_real_kafka(target)
            return cls(target, kafka.bootstrap, RealCaseClock(target.timing.wait_scale), None,
                       kafka.version, kafka)
        if target.builtin is not None:
            broker = start_builtin(target)
            clock: CaseClock = (VirtualCaseClock(broker) if target.virtual_clock
                                else RealCaseClock(target.timing.wait_scale))
            return cls(target, broker.bootstrap, clock, broker, builtin_version(target))
        assert target.bootstrap is not None
        return cls(target, target.bootstrap, RealCaseClock(target.timing.wait_scale), None,
                   target.implementation_version)

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()
        if self.kafka is not None:
            self.kafka.stop()

    def context(self, requirement: Requirement, transcript: Transcript) -> CoordinatorContext:
        transcript.clock = self.clock
        transcript.server_port = int(self.bootstrap.rpartition(":")[2])
        return CoordinatorContext(self.target, requirement, self.bootstrap, self.clock, transcript)


def launch_settings(target: Target) -> Any:
    """The broker settings of a launched real Kafka: the group settings the target declares
    (its [timing] is what the cases read, so the broker must run with exactly those)."""
    from fakebroker.realkafka import KafkaSettings
    t = target.timing
    return KafkaSettings(initial_rebalance_delay_ms=t.initial_rebalance_delay_ms,
                         min_session_timeout_ms=t.min_session_timeout_ms,
                         max_session_timeout_ms=t.max_session_timeout_ms)


def launch_real_kafka(target: Target) -> Any:
    """A real Kafka for this test process (stopped with the session)."""
    from fakebroker.realkafka import start_real_kafka
    return start_real_kafka(launch_settings(target))
