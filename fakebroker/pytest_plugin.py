"""pytest fixtures for users' own tests (registered through the ``pytest11`` entry point).

    def test_my_client(fake_broker):
        client = MyClient(bootstrap=fake_broker.bootstrap)

``fake_broker`` runs on the wall clock with one topic ``test`` of 6 partitions and no
initial rebalance delay; ``fake_broker_factory(**options)`` makes brokers with other
settings (``virtual_clock=True`` gives one whose time moves only with ``.advance(ms)``).

``real_kafka`` (session scope) is a real Apache Kafka 4.2.0 broker beside it
(``fakebroker.realkafka``): ``real_kafka.bootstrap``; override ``real_kafka_settings`` to
configure it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .coordinator.config import CoordinatorConfig
from .realkafka.fixture import real_kafka, real_kafka_settings  # noqa: F401 - fixtures for users
from .server.broker import FakeBroker
from .server.clock import RealClock, VirtualClock
from .server.config import BrokerConfig, Topic
from .server.thread import BrokerThread


def start_broker(*, topics: dict[str, int] | None = None, virtual_clock: bool = False,
                 coordinator: CoordinatorConfig | None = None, **config: Any) -> BrokerThread:
    """Start a fake broker on an ephemeral loopback port in a background thread."""
    cfg = BrokerConfig(topics=[Topic(n, p) for n, p in (topics or {"test": 6}).items()], **config)
    coord = coordinator or CoordinatorConfig(initial_rebalance_delay_ms=0)
    broker = FakeBroker(cfg, coord, VirtualClock() if virtual_clock else RealClock())
    return BrokerThread(broker).start()


# kafka-python 3.0 reads each of its ~110 bundled message specs with importlib.resources'
# legacy read_text (which calls open_text): two DeprecationWarnings per spec, 218 lines of
# pytest's summary for one `import kafka`, in every run that imports it (the bundled
# workers' tests, users' tests with kafka-python clients). Not ours to fix, nor theirs.
KAFKA_PYTHON_NOISE = (
    r"ignore:read_text is deprecated:DeprecationWarning:kafka\.",
    r"ignore:open_text is deprecated:DeprecationWarning:importlib\.resources\._legacy",
)


def pytest_configure(config: pytest.Config) -> None:
    """Markers users' tests of these fixtures carry (so ``--strict-markers`` accepts them),
    and kafka-python's import-time warnings left out (``KAFKA_PYTHON_NOISE``)."""
    config.addinivalue_line("markers", "realkafka: runs a real Apache Kafka broker (Java 17+)")
    config.addinivalue_line("markers", "tshark: needs the tshark binary")
    for line in KAFKA_PYTHON_NOISE:
        config.addinivalue_line("filterwarnings", line)


@pytest.fixture
def fake_broker_factory() -> Iterator[Callable[..., BrokerThread]]:
    started: list[BrokerThread] = []

    def make(**options: Any) -> BrokerThread:
        b = start_broker(**options)
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def fake_broker(fake_broker_factory: Callable[..., BrokerThread]) -> BrokerThread:
    return fake_broker_factory()
