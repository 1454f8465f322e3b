from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakebroker.realkafka import KafkaSettings, RealKafka
from fakebroker.realkafka.fixture import running_kafka
from fakebroker.realkafka.scenarios import DIFF_SETTINGS, TOPIC, TOPIC_PARTITIONS
from fakebroker.realkafka.twin import start_twin
from fakebroker.server.thread import BrokerThread

#: The real broker of these tests, and its fake twin: see DIFF_SETTINGS.
SETTINGS = DIFF_SETTINGS


@pytest.fixture(scope="session")
def real_kafka_settings() -> KafkaSettings:
    return SETTINGS


@pytest.fixture(scope="session")
def real_kafka(real_kafka_settings: KafkaSettings) -> Iterator[RealKafka]:
    """This folder's own broker. The plugin's session-wide ``real_kafka`` may already run
    with other settings for other tests (a session fixture is started once, by whichever
    test asks first), and these tests need DIFF_SETTINGS (e.g. 3 partitions per new topic)."""
    yield from running_kafka(real_kafka_settings)


@pytest.fixture(scope="session")
def fake_twin() -> Iterator[BrokerThread]:
    """The fake broker configured like ``real_kafka``."""
    twin = start_twin(SETTINGS, topics={TOPIC: TOPIC_PARTITIONS})
    yield twin
    twin.stop()
