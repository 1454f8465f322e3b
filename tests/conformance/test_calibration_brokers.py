"""Third-party brokers as calibration targets (fixtures/targets/kfake.toml,
librdkafka-mock.toml): each is certified as a user certifies it, and its outcome per
requirement must be exactly the checked-in one (fixtures/expected/<name>.yaml); every FAIL
there carries its evidence, and docs/brokers.md is generated from those files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.reports.expected import (DOCS_PAGE, EXPECTED_DIR, Expected, bundled, differences, implied, listed,
                                          load_expected, main, problems, render_docs, render_expected, updated)
from conformance.harness.command import find_program
from conformance.harness.runner import outside_claims
from conformance.harness.target import load_target
from tests.support.certification import run_certification

ROOT = Path(__file__).resolve().parents[2]
BROKERS = ("kfake", "librdkafka-mock")


def test_every_calibration_broker_has_its_expected_outcomes() -> None:
    assert sorted(p.stem for p in EXPECTED_DIR.glob("*.yaml")) == sorted(BROKERS)
    for e in bundled():
        assert (ROOT / e.target).is_file() and load_target(ROOT / e.target).kind == "coordinator"


@pytest.mark.parametrize("name", BROKERS)
def test_the_expected_outcomes_are_sound(name: str) -> None:
    """Known ids and outcomes; every FAIL with its evidence; evidence only for deviations."""
    e = load_expected(EXPECTED_DIR / f"{name}.yaml")
    assert problems(e) == []
    assert (EXPECTED_DIR / f"{name}.yaml").read_text() == render_expected(e), \
        "written by `python -m conformance.reports.expected update` (its own layout), not by hand"


@pytest.mark.parametrize("name", BROKERS)
def test_the_file_lists_deviations_and_implies_the_rest(name: str, tmp_path: Path) -> None:
    """Every requirement of the suite has an expected outcome; the file lists only those the
    target file does not decide: unlisted is PASS, or NOT-APPLICABLE exactly when the runner's
    own rule (outside_claims) puts it outside the target's claims. Written and read back, the
    file gives the same full mapping."""
    e = load_expected(EXPECTED_DIR / f"{name}.yaml")
    target = load_target(ROOT / e.target)
    suite = default_catalogue().for_suite(target.kind)
    assert set(e.outcomes) == {r.id for r in suite}
    shown = listed(e)
    for r in suite:
        if r.id not in shown:
            assert e.outcomes[r.id] == ("PASS" if outside_claims(r, target) is None else "NOT-APPLICABLE"), r.id
    assert all(o != implied(e.target)[i] for i, o in shown.items())
    (tmp_path / "x.yaml").write_text(render_expected(e))
    assert load_expected(tmp_path / "x.yaml").outcomes == e.outcomes


def test_a_changed_unlisted_outcome_is_named() -> None:
    """What the file leaves unlisted is still checked: an implied PASS or NOT-APPLICABLE that
    a run changes fails the check with the requirement, the expected and the actual outcome."""
    e = load_expected(EXPECTED_DIR / "librdkafka-mock.yaml")
    shown, target = listed(e), load_target(ROOT / e.target)
    cat = default_catalogue()
    passed = next(i for i, o in sorted(e.outcomes.items()) if o == "PASS" and i not in shown)
    outside = next(i for i in sorted(e.outcomes) if outside_claims(cat[i], target) is not None)
    run_na = next(i for i, o in sorted(shown.items()) if o == "NOT-APPLICABLE")
    actual = {**e.outcomes, passed: "NOT-APPLICABLE", outside: "PASS", run_na: "PASS"}
    assert differences(e, actual) == sorted([f"{passed}: expected PASS, got NOT-APPLICABLE",
                                             f"{outside}: expected NOT-APPLICABLE, got PASS",
                                             f"{run_na}: expected NOT-APPLICABLE, got PASS"])


def test_a_bad_target_in_the_file_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("target: fixtures/targets/nosuch.toml\nimplementation: x\nversion: '1'\ncommand: x\noutcomes: {}\n")
    with pytest.raises(ValueError) as err:
        load_expected(f)
    assert str(err.value).startswith(f"{f}: target: ") and "\n" not in str(err.value)


def test_the_docs_page_is_generated_from_the_expected_outcomes() -> None:
    assert DOCS_PAGE.read_text(encoding="utf-8") == render_docs(bundled()), \
        "run `python -m conformance.reports.expected docs` and commit docs/brokers.md"


def test_a_changed_outcome_is_named_and_a_new_deviation_needs_evidence() -> None:
    e = load_expected(EXPECTED_DIR / "kfake.yaml")
    passed = next(i for i, o in sorted(e.outcomes.items()) if o == "PASS")
    actual = {**e.outcomes, passed: "FAIL"}
    del actual[next(iter(sorted(e.outcomes)))]
    found = differences(e, actual)
    assert f"{passed}: expected PASS, got FAIL" in found and len(found) == 2
    fresh = updated(e, actual)
    assert fresh.outcomes == actual
    assert any(p.endswith(f"deviations.{passed}: FAIL needs one line of evidence (the spec's sentence, or "
                          "Apache Kafka's behaviour and where in its source)") for p in problems(fresh))
    # What still deviates keeps its evidence.
    assert all(fresh.deviations[i] == d for i, d in e.deviations.items() if i in actual)


def test_an_outcome_seen_to_differ_in_a_further_run_is_kept_with_its_reason(tmp_path: Path) -> None:
    """A broker racing with the cases' timing: ``update --again`` keeps both outcomes as
    seen; a run giving either passes, a third outcome does not, and the file needs the why."""
    e = load_expected(EXPECTED_DIR / "kfake.yaml")
    passed = next(i for i, o in sorted(e.outcomes.items()) if o == "PASS")
    again = updated(e, {**e.outcomes, passed: "FAIL"}, again=True)
    assert again.outcomes == e.outcomes and again.varies == {passed: ["FAIL", "PASS"]}
    assert differences(again, {**e.outcomes, passed: "FAIL"}) == [] and differences(again, e.outcomes) == []
    assert differences(again, {**e.outcomes, passed: "BROKEN"}) == [f"{passed}: expected FAIL or PASS, got BROKEN"]
    assert any(p.endswith(f"deviations.{passed}: its outcome varies between runs (FAIL, PASS); say why "
                          "(the broker's race)") for p in problems(again))
    (tmp_path / "x.yaml").write_text(render_expected(again))
    assert load_expected(tmp_path / "x.yaml").varies == again.varies


def test_a_failure_carrying_the_documented_race_is_that_race() -> None:
    e = load_expected(EXPECTED_DIR / "librdkafka-mock.yaml")
    assert e.race, "the mock's SyncGroup race is documented"
    passed = next(i for i, o in sorted(e.outcomes.items()) if o == "PASS" and i not in e.varies)
    actual = {**e.outcomes, passed: "FAIL"}
    assert differences(e, actual, {passed: f"m2: SyncGroup response: undecodable: {e.race}"}) == []
    assert differences(e, actual, {passed: "m2's heartbeat: expected NONE, got UNKNOWN_MEMBER_ID"}) != []


def test_evidence_for_what_does_not_deviate_is_refused(tmp_path: Path) -> None:
    e = load_expected(EXPECTED_DIR / "kfake.yaml")
    passed = next(i for i, o in sorted(e.outcomes.items()) if o == "PASS")
    bad = Expected(tmp_path / "x.yaml", e.target, e.implementation, e.version, e.command, e.outcomes,
                   {**e.deviations, passed: {"evidence": "it passed", "upstream": False}})
    assert f"{bad.path}: deviations.{passed}: the outcome is PASS, not a deviation" in problems(bad)


def test_a_file_that_is_not_sound_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "x.yaml"
    broken.write_text("target: [\n")
    results = tmp_path / "results.json"
    results.write_text("{}")
    assert main(["check", str(broken), "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and str(results) in err


# No xdist_group: under `--dist loadgroup` the two runs spread over the suite's workers.
@pytest.mark.parametrize("name", BROKERS)
def test_the_broker_gives_exactly_its_expected_outcomes(name: str, tmp_path: Path) -> None:
    e = load_expected(EXPECTED_DIR / f"{name}.yaml")
    target = load_target(ROOT / e.target)
    program = (target.command or "").split()[0]
    assert program.startswith("{") or find_program(program), f"{program} not built: run .ci/setup.sh"
    r = run_certification(ROOT / e.target, tmp_path, suite="coordinator", workers=2, timeout_s=1200)
    tail = (r.stdout + r.stderr)[-3000:]
    assert (tmp_path / "results.json").is_file(), tail
    results = json.loads((tmp_path / "results.json").read_text())
    messages = {x["id"]: x["message"] or "" for x in results["results"]}
    diffs = differences(e, {x["id"]: x["outcome"] for x in results["results"]}, messages)
    assert not diffs, (f"{name}: outcomes changed from fixtures/expected/{name}.yaml:\n  "
                       + "\n  ".join(f"{d}  ({messages.get(d.split(':')[0], '').splitlines()[:1]})" for d in diffs))
    assert main(["check", str(e.path), "--results", str(tmp_path / "results.json")]) == 0
    broken, failed = ("BROKEN" in e.outcomes.values()), e.verdict == "NOT CERTIFIED"
    assert r.returncode == (3 if broken else 1 if failed else 0), tail  # fakebroker/exit_codes.py
