"""The group-log target capability and the persistence cases (C848-REC-*): the target rule,
decoding a log record by the record specs, and - on a real Kafka - the fake broker writing
its connect groups there passes every persistence case while each group-log mutant is
refused by its designated case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.harness.outcomes import Outcome, Violation
from conformance.harness.mutant_declarations import mutants_of
from conformance.mutants import GROUP_LOG_MUTANTS
from conformance.tools.suite_power import run_suite
from conformance.suites.coordinator.persistence import GROUP, MEMBER, decode
from conformance.harness.target import TargetError, load_target, parse_target
from fakebroker.coordinator.reconcile.records import GroupMetadataRecord, MemberMetadataRecord
from fakebroker.coordinator.reconcile.wire_records import encode_record
from fakebroker.realkafka.records import Record

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "fixtures" / "targets" / "fakebroker-group-log.toml"
REC = ["C848-REC-01", "C848-REC-02", "C848-REC-03", "C848-REC-04", "C848-REC-05"]
#: group-log mutant -> the persistence case that must refuse it (fixtures/mutants/coordinators.toml)
KILLED_BY = {m.name: m.refused_by for m in mutants_of("coordinator") if m.group_log}


def base_data() -> dict[str, Any]:
    return {"name": "t", "kind": "coordinator", "protocols": ["connect"], "capabilities": ["group-log"],
            "start": {"bootstrap": "127.0.0.1:9092"}, "group_log": {"topic": "__worker_offsets"}}


def problems(data: dict[str, Any]) -> str:
    with pytest.raises(TargetError) as e:
        parse_target(data, "t.toml")
    return "\n".join(e.value.problems)


def test_external_coordinator_reads_its_log_at_its_bootstrap_by_default() -> None:
    t = parse_target(base_data(), "t.toml")
    assert t.group_log is not None and t.group_log.topic == "__worker_offsets" and t.group_log.bootstrap is None


def test_capability_and_table_go_together() -> None:
    d = base_data()
    del d["group_log"]
    assert "rule group-log-declared" in problems(d)
    d = base_data()
    d["capabilities"] = []
    assert "rule group-log-declared" in problems(d)


def test_builtin_needs_real_kafka_and_only_builtin_gets_one() -> None:
    d = base_data()
    d["start"] = {"builtin": "fakebroker"}
    assert "group_log.real_kafka" in problems(d)
    d = base_data()
    d["group_log"]["real_kafka"] = True
    assert "group_log.real_kafka: only a builtin" in problems(d)


def test_bundled_target_loads() -> None:
    t = load_target(TARGET)
    assert t.group_log is not None and t.group_log.real_kafka and "group-log" in t.capabilities


def test_decode_by_the_record_specs() -> None:
    key, value = encode_record(GroupMetadataRecord("g", 7))
    d = decode(Record(3, 0, key, value))
    assert (d.type, d.key.group_id, d.value.epoch, d.value_version) == (GROUP, "g", 7, 0)
    key, value = encode_record(MemberMetadataRecord("g", "m1", None))
    d = decode(Record(4, 0, key, value))
    assert (d.type, d.member_id, d.value) == (MEMBER, "m1", None)


def test_decode_refuses_malformed_records_naming_the_offset() -> None:
    key, value = encode_record(GroupMetadataRecord("g", 7))
    for bad, rule in ((Record(9, 0, b"\x03\xff" + key[2:], value), "record type"),
                      (Record(9, 0, key + b"\x00", value), "decodes exactly"),
                      (Record(9, 0, key, b"\x00\x05" + value[2:]), "value version"),
                      (Record(9, 0, key, value[:-1]), "decodes exactly")):
        with pytest.raises(Violation) as e:
            decode(bad)
        assert "offset 9" in str(e.value) and rule in str(e.value)


@pytest.mark.realkafka
def test_persistence_cases_pass_on_the_fake_broker_with_a_group_log() -> None:
    results = run_suite(load_target(TARGET), ids=REC)
    assert {r.requirement_id: (r.outcome.value, r.message) for r in results} == \
        {i: (Outcome.PASS.value, "") for i in REC}


@pytest.mark.realkafka
@pytest.mark.parametrize("name", sorted(GROUP_LOG_MUTANTS))
def test_group_log_mutant_killed_by_its_case(name: str) -> None:
    [r] = run_suite(load_target(f"mutant:{name}"), ids=[KILLED_BY[name]])
    assert r.level == "MUST" and r.outcome is Outcome.FAIL, (r.outcome.value, r.message)


def test_every_group_log_mutant_is_declared_with_a_persistence_case() -> None:
    assert set(GROUP_LOG_MUTANTS) == set(KILLED_BY)
    assert all(r.startswith("C848-REC-") for r in KILLED_BY.values())


def test_external_coordinator_session_reads_the_log_where_declared() -> None:
    from conformance.harness.sessions import CoordinatorSession
    d = base_data()
    assert CoordinatorSession.start(parse_target(d, "t.toml")).group_log_bootstrap == "127.0.0.1:9092"
    d["group_log"]["bootstrap"] = "kafka.example:9093"
    assert CoordinatorSession.start(parse_target(d, "t.toml")).group_log_bootstrap == "kafka.example:9093"
    del d["group_log"], d["capabilities"]
    assert CoordinatorSession.start(parse_target(d, "t.toml")).group_log_bootstrap is None
