"""Apache Kafka 4.2.0 as a bundled coordinator target (``fixtures/targets/apache-kafka.toml``):
the target file and its validation rule, its one source of truth with ``python -m
fakebroker.realkafka start``, and (``realkafka``) the whole coordinator suite run against it
as a user runs it, which must certify it with zero false failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.target import TargetError, load_target
from fakebroker.realkafka.__main__ import parser, start_settings
from tests.support.certification import run_certification

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "fixtures" / "targets" / "apache-kafka.toml"
LAUNCHED = """
name = "k"
kind = "coordinator"
protocols = ["classic"]
[start]
launch = "real-kafka"
"""


def test_the_target_and_realkafka_start_share_kafkas_defaults() -> None:
    t = load_target(TARGET)
    assert t.launch == "real-kafka" and t.kind == "coordinator" and not t.virtual_clock
    s = start_settings(parser().parse_args(["start"]))
    assert (t.timing.initial_rebalance_delay_ms, t.timing.min_session_timeout_ms,
            t.timing.max_session_timeout_ms) == (s.initial_rebalance_delay_ms, s.min_session_timeout_ms,
                                                 s.max_session_timeout_ms) == (3000, 6000, 1_800_000)


def test_a_launched_kafka_runs_with_the_targets_timing(tmp_path: Path) -> None:
    from conformance.harness.shared_kafka import launch_settings
    p = tmp_path / "k.toml"
    p.write_text(LAUNCHED + "[timing]\ninitial_rebalance_delay_ms = 0\nmin_session_timeout_ms = 7000\n")
    s = launch_settings(load_target(p))
    assert (s.initial_rebalance_delay_ms, s.min_session_timeout_ms, s.max_session_timeout_ms) == (0, 7000, 1_800_000)


@pytest.mark.parametrize("text, field, reason", [
    (LAUNCHED + '[implementation]\nversion = "3.9.0"\n', "implementation.version", "rule launch-version"),
    (LAUNCHED.replace('launch = "real-kafka"', 'launch = "real-kafka"\nbootstrap = "h:1"'), "start",
     "rule start-one-way"),
    (LAUNCHED.replace('"real-kafka"', '"redpanda"'), "start.launch", "is not one of"),
    (LAUNCHED + '[timing]\nclock = "virtual"\n', "timing.clock", "rule virtual-clock-builtin-only"),
])
def test_invalid_launch_names_field_and_reason(tmp_path: Path, text: str, field: str, reason: str) -> None:
    p = tmp_path / "k.toml"
    p.write_text(text)
    with pytest.raises(TargetError) as e:
        load_target(p)
    assert any(x.startswith(field + ":") and reason in x for x in e.value.problems), e.value.problems


def certified_outcomes(target_file: Path, reports: Path, *extra: str) -> dict[str, dict[str, str]]:
    """Runs the coordinator suite (-n auto: two test processes per core, one broker they
    share) and insists on CERTIFIED."""
    r = run_certification(target_file, reports, *extra, suite="coordinator", workers="auto", timeout_s=1200)
    tail = (r.stdout + r.stderr)[-4000:]
    results = {x["id"]: x for x in json.loads((reports / "results.json").read_text())["results"]}
    wrong = {i: f"{x['outcome']}: {x['message'][:1500]}" for i, x in results.items()
             if x["outcome"] not in ("PASS", "NOT-APPLICABLE")}
    assert not wrong, f"Apache Kafka fails the suite (a bug in the case until proven otherwise): {wrong}\n{tail}"
    assert r.returncode == 0, tail
    return results


def classic_coordinator_requirements() -> set[str]:
    return {q.id for q in default_catalogue().requirements
            if "coordinator" in q.binds and "classic" in q.protocols and not q.untestable}


def goldens_left_out(results: dict[str, dict[str, str]], *allowed: str) -> dict[str, str]:
    """The golden transcripts that were not replayed; each must be left out for an ``allowed``
    reason."""
    left_out = {c["case"]: c["detail"] for x in results.values() for c in x.get("cases", [])
                if c["case"].endswith(".jsonl") and c["outcome"] != "PASS"}
    assert all(any(a in m for a in allowed) for m in left_out.values()), left_out
    return left_out


# No xdist_group (nor below): under `--dist loadgroup` the two runs (each with a broker of its
# own) may take two of the suite's workers at once instead of queueing on one.
@pytest.mark.realkafka
def test_apache_kafka_is_certified(tmp_path: Path) -> None:
    results = certified_outcomes(TARGET, tmp_path / "reports")
    passed = {i for i, x in results.items() if x["outcome"] == "PASS"}
    missing = classic_coordinator_requirements() - set(results)
    assert not missing, f"no outcome for {sorted(missing)}"
    cases = {i for i in passed if any(c["case"] == "live" for c in results[i]["cases"])}
    assert len(cases) >= 60, f"only {len(cases)} cases passed"
    # Goldens run on Kafka at its default delay (those recorded without one too); the only
    # ones left out need virtual time or a group size limit no target declares.
    left_out = goldens_left_out(results, "virtual-only", "max_group_size=1")
    assert len(left_out) <= 2, left_out


@pytest.mark.realkafka
def test_apache_kafka_without_an_initial_delay_is_certified(tmp_path: Path) -> None:
    """group.initial.rebalance.delay.ms=0: Kafka completes a generation with the first
    member alone; the classic cases must still hold (the bundled file's copy)."""
    copy = tmp_path / "apache-kafka-delay-0.toml"
    copy.write_text(TARGET.read_text().replace("[timing]\n", "[timing]\ninitial_rebalance_delay_ms = 0\n"))
    assert load_target(copy).timing.initial_rebalance_delay_ms == 0
    results = certified_outcomes(copy, tmp_path / "reports")
    missing = classic_coordinator_requirements() - set(results)
    assert not missing, f"no outcome for {sorted(missing)}"
    passed = [i for i, x in results.items() if x["outcome"] == "PASS" and any(c["case"] == "live" for c in x["cases"])]
    assert len(passed) >= 60, f"only {len(passed)} cases passed"
    # Also left out here: the goldens whose joins share a 3000 ms initial delay.
    left_out = goldens_left_out(results, "virtual-only", "max_group_size=1",
                                "initial_rebalance_delay_ms=3000 where the target runs with "
                                "initial_rebalance_delay_ms=0")
    assert len(left_out) <= 7, left_out


@pytest.mark.parametrize("recorded, why", [
    ({"initial_rebalance_delay_ms": 0, "max_group_size": 2_147_483_647}, None),
    ({"initial_rebalance_delay_ms": 3000}, None),
    ({"initial_rebalance_delay_ms": 5000}, "initial_rebalance_delay_ms=5000 where the target runs with "
                                           "initial_rebalance_delay_ms=3000"),
    ({"max_group_size": 1}, "max_group_size=1 where the target runs with max_group_size=2147483647"),
    ({"min_session_timeout_ms": 1000}, "min_session_timeout_ms=1000 where the target runs with "
                                       "min_session_timeout_ms=6000"),
])
def test_golden_applicability_on_an_external_coordinator(recorded: dict[str, int], why: str | None) -> None:
    from conformance.harness.golden import external_mismatch
    got = external_mismatch({"coordinator": recorded}, load_target(TARGET))
    assert got == (None if why is None else f"recorded with coordinator settings {why}")
