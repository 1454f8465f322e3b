"""Chaos campaigns (conformance.chaos): the seeded schedule, the pure judge on histories
recorded by real campaigns (tests/data/chaos, written by ``conformance chaos --out``), the
hypothesis shrinker, scenario files, and two short real campaigns: the bundled kafka-python
worker shows no violation, a planted broken worker (a mutant) is refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.chaos.judge import Bounds, Snapshot, history_from_json, judge, liveness, safety
from conformance.chaos.schedule import KINDS, Knobs, Op, ScenarioError, dumps, generate, load, loads
from conformance.chaos.shrink import shrink

DATA = Path(__file__).parent.parent / "data" / "chaos"
ROOT = Path(__file__).parent.parent.parent
BUNDLED_BOUNDS = Bounds(6000, 3000, 15000, 24000)  # kafka-python-worker.toml's timing (campaign.bounds_of)


def test_same_seed_same_schedule_and_another_seed_another() -> None:
    a = generate(11, 3, 60_000, 6000, 2)
    assert a == generate(11, 3, 60_000, 6000, 2)
    assert a.ops != generate(12, 3, 60_000, 6000, 2).ops
    assert len(a.ops) == Knobs().ops and all(o.at_ms < 36_000 for o in a.ops)


def test_a_kind_weighted_zero_is_never_drawn() -> None:
    weights = {k: 1.0 for k in KINDS} | {"pause": 0.0, "kill": 0.0}
    kinds = {o.kind for seed in range(30) for o in generate(seed, 3, 60_000, 6000, 2, Knobs(ops=10,
                                                                                           weights=weights)).ops}
    assert "pause" not in kinds and "kill" not in kinds and len(kinds) > 5


def test_pauses_outlast_the_session_half_of_the_time() -> None:
    pauses = [o.for_ms for seed in range(40) for o in generate(seed, 3, 60_000, 6000, 2).ops if o.kind == "pause"]
    assert {3000, 9000} == set(pauses)


def test_scenario_file_round_trip(tmp_path: Path) -> None:
    s = generate(5, 3, 30_000, 6000, 2)
    (tmp_path / "s.toml").write_text(dumps(s, "kafka-python-worker", "liveness ..."), encoding="utf-8")
    assert load(tmp_path / "s.toml") == ("kafka-python-worker", s)


@pytest.mark.parametrize("text,where", [
    ("[scenario]\ntarget='t'\nseed=1\nworkers=1\nduration_ms=1\n", "scenario.session_timeout_ms: missing"),
    ("[scenario]\ntarget='t'\nseed=1\nworkers=1\nduration_ms=1\nsession_timeout_ms=1\n[[op]]\nat_ms=1\nkind='boom'\n",
     "op[0].kind: 'boom' is not one of"),
    ("[scenario]\ntarget='t'\nseed=1\nworkers=1\nduration_ms=1\nsession_timeout_ms=1\n[[op]]\nat_ms=1\n"
     "kind='kill'\nwho=2\n", "op[0].who: unknown field"),
    ("[scenario\n", "not a TOML file"),
])
def test_a_bad_scenario_is_one_line_naming_the_field(text: str, where: str) -> None:
    with pytest.raises(ScenarioError) as e:
        loads(text, "s.toml")
    assert str(e.value).startswith("s.toml: ") and where in str(e.value) and "\n" not in str(e.value)


def test_safety_allows_a_double_within_the_grace_only() -> None:
    u = frozenset({("conn-a", 0)})
    snaps = [Snapshot(t, w, u) for t in range(0, 5000, 500) for w in ("w0", "w1")]
    assert safety(snaps, grace_ms=6000) == []
    [f] = safety(snaps, grace_ms=2000)
    assert f.rule == "safety" and "conn-a-0 running on w0 and w1" in f.detail


def test_safety_ignores_a_worker_that_does_not_answer() -> None:
    u = frozenset({("conn-a", 0)})
    snaps = [Snapshot(t, "w0", u) for t in range(0, 5000, 500)] + [
        Snapshot(t, "w1", u, alive=False) for t in range(0, 5000, 500)]
    assert safety(snaps, grace_ms=1000) == []


def _recorded(name: str):
    return history_from_json(json.loads((DATA / name).read_text(encoding="utf-8")))


def test_the_bundled_workers_recorded_campaign_is_judged_clean() -> None:
    h = _recorded("bundled-seed3.history.json")
    assert h.rows and h.snapshots and h.expected == {("conn-a", -1), ("conn-a", 0), ("conn-a", 1),
                                                     ("conn-b", -1), ("conn-b", 0)}
    assert judge(h, BUNDLED_BOUNDS) == []


def test_a_recorded_campaign_cut_short_is_not_judged_live() -> None:
    """Liveness needs evidence after the deadline: a history that ends first is a finding, never a pass."""
    h = _recorded("bundled-seed3.history.json")
    [f] = liveness(replace(h, end_ms=h.schedule.last_fault_end_ms + 1000), BUNDLED_BOUNDS)
    assert "too short to judge liveness" in f.detail


def test_the_mutants_recorded_campaign_is_refused() -> None:
    h = _recorded("mutant-allocation-keeps-revoked-seed3.history.json")
    rules = {f.rule for f in judge(h, BUNDLED_BOUNDS)}
    assert {"liveness", "CONN-INV-05"} <= rules


def test_shrinking_keeps_only_what_the_violation_needs() -> None:
    s = generate(7, 3, 60_000, 6000, 2, Knobs(ops=10))
    s = s.with_ops(s.ops + (Op(40_000, "pause", 1, for_ms=9000),))

    def violates(c) -> bool:  # a pause past the session (6 s) breaks it
        return any(o.kind == "pause" and o.for_ms > 6000 for o in c.ops)
    m = shrink(s, violates, max_examples=60)
    assert [(o.kind, o.for_ms) for o in m.ops] == [("pause", 6001)]
    assert shrink(s, violates, max_examples=60) == m  # derandomized: the same minimal schedule


def test_shrinking_returns_the_schedule_when_no_sub_schedule_violates() -> None:
    s = generate(7, 3, 60_000, 6000, 2)
    assert shrink(s, lambda c: len(c.ops) == len(s.ops) + 1, max_examples=10) == s


# ------------------------------------------------------------ real campaigns (CI)

def _campaign(target: str, tmp_path: Path, seed: int = 3, ops: int = 5, duration_ms: int = 12_000,
              confirm: bool = True):
    from conformance.chaos.campaign import bounds_of, campaign
    from conformance.target import load_target
    t = load_target(target if target.startswith("mutant:") else str(ROOT / target))
    s = generate(seed, 3, duration_ms, t.timing.session_timeout_ms, 2, Knobs(ops=ops))
    return campaign(t, s, bounds_of(t), shrink_examples=0, out=tmp_path, confirm=confirm, log=lambda _: None)


@pytest.mark.xdist_group("chaos")
def test_a_short_campaign_on_the_bundled_worker_shows_no_violation(tmp_path: Path) -> None:
    result = _campaign("fixtures/targets/kafka-python-worker.toml", tmp_path)
    assert result.findings == [], [f.detail for f in result.findings]
    h = result.run.history
    assert len(h.snapshots) > 20 and any(r["api"] == "SyncGroup" for r in h.rows)  # it judged something


@pytest.mark.xdist_group("chaos")
def test_a_short_campaign_refuses_a_planted_broken_worker(tmp_path: Path) -> None:
    """Seed 1's schedule (a kill and a stop with restarts: revocations) violated liveness in
    every run seen, its rerun too; refused means the campaign found a violation."""
    result = _campaign("mutant:allocation-keeps-revoked", tmp_path, seed=1, ops=6,
                       duration_ms=20_000, confirm=False)  # one run: CI's budget
    assert result.findings, "the broken worker went unnoticed"
    assert result.scenario is not None and load(result.scenario)[1] == result.minimal


@pytest.mark.parametrize("argv,says", [
    (["--weight", "bogus=1"], "--weight bogus=1: 'bogus' is not one of"),
    (["--workers", "0"], "--workers, --duration must be positive"),
])
def test_chaos_usage_errors_are_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import main
    assert main(["chaos", "--target", str(ROOT / "fixtures/targets/kafka-python-worker.toml"), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "chaos").glob("*.toml")), ids=lambda p: p.name)
def test_found_scenarios_are_replayable_files(path: Path) -> None:
    """Scenario files a campaign wrote on a confirmed finding (``conformance chaos --replay``)."""
    name, s = load(path)
    assert name and s.ops and s == loads(dumps(s, name))[1]


def test_the_workers_shutdown_after_recording_is_not_judged() -> None:
    """Exchanges after end_ms (the harness stopping the workers) are no part of the campaign."""
    h = _recorded("mutant-allocation-keeps-revoked-seed3.history.json")
    assert judge(replace(h, end_ms=0, rows=h.rows, snapshots=[]), BUNDLED_BOUNDS)[0].rule == "liveness"
    assert [f for f in judge(replace(h, end_ms=0), BUNDLED_BOUNDS) if f.rule.startswith("CONN-INV")] == []
