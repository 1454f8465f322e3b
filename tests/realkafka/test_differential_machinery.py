"""The differential machinery without a JVM: two fake brokers stand in for the two sides.
Alike, they show no difference; configured apart, the difference is found and named; the
normalisation hides only what may vary; the accepted-differences file is validated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakebroker.realkafka import KafkaSettings
from fakebroker.realkafka.differential import (Accepted, Difference, Step, Trace, compare,
                                               glob_match, load_accepted, run_differential, unaccepted)
from fakebroker.realkafka.scenarios import SCENARIOS
from fakebroker.realkafka.twin import start_twin, twin_config
from fakebroker.server.thread import BrokerThread


@pytest.fixture(scope="module")
def twins() -> Iterator[tuple[BrokerThread, BrokerThread]]:
    a, b = start_twin(), start_twin()
    yield a, b
    a.stop()
    b.stop()


@pytest.mark.parametrize("name", ["first-member", "join-errors", "static-membership", "describe-and-list"])
def test_two_alike_brokers_show_no_difference(name: str, twins: tuple[BrokerThread, BrokerThread]) -> None:
    a, b = twins
    r = run_differential(SCENARIOS[name], name, a.bootstrap, b.bootstrap)
    assert r.real.steps and all(s.response is not None for s in r.real.steps)
    assert r.differences == []


def test_a_difference_of_behaviour_is_found() -> None:
    """A twin with a 2 s minimum session refuses the scenario's 1 s session."""
    a, b = start_twin(), start_twin(KafkaSettings(min_session_timeout_ms=2000))
    try:
        r = run_differential(SCENARIOS["session-expiry"], "session-expiry", a.bootstrap, b.bootstrap)
    finally:
        a.stop()
        b.stop()
    first = r.differences[0]
    assert first.step == "#1 w1: first join (JoinGroup v9)"
    assert (first.path, first.real, first.fake) == ("response.ErrorCode", 79, 26)  # MEMBER_ID_REQUIRED / INVALID_SESSION_TIMEOUT
    assert str(first).startswith("session-expiry #1 w1: first join (JoinGroup v9): response.ErrorCode: Kafka 79 / fake 26")


def step(i: int, response: dict, api: str = "JoinGroup") -> Step:
    return Step(i, f"s{i}", api, 9, {"GroupId": "tok-g"}, response)


def test_generated_ids_throttle_and_member_order_are_normalised() -> None:
    real = Trace("real", [step(1, {"ThrottleTimeMs": 5, "MemberId": "w1-aaa", "Leader": "w1-aaa",
                                   "Members": [{"MemberId": "w1-aaa"}, {"MemberId": "w2-bbb"}]})])
    fake = Trace("fake", [step(1, {"ThrottleTimeMs": 0, "MemberId": "w1-1", "Leader": "w1-1",
                                   "Members": [{"MemberId": "w2-2"}, {"MemberId": "w1-1"}]})])
    assert compare(real, fake, "tok") == []


def test_the_same_id_must_appear_in_the_same_places() -> None:
    real = Trace("real", [step(1, {"MemberId": "w1-aaa", "Leader": "w1-aaa"})])
    fake = Trace("fake", [step(1, {"MemberId": "w1-1", "Leader": "w2-2"})])
    [d] = compare(real, fake, "tok", "x")
    assert (d.path, d.real, d.fake) == ("response.Leader", "<member:1>", "<member:2>")


def test_list_groups_keeps_only_the_scenarios_groups() -> None:
    def lg(groups: list[str]) -> Step:
        return step(1, {"ErrorCode": 0, "Groups": [{"GroupId": g} for g in groups]}, api="ListGroups")
    assert compare(Trace("real", [lg(["tok-a", "other", "tok-b"])]),
                   Trace("fake", [lg(["tok-b", "tok-a"])]), "tok") == []
    [d] = compare(Trace("real", [lg(["tok-a"])]), Trace("fake", [lg([])]), "tok")
    assert d.path == "response.Groups"


def test_diverging_flows_stop_the_comparison() -> None:
    real = Trace("real", [step(1, {"ErrorCode": 0}), step(2, {"ErrorCode": 0})])
    fake = Trace("fake", [step(1, {"ErrorCode": 0})])
    [d] = compare(real, fake, "tok")
    assert (d.path, d.real, d.fake) == ("steps", "#2 s2 (JoinGroup v9)", "<no step>")


def test_an_unanswered_step_differs_from_an_answered_one() -> None:
    real = Trace("real", [step(1, {"ErrorCode": 0})])
    fake = Trace("fake", [Step(1, "s1", "JoinGroup", 9, {"GroupId": "tok-g"}, None, "timed out")])
    assert {d.path for d in compare(real, fake, "tok")} == {"response", "error"}


def test_globs_keep_brackets_literal() -> None:
    assert glob_match("response.Groups[0].GroupState", "response.Groups[0].GroupState")
    assert not glob_match("response.Groups[0].GroupState", "response.Groups0.GroupState")
    assert glob_match("response.Members[*].MemberId", "response.Members[12].MemberId")
    assert glob_match("#2 *", "#2 unknown group v6 (DescribeGroups v6)")


def test_accepted_entries_match_values_when_given() -> None:
    d = Difference("sc", "#1 x (JoinGroup v9)", "response.ErrorCode", 0, 26)
    loose = Accepted("A", "sc", "*", "response.ErrorCode", "r")
    exact = Accepted("B", "sc", "*", "response.ErrorCode", "r", 0, 27, True, True)
    assert unaccepted([d], [loose]) == [] and unaccepted([d], [exact]) == [d]


def test_the_accepted_file_loads_and_every_entry_has_a_reason() -> None:
    entries = load_accepted()
    assert entries and all(a.reason and a.kind in ("defect", "limit", "by-design") for a in entries)
    assert len({a.id for a in entries}) == len(entries)


@pytest.mark.parametrize("body, error", [
    ("accepted:\n  - {id: X, kind: limit, scenario: s, path: p}\n", "'reason' must be a non-empty string"),
    ("accepted:\n  - {id: X, kind: maybe, scenario: s, path: p, reason: r}\n", "kind must be one of"),
    ("accepted:\n  - {id: X, kind: limit, scenario: s, path: p, reason: r, colour: red}\n", "unknown keys"),
    ("accepted:\n  - {id: X, kind: limit, scenario: s, path: p, reason: r}\n"
     "  - {id: X, kind: limit, scenario: s, path: p, reason: r}\n", "duplicate id X"),
])
def test_a_bad_accepted_file_is_refused(tmp_path: Path, body: str, error: str) -> None:
    p = tmp_path / "a.yaml"
    p.write_text(body)
    with pytest.raises(ValueError, match=error):
        load_accepted(p)


def test_twin_takes_the_real_brokers_group_settings() -> None:
    cfg = twin_config(KafkaSettings(initial_rebalance_delay_ms=7, min_session_timeout_ms=1500,
                                    properties={"group.max.size": 4, "num.partitions": 3}))
    assert (cfg.initial_rebalance_delay_ms, cfg.min_session_timeout_ms, cfg.max_group_size) == (7, 1500, 4)
