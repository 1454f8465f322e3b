"""The certificate tells the truth: a narrowed run is PARTIAL with what it left out; worker
requirements of Connect's sub-protocols run once per claimed protocol; goldens are counted
with their requirements (and summed up apart); provenance; the JSON Schema; JUnit XML; exit codes; markers; --version."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conformance import suites
from conformance.catalogue.requirements import default_catalogue
from conformance.harness.cases import load_cases
from conformance.reports.certificate import CertificateError, build_certificate, exit_code, render_markdown
from conformance.reports.junit import junit_tree
from conformance.reports.provenance import (artefact, artefact_files, ci_run, digest_files, implementation_text, spec_documents,
                                    provenance, utc_iso)
from conformance.harness.scope import case_id, left_out, protocols_to_run, requirement_runs, requirements_of, scope_ids
from conformance.harness.target import load_target
from fakebroker.exit_codes import EXIT_BROKEN, EXIT_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ROOT / "fixtures" / "targets"
FAKEBROKER = TARGETS / "fakebroker.toml"
WORKER = TARGETS / "kafka-python-worker.toml"
SCHEMA = json.loads((ROOT / "schemas" / "certificate.schema.json").read_text())


def conformance(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def narrowed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The issue's own example: the fake broker narrowed to one requirement with -k."""
    reports = tmp_path_factory.mktemp("narrowed")
    r = conformance("run", "--target", str(FAKEBROKER), "-n", "0", "--reports", str(reports), "--no-html",
                    "-k", "CLS-JOIN-03", "--junitxml", str(reports / "junit.xml"))
    return r, reports


# ---------------------------------------------------------------- PARTIAL

def test_a_run_narrowed_with_k_is_partial_and_says_what_it_left_out(narrowed_run) -> None:
    r, reports = narrowed_run
    assert r.returncode == EXIT_PARTIAL, r.stdout[-2000:] + r.stderr[-2000:]
    assert "PARTIAL: MUST PASS=1" in r.stdout and "CERTIFIED" not in r.stdout
    cert = json.loads((reports / "certificate.json").read_text())
    target = load_target(FAKEBROKER)
    left = {x["id"]: x["reason"] for x in cert["left_out"]}
    # Everything of the scope but the one case ran is listed, with the filter that left it out.
    assert set(left) == set(scope_ids(target)) - {"CLS-JOIN-03"}
    assert left["CLS-JOIN-01"] == "not run in a run narrowed with -k 'CLS-JOIN-03'"
    assert "CLS-COMMIT-01" in left  # requirements whose cases are golden transcripts too
    md = (reports / "certificate.md").read_text()
    assert "**Verdict: PARTIAL**" in md and "| CLS-JOIN-01 | not run in a run narrowed with -k 'CLS-JOIN-03' |" in md
    results = json.loads((reports / "results.json").read_text())
    assert results["left_out"] == cert["left_out"]


def test_the_real_certificate_matches_its_schema(narrowed_run) -> None:
    _, reports = narrowed_run
    cert = json.loads((reports / "certificate.json").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(cert)
    # The versions negotiated with the target (its ApiVersions, the codec's ranges).
    assert cert["api_versions"]["JoinGroup"] == [0, 9] and cert["api_versions"]["SyncGroup"] == [0, 5]
    assert "| API versions negotiated | ApiVersions 0-" in (reports / "certificate.md").read_text()
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(dict(cert, api_versions={"JoinGroup": [9]})))
    broken = dict(cert, verdict="OK")  # the schema is not vacuous
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(broken))
    epoch = dict(cert, provenance=dict(cert["provenance"], started=1700000000.5))
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(epoch))


def test_junit_file_parses_with_ids_titles_and_statuses(narrowed_run) -> None:
    _, reports = narrowed_run
    suite = ET.parse(reports / "junit.xml").getroot()
    assert suite.tag == "testsuite"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verdict"] == "PARTIAL"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    passed = [n for n in cases if n.startswith("CLS-JOIN-03: ")]
    assert passed and "INVALID_SESSION_TIMEOUT" in passed[0]
    # A pass has no outcome element; its output lists the requirement's cases.
    assert [(c.tag, c.text) for c in cases[passed[0]]] == [("system-out", "cases: live PASS, CLS-JOIN-03.jsonl PASS")]
    left = cases["CLS-JOIN-01"].find("skipped")
    assert left is not None and left.get("message").startswith("LEFT OUT: not run in a run narrowed with -k")
    assert int(suite.get("tests")) == len(cases) and int(suite.get("skipped")) == len(cases) - 1


def test_junit_failure_and_error_carry_the_message() -> None:
    cert = build_certificate(run_doc({"CLS-JOIN-01": ("FAIL", "JoinGroup error: expected 79, got 0"),
                                      "CLS-JOIN-02": ("BROKEN", "harness error: boom")}))
    suite = junit_tree(cert).getroot()
    fail = next(c for c in suite.iter("testcase") if c.get("name").startswith("CLS-JOIN-01: "))
    assert fail.find("failure").text == "JoinGroup error: expected 79, got 0"
    err = next(c for c in suite.iter("testcase") if c.get("name").startswith("CLS-JOIN-02: "))
    assert err.find("error").get("message") == "BROKEN: harness error: boom"
    assert (suite.get("failures"), suite.get("errors")) == ("1", "1")


def test_a_suite_narrower_than_the_target_is_partial(tmp_path: Path) -> None:
    target = load_target(WORKER)
    left = left_out(target, "coordinator", set())
    assert {x["id"] for x in left} == set(scope_ids(target))
    assert all(x["reason"].startswith("outside the suite that ran (coordinator") for x in left)


def test_goldens_not_found_are_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFORMANCE_GOLDEN_DIR", str(tmp_path))  # no rules.json there
    load_cases(suites)  # as the runner's callers do (alone, no other test has loaded them)
    target = load_target(FAKEBROKER)
    recorded = {r.id for r in requirement_runs(requirements_of("coordinator"), target)}
    left = left_out(target, "coordinator", recorded)
    assert [x["id"] for x in left] == ["golden transcripts"]
    assert "no golden folder found" in left[0]["reason"]


def test_a_case_without_a_result_is_left_out() -> None:
    target = load_target(FAKEBROKER)
    recorded = set(scope_ids(target)) - {"CLS-HB-06"}
    assert left_out(target, "coordinator", recorded) == [
        {"id": "CLS-HB-06", "reason": "no result recorded (the run stopped early or a test process died)"}]


def run_doc(outcomes: dict[str, tuple[str, str]], *, kind: str = "coordinator",
            protocols: tuple[str, ...] = ("classic",), left: list | None = None) -> dict:
    results = []
    for cid, (outcome, message) in outcomes.items():
        base, _, proto = cid.partition("[")
        results.append({"id": cid, "requirement": base, "protocol": proto.rstrip("]") or None,
                        "outcome": outcome, "message": message})
    return {"target": {"name": "t", "path": "t.toml", "kind": kind, "implementation": "t", "version": "1",
                       "protocols": list(protocols), "capabilities": [], "mutant": None},
            "suite": kind, "strict": False, "left_out": left or [], "versions": {}, "results": results,
            "provenance": PROVENANCE}


# What the plugin records for the bundled fake broker (its package's files digested).
PROVENANCE = provenance(load_target(TARGETS / "fakebroker.toml"), 0.0, 1.0)


@pytest.mark.parametrize("outcomes, left, verdict, code", [
    ({"CLS-JOIN-01": "PASS"}, [], "CERTIFIED", EXIT_OK),
    ({"CLS-JOIN-01": "PASS"}, [{"id": "CLS-JOIN-02", "reason": "r"}], "PARTIAL", EXIT_PARTIAL),
    ({"CLS-JOIN-01": "FAIL"}, [{"id": "CLS-JOIN-02", "reason": "r"}], "NOT CERTIFIED", EXIT_FAILED),
    ({"CLS-JOIN-01": "BROKEN"}, [], "NOT CERTIFIED", EXIT_BROKEN),
])
def test_verdict_and_exit_code(outcomes: dict[str, str], left: list, verdict: str, code: int) -> None:
    cert = build_certificate(run_doc({k: (v, "") for k, v in outcomes.items()}, left=left))
    assert (cert["verdict"], exit_code(cert)) == (verdict, code)


def test_certified_needs_the_artefacts_digest_or_the_flag_the_certificate_states() -> None:
    """A run whose cases all pass still does not certify an artefact it cannot name: a
    certificate with "sha256 None" vouched for nothing."""
    doc = run_doc({"CLS-JOIN-01": ("PASS", "")})
    external = load_target(TARGETS / "fakebroker.toml")
    external = dataclasses.replace(external, builtin=None, bootstrap="127.0.0.1:9092")
    doc["provenance"] = provenance(external, 0.0, 1.0)  # what the plugin records: nothing to digest
    assert doc["provenance"]["artefact"]["sha256"] is None
    cert = build_certificate(doc)
    assert (cert["verdict"], exit_code(cert)) == ("NOT CERTIFIED", EXIT_FAILED)
    assert "no digest of the tested artefact" in cert["refused"][0]
    assert "- no digest of the tested artefact" in render_markdown(cert)
    doc["provenance"] = provenance(external, 0.0, 1.0, waived=True)  # --no-artefact-digest
    waived = build_certificate(doc)
    assert waived["verdict"] == "CERTIFIED" and waived["refused"] == []
    assert "not digested: the run was given --no-artefact-digest" in render_markdown(waived)


# ---------------------------------------------------------------- per protocol

def test_worker_requirements_run_once_per_claimed_sub_protocol() -> None:
    cat = default_catalogue()
    worker = load_target(WORKER)  # claims classic, eager, compatible, sessioned
    assert protocols_to_run(cat["CONN-INC-02"], worker) == ["compatible", "sessioned"]
    assert protocols_to_run(cat["CONN-PROT-01"], worker) == ["eager", "compatible", "sessioned"]
    assert protocols_to_run(cat["CLS-W-01"], worker) == [None]  # classic only: once
    ids = {r.id for r in requirement_runs(requirements_of("worker"), worker)}
    assert {"CONN-INC-02[compatible]", "CONN-INC-02[sessioned]", "CLS-W-01"} <= ids
    assert "CONN-INC-02" not in ids and "CONN-INC-02[eager]" not in ids
    sessioned_only = load_target(TARGETS / "apache-connect-sessioned.toml")
    assert protocols_to_run(cat["CONN-INC-02"], sessioned_only) == ["sessioned"]
    coordinator = load_target(FAKEBROKER)  # a coordinator takes no connect.protocol
    assert all(r.protocol is None for r in requirement_runs(requirements_of("coordinator"), coordinator))
    assert case_id("CONN-INC-02", "compatible") == "CONN-INC-02[compatible]"


def test_the_worker_context_runs_at_the_protocol_under_test() -> None:
    """run_case hands the case a context whose connect_protocol (and so start_worker's
    default) is the per-protocol run's."""
    from conformance.harness.runner import at_protocol
    from conformance.harness.worker import WorkerContext, WorkerSession
    worker = load_target(WORKER)
    session = WorkerSession(worker)
    view = at_protocol(session, "eager")
    assert view.target.connect_protocol == "eager" and session.target.connect_protocol == "sessioned"
    assert at_protocol(session, None) is session
    ctx = WorkerContext.__new__(WorkerContext)  # the property alone, without a broker
    ctx.target = view.target
    assert ctx.connect_protocol == "eager"


def test_certificate_lists_every_case_per_claimed_protocol() -> None:
    doc = run_doc({"CONN-INC-02[compatible]": ("PASS", ""), "CONN-INC-02[sessioned]": ("FAIL", "x"),
                   "CLS-W-01": ("PASS", "")}, kind="worker", protocols=("classic", "compatible", "sessioned"))
    cert = build_certificate(doc)
    assert cert["per_protocol"]["compatible"]["cases"] == {"CONN-INC-02": "PASS"}
    assert cert["per_protocol"]["sessioned"]["cases"] == {"CONN-INC-02": "FAIL"}
    assert cert["per_protocol"]["classic"]["cases"] == {"CLS-W-01": "PASS"}
    assert cert["failed"] == ["CONN-INC-02[sessioned]"]
    md = render_markdown(cert)
    assert "## Per protocol claimed" in md and "| CONN-INC-02 | PASS | FAIL |" in md
    assert "| sessioned | 0 | 0 | 0 | 1 | 0 |" in md
    # every case under every claimed protocol, classic included (sub-protocols first)
    assert "| requirement | compatible | sessioned | classic |" in md
    assert "| CONN-INC-02 | PASS | FAIL | - |" in md and "| CLS-W-01 | - | - | PASS |" in md


def test_goldens_are_counted_with_their_requirements() -> None:
    doc = run_doc({"CLS-JOIN-02": ("PASS", ""), "CLS-JOIN-25": ("PASS", ""),
                   "CLS-COMMIT-12": ("NOT-APPLICABLE", ""), "CLS-JOIN-03": ("PASS", "")})
    # CLS-JOIN-03 has a live case and a transcript: the run lists both, each with its outcome.
    [row03] = [x for x in doc["results"] if x["id"] == "CLS-JOIN-03"]
    row03["cases"] = [{"case": "live", "outcome": "PASS", "detail": ""},
                      {"case": "CLS-JOIN-03.jsonl", "outcome": "NOT-APPLICABLE", "detail": "virtual-only"}]
    cert = build_certificate(doc)
    # CLS-JOIN-25 and CLS-COMMIT-12 are SHOULDs (docs/catalogue-audit.md): counted at their level
    assert cert["counts"]["MUST"]["PASS"] == 2 and cert["counts"]["MUST"]["NOT-APPLICABLE"] == 0
    assert cert["counts"]["SHOULD"]["PASS"] == 1 and cert["counts"]["SHOULD"]["NOT-APPLICABLE"] == 1
    assert cert["goldens"] == {"requirements": 3, "recorded": 3, "replayed": 1, "counts": {
        "PASS": 1, "NON-STRICT": 0, "NOT-APPLICABLE": 2, "FAIL": 0, "BROKEN": 0}}
    rows = {r["id"]: r for r in cert["requirements"]}
    assert rows["CLS-JOIN-25"]["transcripts"] == ["CLS-JOIN-25.jsonl"]
    assert rows["CLS-JOIN-02"]["transcripts"] == [] and rows["CLS-JOIN-02"]["cases"] == []
    assert [c["case"] for c in rows["CLS-JOIN-03"]["cases"]] == ["live", "CLS-JOIN-03.jsonl"]
    md = render_markdown(cert)
    assert "Golden transcripts (cases of 3 of the requirements above): 3 recorded, 1 replayed" in md
    assert "| CLS-JOIN-25 | SHOULD | PASS |" in md
    requirements_table = md.split("## Requirements", 1)[1].split("\n## ", 1)[0]
    assert requirements_table.count("| CLS-JOIN-03 |") == 1  # one row per requirement, its cases listed in it
    assert "| live PASS, CLS-JOIN-03.jsonl NOT-APPLICABLE |" in md


def test_a_case_the_catalogue_does_not_know_is_an_error() -> None:
    doc = run_doc({"CLS-JOIN-01": ("PASS", "")})
    doc["results"].append({"id": "CLASSIC-NOPE-01", "outcome": "PASS", "message": ""})
    with pytest.raises(CertificateError, match="'CLASSIC-NOPE-01' is not in the catalogue"):
        build_certificate(doc)


def test_report_on_results_naming_an_unknown_case_is_a_usage_error(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import main
    doc = run_doc({"CLS-JOIN-01": ("PASS", "")})
    doc["results"].append({"id": "CLASSIC-NOPE-01", "outcome": "PASS", "message": ""})
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert main(["report", "--reports", str(tmp_path), "--no-html"]) == EXIT_USAGE
    assert "'CLASSIC-NOPE-01' is not in the catalogue" in capsys.readouterr().err
    assert not (tmp_path / "certificate.json").exists()


# ---------------------------------------------------------------- markers and options

def test_markers_select_by_level_and_protocol() -> None:
    r = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "conformance", "-p", "no:cacheprovider",
                        "-o", "addopts=", "--strict-markers", "--collect-only", "-q",
                        "--conformance-target", str(WORKER), "-m", "MUST and sessioned"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ids = [line.split("[", 1)[1][:-1] for line in r.stdout.splitlines() if "test_requirement[" in line]
    assert ids and all(i.endswith("[sessioned]") for i in ids)
    assert "CONN-INC-02[sessioned]" in ids


def test_plugin_options_are_namespaced() -> None:
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "--conformance-target=FILE" in r.stdout and "--conformance-suite=" in r.stdout
    assert "\n  --target" not in r.stdout and "\n  --suite" not in r.stdout


@pytest.mark.parametrize("module, name", [("conformance.cli", "conformance"), ("fakebroker.cli", "fakebroker")])
def test_version(module: str, name: str) -> None:
    from fakebroker import __version__
    r = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(name) and __version__ in r.stdout


def test_one_exit_code_table() -> None:
    from fakebroker.script import cli as script_cli
    assert (script_cli.EXIT_OK, script_cli.EXIT_DIVERGED, script_cli.EXIT_USAGE, script_cli.EXIT_BROKEN) == (
        EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BROKEN)
    for doc in (ROOT / "docs" / "running.md",):
        text = doc.read_text()
        for code, word in ((EXIT_OK, "OK"), (EXIT_FAILED, "FAILED"), (EXIT_USAGE, "USAGE"),
                           (EXIT_BROKEN, "BROKEN"), (EXIT_PARTIAL, "PARTIAL")):
            assert f"| {code} | {word} |" in text, f"{doc.name} lacks exit code {code} {word}"
    r = conformance("run", "--target", "no-such.toml")
    assert r.returncode == EXIT_USAGE and "cannot read" in r.stderr


# ---------------------------------------------------------------- provenance

def test_provenance_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert utc_iso(0) == "1970-01-01T00:00:00Z"
    assert implementation_text("conformance.workers.kafka_python_worker on kafka-python",
                               "kafka-python 3.0.12") == "conformance.workers.kafka_python_worker on kafka-python 3.0.12"
    assert implementation_text("Apache Kafka Connect", "4.2.0") == "Apache Kafka Connect 4.2.0"
    for var in ("GITHUB_RUN_ID", "GITHUB_REPOSITORY", "GITHUB_SERVER_URL", "CI_JOB_URL", "BUILD_URL", "CI"):
        monkeypatch.delenv(var, raising=False)
    assert ci_run() is None
    monkeypatch.setenv("CI_JOB_URL", "https://gitlab.example/p/-/jobs/7")
    assert ci_run() == {"system": "gitlab-ci", "url": "https://gitlab.example/p/-/jobs/7"}
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    assert ci_run() == {"system": "github-actions", "url": "https://github.com/o/r/actions/runs/42"}
    docs = {d["id"]: d for d in spec_documents()}
    assert docs["KIP-415"]["title"].startswith("KIP-415") and docs["KIP-415"]["url"].startswith("https://")
    assert "KIP-62" not in docs  # only the documents the catalogue cites


def test_artefact_digest_follows_the_files_that_run(tmp_path: Path) -> None:
    files, _, how = artefact_files(load_target(WORKER))  # the module its command runs with -m, and imports
    names = {f.as_posix() for f in files}
    assert any(n.endswith("conformance/workers/kafka_python_worker.py") for n in names), how
    assert any(n.endswith("conformance/workers/kp_runtime.py") for n in names)  # its own helper
    assert any("/kafka/coordinator/base.py" in n for n in names)  # the client library it runs on
    assert not any(n.endswith("/asyncio/events.py") for n in names)  # not the standard library
    jars = tmp_path / "libs"
    jars.mkdir()
    (jars / "a.jar").write_bytes(b"a")
    (jars / "b.jar").write_bytes(b"b")
    text = (TARGETS / "apache-connect-sessioned.toml").read_text()
    t = tmp_path / "t.toml"
    # A build of one's own (connect_libs, relative to the target's folder): its jars are the artefact.
    t.write_text(text.replace('[implementation]\n', '[implementation]\nconnect_libs = "libs"\n'))
    first = artefact(*artefact_files(load_target(t)))
    assert first["files"] == 2 and first["sha256"] == digest_files(sorted(jars.iterdir()))
    (jars / "b.jar").write_bytes(b"changed")
    assert artefact(*artefact_files(load_target(t)))["sha256"] != first["sha256"]


def test_markers_are_registered_by_the_plugins_for_users(tmp_path: Path) -> None:
    """A user's project (no pyproject of ours) under --strict-markers."""
    (tmp_path / "test_user.py").write_text("import pytest\n\n\n@pytest.mark.realkafka\ndef test_a():\n    pass\n\n\n"
                                           "@pytest.mark.MUST\n@pytest.mark.sessioned\ndef test_b():\n    pass\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "--strict-markers", "-q", "-p", "no:cacheprovider",
                        "test_user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:]
    assert "2 passed" in r.stdout


def test_the_summary_of_several_targets_has_date_verdicts_counts_and_links(tmp_path: Path) -> None:
    other = tmp_path / "fakebroker-classic.toml"
    other.write_text(FAKEBROKER.read_text().replace('name = "fakebroker"', 'name = "fakebroker-classic"')
                     .replace('protocols = ["classic", "connect"]', 'protocols = ["classic"]'))
    reports = tmp_path / "reports"
    r = conformance("run", "--target", str(FAKEBROKER), "--target", str(other), "-n", "0", "--no-html",
                    "--reports", str(reports), "-k", "CLS-JOIN-03 or CLS-JOIN-15")
    assert r.returncode == EXIT_PARTIAL, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads((reports / "certificate.json").read_text())
    assert [(t["target"], t["verdict"]) for t in doc["targets"]] == [("fakebroker", "PARTIAL"),
                                                                     ("fakebroker-classic", "PARTIAL")]
    assert doc["date"].endswith("Z") and not doc["certified"]
    md = (reports / "certificate.md").read_text()
    assert f"Date (UTC): {doc['date']}" in md
    left = len(json.loads((reports / "fakebroker" / "certificate.json").read_text())["left_out"])
    assert left > 200  # every case of the scope (211 since the golden duplicates merged) but the two selected
    # CLS-JOIN-03 a MUST, CLS-JOIN-15 a SHOULD (only Apache Kafka's behaviour: docs/catalogue-audit.md);
    # both selected requirements have a transcript
    assert f"| fakebroker | fakebroker 0.1.0 | PARTIAL | 1/0/0 | 1/0 | 2 | {left} |" in md
    assert "[certificate](fakebroker/certificate.md)" in md and "[certificate](fakebroker-classic/certificate.md)" in md
    assert (reports / "fakebroker-classic" / "certificate.md").is_file()


def test_a_test_that_errors_before_its_case_runs_is_broken_not_missing(tmp_path: Path) -> None:
    (tmp_path / "breaker.py").write_text("import pytest\n\n\n@pytest.fixture(autouse=True)\n"
                                         "def boom():\n    raise RuntimeError('boom in a fixture')\n")
    results = tmp_path / "results.json"
    r = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "conformance", "-p", "no:cacheprovider",
                        "-o", "addopts=", "-p", "breaker", "--conformance-target", str(FAKEBROKER),
                        "--conformance-results", str(results), "-k", "CLS-JOIN-03"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    assert r.returncode == EXIT_BROKEN, r.stdout[-2000:]
    doc = json.loads(results.read_text())
    [res] = doc["results"]
    assert (res["id"], res["outcome"]) == ("CLS-JOIN-03", "BROKEN") and "boom in a fixture" in res["message"]
    cert = build_certificate(doc)
    assert cert["broken"] == ["CLS-JOIN-03"] and exit_code(cert) == EXIT_BROKEN


def test_report_rewrites_every_certificate_of_a_several_target_run(tmp_path: Path) -> None:
    """The layout ``make certify`` writes (one folder per target) is one ``report`` accepts."""
    reports = tmp_path / "reports"
    for name in ("a", "b"):
        (reports / name).mkdir(parents=True)
        doc = run_doc({"CLS-JOIN-01": ("PASS", "")}, left=[] if name == "a" else [{"id": "CLS-JOIN-02", "reason": "r"}])
        doc["target"]["name"] = name
        (reports / name / "results.json").write_text(json.dumps(doc))
    r = conformance("report", "--reports", str(reports), "--no-html")
    assert r.returncode == EXIT_PARTIAL, r.stdout + r.stderr
    summary = json.loads((reports / "certificate.json").read_text())
    assert [(t["target"], t["verdict"]) for t in summary["targets"]] == [("a", "CERTIFIED"), ("b", "PARTIAL")]
    assert (reports / "a" / "certificate.md").is_file()
    assert conformance("report", "--reports", str(tmp_path / "empty")).returncode == EXIT_USAGE


def test_list_json_names_the_cases_a_target_runs() -> None:
    r = conformance("list", "--json", "--suite", "worker", "--target", str(WORKER), timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {row["id"]: row for row in json.loads(r.stdout)}
    assert rows["CONN-INC-02"]["cases"] == ["CONN-INC-02[compatible]", "CONN-INC-02[sessioned]"]
    assert rows["CLS-W-01"]["cases"] == ["CLS-W-01"] and rows["CLS-W-01"]["on_target"] == "runs"
    assert sum(len(row["cases"]) for row in rows.values()) == len(scope_ids(load_target(WORKER)))


def test_list_names_requirements_by_current_or_retired_id_with_their_cases() -> None:
    r = conformance("list", "--json", "CLASSIC-SYNC-ERR-05", "CLS-COMMIT-01", timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {row["id"]: row for row in json.loads(r.stdout)}
    assert set(rows) == {"CLS-SYNC-01", "CLS-COMMIT-01"}  # the retired id names its successor
    assert rows["CLS-SYNC-01"]["case"] and rows["CLS-SYNC-01"]["transcripts"] == ["CLS-SYNC-01.jsonl"]
    assert rows["CLS-SYNC-01"]["aliases"] == ["CLASSIC-SYNC-ERR-05"]
    # A requirement whose only cases are transcripts is covered, not "missing".
    assert rows["CLS-COMMIT-01"]["case"] is None and rows["CLS-COMMIT-01"]["coverage"] == "case"
    assert rows["CLS-SYNC-01"]["source"] == "KAFKA-PROTOCOL § Error Codes"
    bad = conformance("list", "NOPE-01", timeout=120)
    assert bad.returncode == EXIT_USAGE and "no requirement NOPE-01" in bad.stderr


def test_list_of_an_id_shows_its_statement_level_and_source() -> None:
    r = conformance("list", "CLS-SYNC-01", "CONN-META-01", timeout=120)
    assert r.returncode == 0, r.stderr
    req = default_catalogue()["CONN-META-01"]
    assert f"    MUST: {req.statement}\n" in r.stdout
    assert "source: KIP-415 § Connect protocol's format (KIP-415: Incremental Cooperative" in r.stdout
    assert f"    {req.source.link}\n" in r.stdout and req.source.link.startswith("https://cwiki.apache.org/")
    assert "MUST: A SyncGroup with a generation other than the group's" in r.stdout


def test_a_real_worker_runs_a_case_once_per_claimed_protocol_started_at_it(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    r = conformance("run", "--target", str(WORKER), "-n", "0", "--no-html", "--reports", str(reports),
                    "-k", "CONN-ASSIGN-01")
    assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:] + r.stderr[-2000:]
    results = json.loads((reports / "results.json").read_text())["results"]
    assert [(x["id"], x["protocol"], x["outcome"]) for x in results if x["requirement"] == "CONN-ASSIGN-01"] == [
        ("CONN-ASSIGN-01[compatible]", "compatible", "PASS"), ("CONN-ASSIGN-01[eager]", "eager", "PASS"),
        ("CONN-ASSIGN-01[sessioned]", "sessioned", "PASS")]
    # ... and the invariants over those cases' exchanges, per protocol, each case listed (the
    # case waits for the worker's SyncGroup as leader, so each protocol's run gives its round;
    # one ending at the first JoinGroup, CONN-PROT-03, gave none in some runs)
    inv = {x["id"]: x for x in results if x["requirement"].startswith("CONN-INV-")}
    assert [c["case"] for c in inv["CONN-INV-04[eager]"]["cases"]] == ["CONN-ASSIGN-01[eager]"]
    assert inv["CONN-INV-02[sessioned]"]["outcome"] == "PASS" and "CONN-INV-02[eager]" not in inv
    for x in results:  # the worker under test was started at the run's protocol (in each case)
        if x["requirement"] != "CONN-ASSIGN-01":
            continue
        assert any(f"--connect-protocol {x['protocol']} " in n for n in x["notes"]), x["notes"]
    cert = json.loads((reports / "certificate.json").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(cert)
    per_protocol = {p: v["cases"] for p, v in cert["per_protocol"].items() if v["cases"]}
    assert {p: {r: o for r, o in cases.items() if "-INV-" not in r} for p, cases in per_protocol.items()} == {
        "eager": {"CONN-ASSIGN-01": "PASS"}, "compatible": {"CONN-ASSIGN-01": "PASS"},
        "sessioned": {"CONN-ASSIGN-01": "PASS"}}
    assert all(o == "PASS" for cases in per_protocol.values() for r, o in cases.items() if "-INV-" in r)
    assert "| CONN-ASSIGN-01 | PASS | PASS | PASS |" in (reports / "certificate.md").read_text()


def test_notes_are_listed_apart_and_do_not_change_the_verdict() -> None:
    doc = run_doc({"CLS-DESC-04": ("PASS", ""), "CLS-JOIN-01": ("PASS", "")})
    note = ('CLS-DESC-04.jsonl: step 6: differs from the recording: Groups[0].Members[0].ClientHost '
            'expected "/127.0.0.1" got "127.0.0.1:37774"')
    doc["results"][0]["notes"] = [note, " "]
    cert = build_certificate(doc)
    assert cert["verdict"] == "CERTIFIED"
    assert [r["notes"] for r in cert["requirements"]] == [[note], []]
    md = render_markdown(cert)
    assert "## Notes (1): informational, not part of the verdict" in md
    assert md.rstrip().splitlines()[-1] == f"| CLS-DESC-04 | {note} |"
    schema = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "certificate.schema.json").read_text())
    rows = jsonschema.validators.validator_for(schema)(schema).evolve(schema=schema["properties"]["requirements"])
    rows.validate(cert["requirements"])


def test_list_by_source_counts_the_requirements_each_document_states() -> None:
    r = conformance("list", "--by-source", "--suite", "coordinator", timeout=120)
    assert r.returncode == 0, r.stderr
    reqs = default_catalogue().for_suite("coordinator")
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()[1:]}
    assert rows.pop("all") == [str(len(reqs)), *(str(sum(q.level == lv for q in reqs)) for lv in ("MUST", "SHOULD", "MAY"))]
    behaviour = [q for q in reqs if q.source.doc.id == "KAFKA-BEHAVIOUR"]
    assert rows["KAFKA-BEHAVIOUR"] == ["0", str(len(behaviour)), "0"]  # never a MUST (rule must-cites-spec)
    assert sum(int(v[0]) for v in rows.values()) == sum(q.level == "MUST" for q in reqs)
