"""The pytest plugin: inert without --conformance-target; refuses an invalid target naming the field;
maps outcomes onto pytest; writes results.json; certificates and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.catalogue.requirements import default_catalogue, load_catalogue
from conformance.reports.certificate import build_certificate, render_markdown
from conformance.harness.golden import golden_dir
from conformance.harness.outcomes import CaseResult, Outcome
from conformance.harness.runner import applicability
from conformance.reports.provenance import provenance
from conformance.harness.target import load_target
from fakebroker.exit_codes import EXIT_BROKEN, EXIT_PARTIAL

ROOT = Path(__file__).resolve().parents[2]
FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"


@pytest.fixture
def classic_only(tmp_path: Path) -> Path:
    """The bundled fake broker target claiming the classic protocol only, so the draft's
    connect cases must come out NOT-APPLICABLE."""
    text = FAKEBROKER.read_text()
    assert 'protocols = ["classic", "connect"]' in text
    path = tmp_path / "fakebroker-classic.toml"
    path.write_text(text.replace('protocols = ["classic", "connect"]', 'protocols = ["classic"]'))
    return path


def pytest_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def test_without_target_nothing_is_collected() -> None:
    r = pytest_run("--pyargs", "conformance", "-q")
    assert r.returncode == 5, r.stdout + r.stderr  # "no tests ran"


def test_invalid_target_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nkind = "broker"\nprotocols = ["classic"]\n[start]\nbootstrap = "h:1"\n')
    r = pytest_run("--pyargs", "conformance", "--conformance-target", str(bad), "-q")
    assert r.returncode == 4
    assert "kind: 'broker' is not one of" in r.stderr


def test_run_maps_outcomes_and_writes_results(tmp_path: Path, classic_only: Path) -> None:
    results = tmp_path / "results.json"
    r = pytest_run("--pyargs", "conformance", "--conformance-target", str(classic_only), "-v",
                   "--conformance-results", str(results),
                   "-k", "CLS-JOIN-01 or CLS-JOIN-15 or C848-HB-VAL-01 or C848-REC-01")
    assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:]  # narrowed with -k: never CERTIFIED
    assert "test_requirement[CLS-JOIN-01] PASS" in r.stdout
    assert "test_requirement[C848-HB-VAL-01] NOT-APPLICABLE" in r.stdout
    doc = json.loads(results.read_text())
    got = {x["id"]: x["outcome"] for x in doc["results"]}
    assert got == {"CLS-JOIN-01": "PASS", "CLS-JOIN-15": "PASS", "C848-HB-VAL-01": "NOT-APPLICABLE",
                   "C848-REC-01": "NOT-APPLICABLE"}
    assert doc["target"]["name"] == "fakebroker" and doc["target"]["version"] != "auto"


def test_mutant_fails_with_expected_and_actual(tmp_path: Path) -> None:
    r = pytest_run("--pyargs", "conformance", "--conformance-target", "mutant:wide-session-bounds",
                   "-q", "--conformance-results", str(tmp_path / "r.json"), "-k", "CLS-JOIN-03")
    assert r.returncode == 1
    assert "FAIL CLS-JOIN-03 (MUST)" in r.stdout and "expected" in r.stdout


def test_broken_case_is_an_error_and_allure_broken(tmp_path: Path) -> None:
    """A target nobody answers: the case runs in the test body and is BROKEN; pytest reports
    an error, Allure "broken", results.json the BROKEN record."""
    target = tmp_path / "nobody.toml"
    target.write_text('name = "nobody-home"\nkind = "coordinator"\nprotocols = ["classic"]\n'
                      '[implementation]\nname = "nothing"\nversion = "0"\n[start]\nbootstrap = "127.0.0.1:1"\n'
                      '[timing]\nclock = "real"\n')
    r = pytest_run("--pyargs", "conformance", "--conformance-target", str(target), "-v", "-k", "CLS-JOIN-03",
                   "--conformance-no-artefact-digest",  # an external coordinator: nothing local to digest
                   "--conformance-results", str(tmp_path / "r.json"), "--alluredir", str(tmp_path / "allure"))
    assert r.returncode == EXIT_BROKEN and "test_requirement[CLS-JOIN-03] BROKEN" in r.stdout, r.stdout[-2000:]
    assert "1 error" in r.stdout.splitlines()[-1]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [(x["id"], x["outcome"]) for x in doc["results"]] == [("CLS-JOIN-03", "BROKEN")]
    statuses = {json.loads(f.read_text())["name"].split(":")[0]: json.loads(f.read_text())["status"]
                for f in (tmp_path / "allure").glob("*-result.json")}
    assert statuses == {"CLS-JOIN-03": "broken", "Verdict": "failed"}


# ---------------------------------------------------------------- applicability and verdicts

def test_applicability_never_passes_by_default(classic_only: Path) -> None:
    cat = load_catalogue()
    target = load_target(classic_only)
    assert applicability(cat["C848-HB-VAL-01"], target, None)[0] is Outcome.NOT_APPLICABLE
    assert applicability(cat["CONN-PROT-01"], target, None)[0] is Outcome.NOT_APPLICABLE  # binds workers
    assert applicability(cat["C848-REC-01"], target, None)[0] is Outcome.NOT_APPLICABLE   # untestable
    assert applicability(cat["CLS-JOIN-02"], target, None)[0] is Outcome.BROKEN           # no case


def run_doc(outcomes: dict[str, str], *, strict: bool = False) -> dict:
    return {"target": {"name": "t", "path": "t.toml", "kind": "coordinator", "implementation": "t",
                       "version": "1", "protocols": ["classic"], "capabilities": [], "mutant": None},
            "suite": "coordinator", "strict": strict, "left_out": [], "versions": {},
            "provenance": provenance(load_target(FAKEBROKER), 0.0, 1.0),
            "results": [{"id": i, "outcome": o, "message": ""} for i, o in outcomes.items()]}


@pytest.mark.parametrize("outcomes, strict, certified", [
    ({"CLS-JOIN-01": "PASS", "CLS-JOIN-15": "NON-STRICT", "C848-HB-VAL-01": "NOT-APPLICABLE"}, False, True),
    ({"CLS-JOIN-01": "PASS", "CLS-JOIN-15": "NON-STRICT"}, True, False),
    ({"CLS-JOIN-01": "FAIL"}, False, False),
    ({"CLS-JOIN-01": "BROKEN"}, False, False),
])
def test_verdict(outcomes: dict[str, str], strict: bool, certified: bool) -> None:
    cert = build_certificate(run_doc(outcomes, strict=strict))
    assert cert["certified"] is certified
    assert ("CERTIFIED" if certified else "NOT CERTIFIED") == cert["verdict"]
    assert "# Conformance certificate: t" in render_markdown(cert)


def test_a_case_left_out_makes_the_run_partial() -> None:
    doc = run_doc({"CLS-JOIN-01": "PASS"})
    doc["left_out"].append({"id": "CLS-JOIN-02", "reason": "no result recorded"})
    cert = build_certificate(doc)
    assert cert["verdict"] == "PARTIAL" and not cert["certified"]
    assert "| CLS-JOIN-02 | no result recorded |" in render_markdown(cert)
    del doc["left_out"]  # a results.json that does not say what it covered proves nothing
    assert build_certificate(doc)["verdict"] == "PARTIAL"


def test_case_result_record_is_json() -> None:
    r = CaseResult("CLS-JOIN-01", "MUST", Outcome.FAIL, "m", expected={1, 2}, actual=b"\x01")
    assert json.loads(json.dumps(r.record()))["actual"] == "01"


def test_cli_run_exit_codes(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", str(FAKEBROKER), "-n", "0",
                         "--reports", str(tmp_path / "ok"), "--no-html", "-k", "CLS-JOIN-0"],
                        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 4, ok.stdout[-2000:] + ok.stderr[-2000:]  # PARTIAL: narrowed with -k
    cert = json.loads((tmp_path / "ok" / "certificate.json").read_text())
    assert cert["verdict"] == "PARTIAL" and (tmp_path / "ok" / "certificate.md").exists()
    assert {r["outcome"] for r in cert["requirements"]} == {"PASS"}
    bad = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", str(tmp_path / "none.toml")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot read" in bad.stderr


def test_cli_run_jobs_shows_progress_as_it_goes_and_names_the_summary(tmp_path: Path) -> None:
    """--jobs 2: both targets run at once; each case's outcome is printed as it comes, before
    any target's summary (not 2 minutes of silence, then everything); then each target's
    block (its == line, the end of its pytest output, its verdict) in the order given, each
    naming the pytest.log holding its whole output; the last line names the summary."""
    copy = tmp_path / "fakebroker-copy.toml"
    copy.write_text(FAKEBROKER.read_text().replace('name = "fakebroker"', 'name = "fakebroker-copy"', 1))
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", str(FAKEBROKER),
                        "--target", str(copy), "--jobs", "2", "-n", "0", "--reports", str(reports),
                        "--no-html", "-k", "CLS-JOIN-01 or CLS-JOIN-03"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]  # PARTIAL: narrowed with -k
    text = r.stdout.splitlines()
    blocks = [i for i, x in enumerate(text) if re.match(r"== fakebroker(-copy)? \(", x)]
    assert [text[i].split(" ")[1] for i in blocks] == ["fakebroker", "fakebroker-copy"], r.stdout[-3000:]
    for name, block in zip(("fakebroker", "fakebroker-copy"), blocks):  # a target's block may come
        # while the other still runs: each target's outcomes come before its own block
        progress = [i for i, x in enumerate(text) if re.fullmatch(rf"   \[{name}\] CLS-JOIN-0[13] PASS", x)]
        assert len(progress) == 2 and max(progress) < block, r.stdout[-3000:]
    for name in ("fakebroker", "fakebroker-copy"):
        log = reports / name / "pytest.log"
        assert f"   pytest output: {log}" in text and log.read_text().count("test session starts") == 1
    assert text[-1] == f"== summary of 2 targets: {reports / 'certificate.md'} (and .json)"
    index = json.loads((reports / "certificate.json").read_text())
    assert [t["target"] for t in index["targets"]] == ["fakebroker", "fakebroker-copy"]
    bad = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", str(FAKEBROKER),
                          "--jobs", "0"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--jobs must be at least 1" in bad.stderr


def golden_requirements() -> list[Any]:
    """Requirements whose only cases are golden transcripts (no live case)."""
    from conformance import suites
    from conformance.harness.cases import load_cases
    return [r for r in default_catalogue() if r.transcripts and r.id not in load_cases(suites)]


def test_golden_transcripts_are_cases_of_their_requirement(tmp_path: Path) -> None:
    goldens = golden_requirements()
    assert len(goldens) >= 2 and golden_dir() is not None  # the checkout has its golden folder
    results = tmp_path / "results.json"
    r = pytest_run("--pyargs", "conformance", "--conformance-target", str(FAKEBROKER), "-v", "--conformance-results",
                   str(results), "-k", f"{goldens[0].id} or CLS-HB-06")
    assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:]
    assert f"test_requirement[{goldens[0].id}] PASS" in r.stdout
    doc = json.loads(results.read_text())
    assert {(x["id"], x["outcome"]) for x in doc["results"]} == {(goldens[0].id, "PASS"), ("CLS-HB-06", "PASS")}
    assert goldens[1].id in {x["id"] for x in doc["left_out"]}
    cert = build_certificate(doc)
    rows = {x["id"]: x for x in cert["requirements"]}
    assert cert["verdict"] == "PARTIAL" and rows[goldens[0].id]["transcripts"] == list(goldens[0].transcripts)
    # CLS-HB-06 has a live case and a transcript: one row, both cases listed and passed.
    assert rows["CLS-HB-06"]["cases"] == [{"case": "live", "outcome": "PASS", "detail": ""},
                                          {"case": "CLS-HB-06.jsonl", "outcome": "PASS", "detail": ""}]
    # A golden case is counted with the others at its requirement's level (CLS-HB-06 is a SHOULD:
    # docs/catalogue-audit.md), and summed up in goldens.
    levels = [default_catalogue()[i].level for i in (goldens[0].id, "CLS-HB-06")]
    assert cert["goldens"]["replayed"] == 2
    assert {lv: cert["counts"][lv]["PASS"] for lv in levels} == {lv: levels.count(lv) for lv in levels}


def test_a_retired_id_in_k_selects_its_successor(tmp_path: Path) -> None:
    """-k with an id of the former golden catalogue (schemas/id-renames.json) runs the
    requirement that holds its rule now."""
    results = tmp_path / "results.json"
    r = pytest_run("--pyargs", "conformance", "--conformance-target", str(FAKEBROKER), "-v", "--conformance-results",
                   str(results), "-k", "CLASSIC-HB-ERR-01")
    assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:]
    assert {x["id"] for x in json.loads(results.read_text())["results"]} == {"CLS-HB-06"}


def test_golden_replay_catches_a_mutant() -> None:
    from conformance.harness.golden import ReplayDiverged, replay_transcripts
    mutant = load_target("mutant:illegal-generation-ignored")
    hb = [r for r in default_catalogue() if r.transcripts and r.id.startswith("CLS-HB-")]
    assert hb
    caught = []
    for req in hb:
        try:
            replay_transcripts(req, mutant, None)
        except ReplayDiverged as e:
            caught.append(str(e))
    assert caught, [r.id for r in hb]


def test_the_pytest_route_certifies_and_report_refuses_two_runs_mixed(tmp_path: Path) -> None:
    """The issue's sequence: a run with Allure output and its rendered report, then a run by
    the pytest route into the same folder without Allure. The second run's certificate is its
    own (verdict, run id) and does not link the first run's report; `conformance report`
    then refuses the folder, naming both runs."""
    from conformance.reports.certificate import ALLURE_REPORT, allure_binary, render_allure, write_certificate
    if allure_binary() is None:
        pytest.fail("allure-commandline not found: run .ci/setup.sh")
    reports = tmp_path / "reports"
    common = ("--pyargs", "conformance", "--conformance-target", str(FAKEBROKER), "--conformance-results",
              str(reports / "results.json"))
    first = pytest_run(*common, "-k", "CLS-JOIN-01", "--alluredir", str(reports / "allure-results"))
    assert first.returncode == EXIT_PARTIAL, first.stdout[-2000:]
    run1 = json.loads((reports / "results.json").read_text())["run_id"]
    assert render_allure(reports / "allure-results", reports / "allure-report")[0] is not None
    assert write_certificate(reports)["allure_report"] == ALLURE_REPORT  # run 1's report, of run 1
    second = pytest_run(*common, "-k", "CLS-JOIN-03")
    assert second.returncode == EXIT_PARTIAL, second.stdout[-2000:]
    lines = second.stdout.splitlines()
    assert any(line.startswith("=") and "PARTIAL: MUST PASS=1" in line for line in lines), second.stdout[-2000:]
    cert = json.loads((reports / "certificate.json").read_text())
    assert cert["run_id"] != run1 and cert["verdict"] == "PARTIAL" and cert["allure_report"] is None
    assert f"certificate: {reports / 'certificate.md'} (run {cert['run_id']})" in second.stdout
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "report", "--reports", str(reports), "--no-html"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    [line] = r.stderr.splitlines()
    assert f"results.json is of run {cert['run_id']} but allure-results/ of run {run1}" in line
