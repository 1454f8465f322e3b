"""One local SparkSession per test process, with small-test settings. Every test that uses
it is of one xdist_group, ``spark``, so under `make test` one process runs them all with one
Spark JVM: a JVM of its own per module cost each module ~35 s more CPU (its start and JIT
warm-up; the five modules: 252 -> 150 s CPU in one process) on a suite bound by the
machine's two cores. The group is the suite's largest, so it starts first."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


@pytest.hookimpl(tryfirst=True)  # before the grouping hooks read the marker (xdist's, tests/conftest.py)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark():
    from conformance.pipeline.session import spark_session
    s = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                                   "spark.default.parallelism": "2"}, progress=False)
    yield s
    s.stop()


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def recording_broker(port: int, record: Path, topic: str) -> Iterator[str]:
    """`fakebroker serve --record` on 127.0.0.1:``port`` with ``topic`` (4 partitions);
    yields its bootstrap address, stopped (SIGTERM: the recording closed) at the end."""
    broker = subprocess.Popen([sys.executable, "-m", "fakebroker.cli", "serve", "--port", str(port),
                               "--record", str(record), "--topic", f"{topic}:4",
                               "--initial-rebalance-delay-ms", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert broker.stdout.readline().strip().endswith(f":{port}")  # type: ignore[union-attr]
        yield f"127.0.0.1:{port}"
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)


@dataclass
class ConsumerRun:
    """A recording of real consumers, with what each member's client reported holding (the
    evidence the pipeline's units are checked against: its own, not the recording's bytes)."""

    transcripts: list[Path]
    shared: dict[str, set[tuple[str, int]]]  # member name -> its partitions while both were in
    alone: set[tuple[str, int]]  # the remaining member's, after the other left


@pytest.fixture(scope="session")
def consumer_run(tmp_path_factory) -> ConsumerRun:
    """A real classic consumer group recorded by `fakebroker serve --record`: two
    confluent-kafka (librdkafka) members share 4 partitions with the eager range assignor,
    then one leaves and the other takes everything (two rounds, with the OffsetFetch each
    assignment starts with)."""
    from tests.realclients.harness import Member, wait_until

    d = tmp_path_factory.mktemp("consumers")
    with recording_broker(free_port(), d / "rec", CONSUMER_TOPIC) as bootstrap:
        members = [Member("confluent-kafka", bootstrap, CONSUMER_GROUP, CONSUMER_TOPIC, f"m{i}") for i in range(2)]
        try:
            wait_until(members, _holding([2, 2]), "2 confluent-kafka members to share 4 partitions")
            shared = {m.name: set(m.assignment or ()) for m in members}
            members[1].close()
            wait_until(members[:1], _holding([4]), "the remaining member to take all 4 partitions")
            alone = set(members[0].assignment or ())
        finally:
            for m in members:
                m.kill()
    transcripts = sorted((d / "rec").rglob("*.jsonl"))
    assert transcripts, "the broker recorded no transcript"
    return ConsumerRun(transcripts, shared, alone)


@pytest.fixture(scope="session")
def consumer_recording(consumer_run) -> list[Path]:
    """The consumer run's transcripts."""
    return consumer_run.transcripts


CONSUMER_GROUP, CONSUMER_TOPIC = "operators", "orders"


def _holding(counts: list[int]):  # noqa: ANN202
    def ok(members) -> bool:  # noqa: ANN001
        return sorted(len(m.assignment or ()) for m in members) == sorted(counts)
    return ok


# A planted broken worker and the case that leads it into its defect (fixtures/mutants/workers.toml):
# as leader it gives the work it revokes from one member to another in the same round.
VIOLATING_MUTANT, VIOLATING_CASE = "revokes-and-assigns-same-round", "CONN-ASSIGN-02 and sessioned"


@pytest.fixture(scope="session")
def violating_recording(tmp_path_factory) -> list[Path]:
    """A recording that violates an invariant, made by a real producer: `conformance run`
    on the planted broken worker (a real worker process) through the fake broker, the case's
    exchanges recorded into its transcript (the report folder's Allure attachment). The
    suite refuses the worker for CONN-INV-02; returns the transcripts."""
    out = tmp_path_factory.mktemp("mutant") / "run"
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", f"mutant:{VIOLATING_MUTANT}",
                          "-k", VIOLATING_CASE, "--no-html", "--reports", str(out), "-n", "0"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and "FAIL   CONN-INV-02" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    transcripts = sorted(out.rglob("*-attachment.jsonl"))
    assert transcripts, f"the run attached no transcript: {sorted(p.name for p in out.rglob('*'))}"
    return transcripts
