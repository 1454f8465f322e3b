"""pytest fixtures for users' own tests (registered through the ``pytest11`` entry point).

    def test_my_client(fake_broker):
        client = MyClient(bootstrap=fake_broker.bootstrap)

``fake_broker`` runs on the wall clock with one topic ``test`` of 6 partitions and no
initial rebalance delay; ``fake_broker_factory(**options)`` makes brokers with other
settings (``virtual_clock=True`` gives one whose time moves only with ``.advance(ms)``).

With ``--fakebroker-keep DIR`` (or the ini option ``fakebroker_keep``) every broker of
these fixtures records what it exchanges, and a test that fails leaves it under
``DIR/<test>/``: ``broker-N.jsonl`` (the project's transcript format: ``fakebroker
replay``, ``pcap`` and ``decode`` read it) and ``broker-N.pcap`` (the broker on port 9092,
which Wireshark dissects as Kafka); the end of the run lists them. A passing test keeps
nothing.

``real_kafka`` (session scope) is a real Apache Kafka 4.2.0 broker beside it
(``fakebroker.realkafka``): ``real_kafka.bootstrap``; override ``real_kafka_settings`` to
configure it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .coordinator.config import CoordinatorConfig
from .realkafka.fixture import real_kafka, real_kafka_settings  # noqa: F401 - fixtures for users
from .server.broker import FakeBroker
from .server.clock import RealClock, VirtualClock
from .server.config import BrokerConfig, Topic
from .server.thread import BrokerThread
from .script.recorder import Recorder

REPORTS_KEY = pytest.StashKey[dict[str, pytest.TestReport]]()
KEPT_KEY = pytest.StashKey[list[Path]]()


def start_broker(*, topics: dict[str, int] | None = None, virtual_clock: bool = False,
                 coordinator: CoordinatorConfig | None = None, recorder: Recorder | None = None,
                 **config: Any) -> BrokerThread:
    """Start a fake broker on an ephemeral loopback port in a background thread;
    ``recorder`` records every exchange from its start."""
    cfg = BrokerConfig(topics=[Topic(n, p) for n, p in (topics or {"test": 6}).items()], **config)
    coord = coordinator or CoordinatorConfig(initial_rebalance_delay_ms=0)
    broker = FakeBroker(cfg, coord, VirtualClock() if virtual_clock else RealClock())
    if recorder is not None:
        broker.record(recorder)
    return BrokerThread(broker).start()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fakebroker", "the fake Kafka broker's fixtures")
    group.addoption("--fakebroker-keep", metavar="DIR", default=None,
                    help="keep the transcript (.jsonl) and pcap of every fake broker of a failing test "
                         "under DIR/<test>/")
    parser.addini("fakebroker_keep", "as --fakebroker-keep", default="")


def keep_dir(config: pytest.Config) -> Path | None:
    given = config.getoption("--fakebroker-keep", default=None) or config.getini("fakebroker_keep")
    return Path(given) if given else None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Each phase's report, for the fixtures' teardown to know whether the test failed."""
    report = yield
    item.stash.setdefault(REPORTS_KEY, {})[report.when] = report
    return report


def _failed(item: pytest.Item) -> bool:
    return any(r.failed for r in item.stash.get(REPORTS_KEY, {}).values())


def _keep(item: pytest.Item, where: Path, recorders: list[Recorder]) -> list[Path]:
    """The failing test's brokers' transcripts and pcaps under ``where/<test>/``."""
    from .protocol import default_registry
    from .script.export import write_transcript_pcap
    folder = where / re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid).strip("_")
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n, rec in enumerate(recorders, 1):
        transcript = rec.transcript()
        path = folder / f"broker-{n}.jsonl"
        transcript.save(path)
        write_transcript_pcap(transcript, default_registry(), folder / f"broker-{n}.pcap")
        out += [path, folder / f"broker-{n}.pcap"]
    return out


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    kept = config.stash.get(KEPT_KEY, [])
    if kept:
        terminalreporter.write_sep("-", "fake broker evidence of failing tests (--fakebroker-keep)")
        for path in kept:
            terminalreporter.write_line(str(path))


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
def fake_broker_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., BrokerThread]]:
    started: list[BrokerThread] = []
    recorders: list[Recorder] = []
    where = keep_dir(request.config)

    def make(**options: Any) -> BrokerThread:
        if where is not None and "recorder" not in options:
            options["recorder"] = Recorder()  # in memory; written out only if the test fails
            recorders.append(options["recorder"])
        b = start_broker(**options)
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()
    if where is not None and recorders and _failed(request.node):
        request.config.stash.setdefault(KEPT_KEY, []).extend(_keep(request.node, where, recorders))


@pytest.fixture
def fake_broker(fake_broker_factory: Callable[..., BrokerThread]) -> BrokerThread:
    return fake_broker_factory()
