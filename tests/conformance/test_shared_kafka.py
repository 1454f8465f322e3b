"""One real Kafka per run (conformance.harness.shared_kafka): which targets share it, the
internal topics of each test process, and a failed start reaching every process at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.harness.pytest_run import process_count
from conformance.harness.shared_kafka import (WORKERINPUT_FAILED, WORKERINPUT_KEY, SharedKafka, prefix_of,
                                              real_kafka_for, shareable)
from conformance.harness.target import load_target
from fakebroker.realkafka import BrokerFailed, ExternalKafka, KafkaSettings, RealKafkaError
from fakebroker.realkafka.launcher import free_port

TARGETS = Path(__file__).resolve().parents[2] / "fixtures" / "targets"


def test_which_targets_share_one_kafka(tmp_path: Path) -> None:
    assert shareable(load_target(TARGETS / "apache-kafka.toml"))
    assert shareable(load_target(TARGETS / "apache-connect-eager.toml"))
    assert not shareable(load_target(TARGETS / "fakebroker.toml"))
    # A Connect target whose command fixes its internal topics: every process would write
    # its workers' task statuses into the same status topic, so each keeps its own Kafka.
    fixed = tmp_path / "fixed.toml"
    fixed.write_text((TARGETS / "apache-connect-eager.toml").read_text()
                     .replace("{topic_prefix}", "mine"))
    assert not shareable(load_target(fixed))


def test_each_test_process_has_internal_topics_of_its_own() -> None:
    assert prefix_of("gw0") != prefix_of("gw1")
    assert prefix_of(None) == "connect-conformance"
    target = load_target(TARGETS / "apache-connect-eager.toml")
    command = target.render_command(topic_prefix=prefix_of("gw3"), bootstrap="h:1")
    assert "--topic-prefix connect-conformance-gw3 " in command


def test_a_failed_start_reaches_the_processes_at_once(tmp_path: Path) -> None:
    failed = tmp_path / "failed"
    failed.write_text("the JVM exited with code 1")
    target = load_target(TARGETS / "apache-kafka.toml")
    with pytest.raises(RealKafkaError, match="did not start: the JVM exited with code 1"):
        real_kafka_for(target, {WORKERINPUT_KEY: f"127.0.0.1:{free_port()}", WORKERINPUT_FAILED: str(failed)})


def test_waiting_for_a_broker_stops_when_its_starter_reports_failure() -> None:
    reasons = iter([None, None, "format failed"])
    kafka = ExternalKafka(f"127.0.0.1:{free_port()}", KafkaSettings(ready_timeout_s=60),
                          failed=lambda: next(reasons))
    t0 = time.monotonic()
    with pytest.raises(BrokerFailed, match="did not start: format failed"):
        kafka.start()
    assert time.monotonic() - t0 < 10


def test_auto_runs_two_processes_per_core_for_a_real_clock_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert process_count(load_target(TARGETS / "apache-connect-eager.toml"), "auto") == 4
    assert process_count(load_target(TARGETS / "fakebroker.toml"), "auto") == 2
    assert process_count(load_target(TARGETS / "fakebroker.toml"), "3") == 3


def test_a_bad_process_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--target", str(TARGETS / "fakebroker.toml"), "-n", "many"]) == 2
    assert "-n many" in capsys.readouterr().err


@pytest.mark.realkafka
def test_the_controllers_kafka_is_addressed_before_it_starts_and_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REAL_KAFKA_BACKEND", "process")
    shared = SharedKafka(load_target(TARGETS / "apache-kafka.toml"))
    try:
        first = shared.workerinput()
        assert first == shared.workerinput()  # every process gets the same address
        host, port = first[WORKERINPUT_KEY].rsplit(":", 1)
        # Reserved until Kafka listens on it: nobody else's free port.
        assert int(port) not in {free_port() for _ in range(200)}
        shared.start()
        kafka = real_kafka_for(load_target(TARGETS / "apache-kafka.toml"), first)
        assert kafka.bootstrap == f"{host}:{port}" and kafka.backend == "external"
        kafka.stop()  # a process's stop leaves the run's broker alone
        assert real_kafka_for(load_target(TARGETS / "apache-kafka.toml"), first).bootstrap == kafka.bootstrap
    finally:
        shared.stop()
    assert not Path(first[WORKERINPUT_FAILED]).exists()


def test_seeding_waits_for_every_connector_its_command_names() -> None:
    from conformance.harness.worker import expected_work, work_listed
    command = load_target(TARGETS / "apache-connect-eager.toml").render_command(bootstrap="h:1")
    expected = expected_work(command)
    assert expected == {"conn-a": 2, "conn-b": 1}
    a_running = {"conn-a": {"status": {"tasks": [{"id": 0}, {"id": 1}]}}}
    # conn-a is up with its tasks, conn-b not created yet: a worker stopped now would leave
    # conn-b's task configs to whichever case's worker comes next.
    assert not work_listed(a_running, expected)
    assert not work_listed({**a_running, "conn-b": {"status": {"tasks": []}}}, expected)
    assert work_listed({**a_running, "conn-b": {"status": {"tasks": [{"id": 0}]}}}, expected)
    assert work_listed(a_running, {}) and not work_listed({}, {})
