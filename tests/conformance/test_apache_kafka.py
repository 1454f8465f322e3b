"""Apache Kafka 4.2.0 as a bundled coordinator target (``fixtures/targets/apache-kafka.toml``):
the target file and its validation rule, its one source of truth with ``python -m
fakebroker.realkafka start``, and (``realkafka``) the whole coordinator suite run against it
as a user runs it, which must certify it with zero false failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conformance.target import TargetError, load_target
from fakebroker.realkafka.__main__ import parser, start_settings

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
    from conformance.harness.sessions import launch_settings
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
