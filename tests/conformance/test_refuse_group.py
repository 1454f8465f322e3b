"""The worker suite's refused group (RecordingBroker.refuse_group, used by CLS-W-11): the
case's group alone is answered GROUP_AUTHORIZATION_FAILED, as Kafka answers it, and only
until the refusal is lifted; the refused request is still recorded for the case to count."""

from __future__ import annotations

import asyncio

from fakebroker.client import KafkaConnection
from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.clock import RealClock
from fakebroker.server.config import BrokerConfig
from fakebroker.server.thread import BrokerThread

from conformance.harness.worker import RecordingBroker

REFUSED = ErrorCode.GROUP_AUTHORIZATION_FAILED.value


def test_only_the_refused_group_is_refused_and_only_until_lifted() -> None:
    recorder = RecordingBroker(BrokerConfig(), CoordinatorConfig(initial_rebalance_delay_ms=0), RealClock())
    broker = BrokerThread(recorder).start()
    find = recorder.registry.request(10)

    async def errors(keys: list[str]) -> list[int]:
        async with await KafkaConnection.open(broker.bootstrap) as c:
            v4 = (await c.send(find.new(key_type=0, coordinator_keys=keys), 4)).response
            v3 = (await c.send(find.new(key=keys[0], key_type=0), 3)).response
            return [k.error_code for k in v4.coordinators] + [v3.error_code]

    try:
        recorder.refuse_group("refused")
        assert asyncio.run(errors(["refused", "open"])) == [REFUSED, 0, REFUSED]
        assert asyncio.run(errors(["open"])) == [0, 0]
        refusals = [s for s in recorder.snapshot() if s.api == "FindCoordinator" and s.version == 3]
        assert [s.response.error_code for s in refusals] == [REFUSED, 0]
        recorder.refuse_group("refused", refused=False)
        assert recorder.authorizer is None
        assert asyncio.run(errors(["refused"])) == [0, 0]
    finally:
        broker.stop()
