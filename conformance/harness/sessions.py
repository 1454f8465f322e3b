"""Started targets, one per test process: what a coordinator case connects to."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from fakebroker.client import ClientError
from fakebroker.negotiation import ApiRanges, probe
from fakebroker.protocol import default_registry
from fakebroker.script.recorder import Recorder
from fakebroker.server.thread import BrokerThread

from ..catalogue.requirements import Requirement
from .target import Target
from .clock import CaseClock, RealCaseClock, VirtualCaseClock
from .context import CoordinatorContext
from .broker_process import start_broker
from .inprocess import builtin_version, start_builtin
from .shared_kafka import real_kafka_for


# The APIs the coordinator suite sends (live cases and golden replays): the certificate
# lists the version range negotiated for each.
SUITE_APIS = ("ApiVersions", "Metadata", "CreateTopics", "JoinGroup", "SyncGroup", "Heartbeat",
              "LeaveGroup", "DescribeGroups", "ListGroups", "OffsetCommit", "OffsetFetch",
              "ConnectGroupHeartbeat", "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment")


def negotiated(ranges: ApiRanges) -> dict[str, list[int] | None]:
    """API -> the versions both sides support, [lowest, highest]; None: the target does not
    advertise one the suite speaks."""
    return {api: list(ranges.usable[api]) if api in ranges.usable else None for api in SUITE_APIS}


@dataclass
class CoordinatorSession:
    target: Target
    bootstrap: str
    clock: CaseClock
    broker: BrokerThread | None = None
    version: str = field(default="unknown")
    kafka: Any = None  # fakebroker.realkafka.RealKafka: a launched target, or a builtin's group log
    process: Any = None  # broker_process.BrokerProcess: a command's broker this process started
    group_log_bootstrap: str | None = None  # where the target's [group_log] topic is read
    # What the target advertised (ApiVersions, once per session): a requirement whose
    # versions it does not support is NOT-APPLICABLE before its case runs. None: not learnt
    # (the target did not answer; its cases say so themselves).
    api_ranges: ApiRanges | None = None

    @classmethod
    def start(cls, target: Target, workerinput: dict[str, Any] | None = None) -> CoordinatorSession:
        """``workerinput``: pytest-xdist's for this process (a shared real Kafka: shared_kafka)."""
        session = cls._start(target, workerinput)
        session.learn_versions()
        return session

    def learn_versions(self) -> None:
        """What the target advertises (ApiVersions); left unknown when it does not answer."""
        try:
            self.api_ranges = asyncio.run(probe(self.bootstrap, default_registry(), self.target.max_versions))
        except (ClientError, OSError):
            pass

    @classmethod
    def _start(cls, target: Target, workerinput: dict[str, Any] | None) -> CoordinatorSession:
        if target.launch == "real-kafka":
            kafka = real_kafka_for(target, workerinput)
            return cls(target, kafka.bootstrap, RealCaseClock(target.timing.wait_scale), None,
                       kafka.version, kafka)
        if target.builtin is not None:
            kafka, store = _group_log_kafka(target)
            try:
                broker = start_builtin(target, store)
            except BaseException:
                if kafka is not None:
                    kafka.stop()
                raise
            clock: CaseClock = (VirtualCaseClock(broker) if target.virtual_clock
                                else RealCaseClock(target.timing.wait_scale))
            return cls(target, broker.bootstrap, clock, broker, builtin_version(target), kafka,
                       group_log_bootstrap=kafka.bootstrap if kafka is not None else None)
        if target.command is not None:  # its own broker, this process's
            process = start_broker(target)
            bootstrap = process.bootstrap
            log_at = target.group_log and (target.group_log.bootstrap or bootstrap)
            return cls(target, bootstrap, RealCaseClock(target.timing.wait_scale),
                       version=target.implementation_version, process=process,
                       group_log_bootstrap=log_at or None)
        assert target.bootstrap is not None
        log_at = target.group_log and (target.group_log.bootstrap or target.bootstrap)
        return cls(target, target.bootstrap, RealCaseClock(target.timing.wait_scale), None,
                   target.implementation_version, group_log_bootstrap=log_at or None)

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop()
        if self.kafka is not None:
            self.kafka.stop()
        if self.process is not None:
            self.process.stop()

    def revive(self) -> str | None:
        """A broker this process started from the target's command that has exited since
        (it crashed on an earlier case) is started again, so that one crash does not decide
        the outcome of every case after it; says so, for the next case's notes. What it
        advertises is learnt again when it was not (it did not answer in time)."""
        if self.process is None:
            return None
        if self.process.proc.poll() is None:
            if self.api_ranges is None:
                self.learn_versions()
            return None
        code = self.process.proc.returncode
        self.process.stop()
        self.process = start_broker(self.target)
        self.bootstrap = self.process.bootstrap
        self.learn_versions()
        return (f"the coordinator's process had exited ({code}) after an earlier case; "
                f"started again at {self.bootstrap}")

    def context(self, requirement: Requirement, recording: Recorder) -> CoordinatorContext:
        ctx = CoordinatorContext(self.target, requirement, self.bootstrap, self.clock, recording)
        ctx.group_log_bootstrap = self.group_log_bootstrap
        return ctx


def _group_log_kafka(target: Target) -> tuple[Any, Any]:
    """For a builtin claiming group-log: a real Kafka and the store on its topic."""
    if target.group_log is None or not target.group_log.real_kafka:
        return None, None
    from fakebroker.realkafka import start_real_kafka
    from fakebroker.realkafka.group_log import KafkaGroupLog
    kafka = start_real_kafka()
    try:
        return kafka, KafkaGroupLog(kafka.bootstrap, target.group_log.topic)
    except BaseException:
        kafka.stop()
        raise

