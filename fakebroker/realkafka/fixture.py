"""pytest fixtures: a real Apache Kafka broker for users' own tests (exported through
``fakebroker.pytest_plugin``).

    @pytest.mark.realkafka
    def test_against_kafka(real_kafka):
        client = MyClient(bootstrap=real_kafka.bootstrap)

``real_kafka`` is session-scoped: one broker per test process (per pytest-xdist worker),
started on first use with ``KafkaSettings()`` (no initial rebalance delay, session timeouts
from 1 s) and stopped at the end of the session, also after failures. Override the
``real_kafka_settings`` fixture (session scope) to start it differently. A broker that
cannot be provisioned is an error of the test, never a skip: deselect with
``-m "not realkafka"`` where no Java is wanted.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import RealKafka, RealKafkaError, start_real_kafka
from .settings import KafkaSettings


@pytest.fixture(scope="session")
def real_kafka_settings() -> KafkaSettings:
    return KafkaSettings()


def running_kafka(settings: KafkaSettings) -> Iterator[RealKafka]:
    """A real broker for the life of a fixture; fails the test (never skips) when it cannot
    start. For a fixture of your own with other settings: ``yield from running_kafka(s)``."""
    try:
        kafka = start_real_kafka(settings)
    except RealKafkaError as e:
        pytest.fail(f"real Kafka broker unavailable: {e}", pytrace=False)
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="session")
def real_kafka(real_kafka_settings: KafkaSettings) -> Iterator[RealKafka]:
    yield from running_kafka(real_kafka_settings)
