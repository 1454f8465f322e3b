"""Started targets, one per test process: what a coordinator case connects to."""

from __future__ import annotations

from dataclasses import dataclass, field

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

    @classmethod
    def start(cls, target: Target) -> CoordinatorSession:
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

    def context(self, requirement: Requirement, transcript: Transcript) -> CoordinatorContext:
        transcript.clock = self.clock
        transcript.server_port = int(self.bootstrap.rpartition(":")[2])
        return CoordinatorContext(self.target, requirement, self.bootstrap, self.clock, transcript)
