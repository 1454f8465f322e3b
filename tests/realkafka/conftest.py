from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakebroker.realkafka.scenarios import DIFF_SETTINGS, TOPIC, TOPIC_PARTITIONS
from fakebroker.realkafka.twin import start_twin
from fakebroker.server.thread import BrokerThread

#: The real broker of these tests (tests/conftest.py gives it to the whole suite), and its
#: fake twin: see DIFF_SETTINGS.
SETTINGS = DIFF_SETTINGS


@pytest.fixture(scope="session")
def fake_twin() -> Iterator[BrokerThread]:
    """The fake broker configured like ``real_kafka``."""
    twin = start_twin(SETTINGS, topics={TOPIC: TOPIC_PARTITIONS})
    yield twin
    twin.stop()
