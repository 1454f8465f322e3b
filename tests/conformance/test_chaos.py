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
    t = load_target(str(ROOT / target))
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
    result = _campaign("fixtures/mutants/workers/allocation-keeps-revoked.toml", tmp_path, seed=1, ops=6,
                       duration_ms=20_000, confirm=False)  # one run: CI's budget
    assert result.findings, "the broken worker went unnoticed"
    assert result.scenario is not None and load(result.scenario)[1] == result.minimal


@pytest.mark.parametrize("argv,says", [
    (["--weight", "bogus=1"], "--weight bogus=1: 'bogus' is not one of"),
    (["--workers", "0"], "--workers, --duration must be positive"),
    (["--budget", "-1"], "--ops, --budget not negative"),
])
def test_chaos_usage_errors_are_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import main
    assert main(["chaos", "--target", str(ROOT / "fixtures/targets/kafka-python-worker.toml"), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "chaos").glob("*.toml")), ids=lambda p: p.name)
def test_found_scenarios_are_replayable_files(path: Path) -> None:
    """Scenario files a campaign wrote on a confirmed finding (``conformance chaos --replay``,
    a case of a target's [chaos] scenarios): the schedule (possibly empty: the bug needed no
    fault) and the rules it broke, tied to a catalogue requirement."""
    from conformance.chaos.regression import load_regression
    scenario = load_regression(path)
    assert scenario.target and scenario.violated and scenario.schedule == loads(dumps(scenario.schedule, ""))[1]


def test_the_workers_shutdown_after_recording_is_not_judged() -> None:
    """Exchanges after end_ms (the harness stopping the workers) are no part of the campaign."""
    h = _recorded("mutant-allocation-keeps-revoked-seed3.history.json")
    assert judge(replace(h, end_ms=0, rows=h.rows, snapshots=[]), BUNDLED_BOUNDS)[0].rule == "liveness"
    assert [f for f in judge(replace(h, end_ms=0), BUNDLED_BOUNDS) if f.rule.startswith("CONN-INV")] == []


# ------------------------------------------------------------ found scenarios as regression cases

MUTANT_SCENARIO = ROOT / "fixtures" / "chaos" / "chaos-worker-mutant-allocation-keeps-revoked-seed1.toml"


def _with_scenarios(tmp_path: Path, target: str, scenarios: list[str], name: str | None = None) -> Path:
    """A copy of a target file with a [chaos] table (the scenarios' paths absolute: the copy
    lives elsewhere)."""
    text = (ROOT / target).read_text(encoding="utf-8")
    if name:
        text = text.replace(text.split('name = "', 1)[1].split('"', 1)[0], name, 1)
    path = tmp_path / Path(target).name
    path.write_text(text + "\n[chaos]\nscenarios = [" + ", ".join(f'"{s}"' for s in scenarios) + "]\n",
                    encoding="utf-8")
    return path


def test_a_target_names_its_scenarios_relative_to_its_file(tmp_path: Path) -> None:
    from conformance.target import load_target
    (tmp_path / "found").mkdir()
    (tmp_path / "found" / "x.toml").write_text(MUTANT_SCENARIO.read_text(encoding="utf-8"), encoding="utf-8")
    t = load_target(_with_scenarios(tmp_path, "fixtures/targets/kafka-python-worker.toml", ["found/x.toml"]))
    assert t.chaos_scenarios == ((tmp_path / "found" / "x.toml").resolve(),)


@pytest.mark.parametrize("scenario,says", [
    ("missing.toml", "chaos.scenarios[0]: "),
    ("bad.toml", "scenario.violated: empty: each a catalogue id, safety or liveness"),
    ("typo.toml", "scenario.violated: CONN-INV-99: each a catalogue id"),
])
def test_a_target_with_a_bad_scenario_is_refused_naming_it(tmp_path: Path, scenario: str, says: str) -> None:
    from conformance.target import TargetError, load_target
    text = MUTANT_SCENARIO.read_text(encoding="utf-8")
    (tmp_path / "bad.toml").write_text(text.replace('violated = ["liveness"]\n', ""), encoding="utf-8")
    (tmp_path / "typo.toml").write_text(text.replace('"liveness"', '"CONN-INV-99"'), encoding="utf-8")
    with pytest.raises(TargetError) as e:
        load_target(_with_scenarios(tmp_path, "fixtures/targets/kafka-python-worker.toml", [scenario]))
    assert says in str(e.value) and f"chaos.scenarios[0]: {tmp_path / scenario}" in str(e.value)


def test_a_scenario_is_reported_under_the_requirement_of_what_it_broke(tmp_path: Path) -> None:
    from conformance.chaos.regression import requirement_of
    from conformance.chaos.schedule import read_scenario
    mutant = read_scenario(MUTANT_SCENARIO)
    assert mutant.name == MUTANT_SCENARIO.stem and mutant.violated == ("liveness",)
    assert requirement_of(mutant) == "CONN-INV-05"
    assert requirement_of(replace(mutant, violated=("liveness", "CONN-INV-04"))) == "CONN-INV-04"
    assert requirement_of(replace(mutant, violated=("safety",))) == "CONN-INV-01"


def _run_scenario(tmp_path: Path, target: str, name: str | None = None) -> tuple[int, dict]:
    from tests.support.certification import run_certification
    path = _with_scenarios(tmp_path, target, [str(MUTANT_SCENARIO)], name)
    r = run_certification(path, tmp_path / "r", "-k", MUTANT_SCENARIO.stem, suite="worker", timeout_s=600)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout[-3000:] + r.stderr[-3000:]
    results = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    [row] = [x for x in results["results"] if x["id"] == MUTANT_SCENARIO.stem]
    return r.returncode, row


@pytest.mark.xdist_group("chaos")
def test_conformance_run_refuses_the_broken_worker_on_its_found_scenario(tmp_path: Path) -> None:
    """The scenario a real campaign wrote on the planted broken worker (seed 1), as a case of
    that worker's target: it fails again, under the scenario's name, in CONN-INV-05's row."""
    code, row = _run_scenario(tmp_path, "fixtures/mutants/workers/allocation-keeps-revoked.toml")
    assert (code, row["outcome"], row["requirement"]) == (1, "FAIL", "CONN-INV-05"), row
    assert "breaks liveness again" in row["message"]
    cert = json.loads((tmp_path / "r" / "certificate.json").read_text(encoding="utf-8"))
    assert MUTANT_SCENARIO.stem in cert["failed"] and cert["verdict"] == "NOT CERTIFIED"
    allure = [json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "r" / "allure-results").glob("*-result.json")]
    [case] = [a for a in allure if {"name": "as_id", "value": MUTANT_SCENARIO.stem} in a["labels"]]
    assert case["status"] == "failed" and {"name": "story", "value": "CONN-INV-05"} in case["labels"]


@pytest.mark.xdist_group("chaos")
def test_conformance_run_passes_the_bundled_worker_on_the_same_scenario(tmp_path: Path) -> None:
    code, row = _run_scenario(tmp_path, "fixtures/targets/kafka-python-worker.toml")
    assert (row["outcome"], row["requirement"]) == ("PASS", "CONN-INV-05"), row
    assert code == 4  # PARTIAL: -k ran the scenario only
    assert "group exchanges" in row["message"] and "status snapshots" in row["message"]


def test_shrinking_runs_each_candidate_once_and_keeps_its_first_answer() -> None:
    """A real run's verdict varies: hypothesis' replay of the example it keeps must get the
    answer that made it keep it (it called the 2.4.1 campaign's shrink flaky and stopped)."""
    s = generate(7, 3, 60_000, 6000, 2, Knobs(ops=4))
    calls: list = []

    def violates_once(c) -> bool:  # True the first time only: a finding its rerun does not show
        calls.append(c)
        return calls.count(c) == 1
    m = shrink(s, violates_once, max_examples=10)
    assert m.ops == () and len(calls) == len(set(calls))
