"""The Allure evidence of a run: real durations (the case runs in the test body), the Suites
tree (protocol / family / API), bare parameters, one step per exchange, no "unknown" teardown stages, the verdict as
a result of its own and in the environment, history kept between runs, spec links relative to
the report; and the rendered report itself, opened in headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.catalogue.requirements import default_catalogue

from conformance.reports.certificate import allure_binary, render_allure

# One test process (make test: --dist loadgroup): its module-scoped run happens once, not once
# per process that gets one of its tests.
pytestmark = pytest.mark.xdist_group("allure-report")

ROOT = Path(__file__).resolve().parents[2]
CASES = "CLS-JOIN-03 or CLS-JOIN-04 or C848-REC-01 or CLS-HB-08"


def conformance_run(reports: Path, target: str, keyword: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", str(ROOT / target),
                           "-n", "0", "--reports", str(reports), "-k", keyword],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def need_allure() -> None:
    if allure_binary() is None:
        pytest.skip("allure-commandline not found (.ci/setup.sh installs it into .venv/node)")


@pytest.fixture(scope="module")
def fakebroker_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_allure()
    out = tmp_path_factory.mktemp("allure") / "reports"
    r = conformance_run(out, "fixtures/targets/fakebroker.toml", CASES)
    assert r.returncode == 4, r.stdout[-3000:] + r.stderr[-2000:]  # PARTIAL: narrowed with -k
    assert (out / "allure-report" / "index.html").is_file(), r.stdout[-2000:]
    return out


def allure_results(reports: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((reports / "allure-results").glob("*-result.json"))]


def labels(result: dict[str, Any], name: str) -> list[str]:
    return [lb["value"] for lb in result["labels"] if lb["name"] == name]


def test_suites_tree_parameters_and_durations(fakebroker_reports: Path) -> None:
    results = {r["name"].split(":")[0]: r for r in allure_results(fakebroker_reports)}
    case = results["CLS-JOIN-03"]
    assert labels(case, "parentSuite") == ["Classic group protocol (JoinGroup/SyncGroup)"]
    assert labels(case, "suite") == ["CLS (coordinator)"] and labels(case, "subSuite") == ["JoinGroup"]
    assert {p["name"]: p["value"] for p in case["parameters"]}["level"] == "MUST"  # not "'MUST'"
    steps = [st["name"] for st in case["steps"]]  # the wire conversation, one step per exchange
    assert any("JoinGroup" in st and "-> INVALID_SESSION_TIMEOUT (26)" in st for st in steps), steps
    # One tree: a requirement whose cases are golden transcripts sits beside the others,
    # tagged golden; a requirement with several cases lists each with its outcome.
    assert labels(results["CLS-HB-08"], "parentSuite") == ["Classic group protocol (JoinGroup/SyncGroup)"]
    assert "golden" in labels(results["CLS-HB-08"], "tag")
    assert "- live: PASS\n- CLS-JOIN-03.jsonl: PASS" in case["description"]
    assert results["C848-REC-01"]["status"] == "skipped"  # NOT-APPLICABLE
    # The Allure duration spans the case: it runs in the test body, not in a fixture's set-up.
    run = {r["id"]: r for r in json.loads((fakebroker_reports / "results.json").read_text())["results"]}
    for cid in ("CLS-JOIN-03", "CLS-JOIN-04", "CLS-HB-08"):
        allure_ms = results[cid]["stop"] - results[cid]["start"]
        assert allure_ms >= int(run[cid]["duration_s"] * 1000) - 1, (cid, allure_ms, run[cid]["duration_s"])


def test_no_unknown_teardowns(fakebroker_reports: Path) -> None:
    stages = [s for p in (fakebroker_reports / "allure-results").glob("*-container.json")
              for s in json.loads(p.read_text()).get("befores", []) + json.loads(p.read_text()).get("afters", [])]
    assert stages and all(s.get("status") for s in stages), [s["name"] for s in stages if not s.get("status")]


def test_verdict_and_counts_in_the_report(fakebroker_reports: Path) -> None:
    cert = json.loads((fakebroker_reports / "certificate.json").read_text())
    assert cert["verdict"] == "PARTIAL"
    verdict = [r for r in allure_results(fakebroker_reports) if labels(r, "parentSuite") == ["Certificate"]]
    assert len(verdict) == 1 and verdict[0]["status"] == "unknown"
    # CLS-JOIN-03, CLS-JOIN-04 (a live case and a transcript each) and CLS-HB-08 (a transcript)
    assert verdict[0]["name"].startswith("Verdict: PARTIAL: MUST PASS=3")
    assert "goldens 3 replayed of 3" in verdict[0]["name"]
    assert "NOT-APPLICABLE=1" in verdict[0]["name"] and "left out" in verdict[0]["name"]
    env = (fakebroker_reports / "allure-results" / "environment.properties").read_text()
    assert env.startswith("verdict=PARTIAL: ")
    executor = json.loads((fakebroker_reports / "allure-results" / "executor.json").read_text())
    assert executor["reportName"].startswith("PARTIAL: conformance of fakebroker")


def test_links_are_public_sources_or_resolve_inside_the_report(fakebroker_reports: Path) -> None:
    """Each case links to the public document its requirement cites (schemas/sources.json)
    and its golden transcripts, copied beside the report (relative, no file://)."""
    report = fakebroker_reports / "allure-report"
    links = [lk["url"] for r in allure_results(fakebroker_reports) for lk in r.get("links", [])]
    public = {d.url for d in default_catalogue().documents.values()}
    sources = [u for u in links if re.match(r"^https://", u)]
    assert sources and all(any(u.startswith(p) for p in public) for u in sources), sources
    local = [u for u in links if u not in sources]
    assert local and all(not re.match(r"^[a-z]+:", u) for u in local), local
    for url in local:
        path = report / re.sub(r"%20", " ", url.split("#")[0])
        assert path.is_file(), f"{url} does not resolve inside {report}"


def test_history_is_kept_between_renders(fakebroker_reports: Path, tmp_path: Path) -> None:
    """A second render into the same report folder carries the first one's history: the
    trend has two points and the executor's buildOrder continues."""
    results, report = tmp_path / "allure-results", tmp_path / "allure-report"
    shutil.copytree(fakebroker_reports / "allure-results", results)
    shutil.copytree(fakebroker_reports / "allure-report", report)
    trend = json.loads((report / "history" / "history-trend.json").read_text())
    assert len(trend) == 1 and trend[0]["buildOrder"] == 1
    executor = json.loads((results / "executor.json").read_text())
    del executor["buildOrder"]  # as a fresh run writes it
    (results / "executor.json").write_text(json.dumps(executor))
    index, why = render_allure(results, report)
    assert index is not None, why
    trend = json.loads((report / "history" / "history-trend.json").read_text())
    assert [p["buildOrder"] for p in trend] == [2, 1]
    assert json.loads((results / "executor.json").read_text())["buildOrder"] == 2
    assert render_allure(results, report)[0] is not None  # the same run again (conformance report)
    assert [p["buildOrder"] for p in json.loads((report / "history" / "history-trend.json").read_text())] == [2, 1]


# ---------------------------------------------------------------- the rendered report

def chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium not found (Debian package chromium; .ci/setup.sh installs it)")
    return binary


def page_text(index: Path, route: str) -> str:
    """The report's page at ``#route`` after its JavaScript ran, as visible text."""
    dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                          "--dump-dom", f"{index.as_uri()}#{route}"],
                         capture_output=True, text=True, timeout=180).stdout
    body = re.sub(r"<script.*?</script>", " ", dom[dom.find("<body"):], flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def case_uid(index: Path, case_id: str) -> str:
    """The report's uid of a case, from the data the single-file report embeds."""
    html = index.read_text(encoding="utf-8")
    for uid, data in re.findall(r"d\('data/test-cases/([0-9a-f]+)\.json','([^']*)'\)", html):
        if json.loads(base64.b64decode(data))["name"].startswith(f"{case_id}:"):
            return uid
    raise AssertionError(f"{case_id} not in the report")



def test_report_in_headless_chromium(tmp_path: Path) -> None:
    """A worker case (CLS-W-06: the worker starts, joins, then shuts down) shows its own
    duration; the overview shows the verdict, the Suites tab the protocol tree."""
    need_allure()
    chromium()
    reports = tmp_path / "reports"
    r = conformance_run(reports, "fixtures/targets/kafka-python-worker.toml", "CLS-W-06")
    assert r.returncode == 4, r.stdout[-3000:] + r.stderr[-2000:]
    index = reports / "allure-report" / "index.html"
    overview = page_text(index, "")
    assert "PARTIAL: conformance of" in overview, overview[:1500]
    # The environment widget: CLS-W-06 (a SHOULD) and the always-on invariants judged over its
    # exchanges (MUSTs: PASS, or NOT-APPLICABLE where the case recorded no round they judge).
    assert re.search(r"verdict PARTIAL: MUST PASS=\d+ NOT-APPLICABLE=\d+; SHOULD PASS=1;", overview), overview[:1500]
    suites = page_text(index, "suites")
    assert "Classic group protocol (JoinGroup/SyncGroup)" in suites and "Certificate" in suites, suites[:1500]
    case = page_text(index, f"testresult/{case_uid(index, 'CLS-W-06')}")
    # The duration shown is the case's own (the worker started, joined, shut down), not the
    # sliver of a test body that only reported an outcome computed during set-up.
    m = re.search(r"Duration: (?:(\d+)m )?(?:(\d+)s )?(\d+)ms", case)
    assert m, case[:2000]
    shown_ms = int(m.group(1) or 0) * 60_000 + int(m.group(2) or 0) * 1000 + int(m.group(3))
    [res] = [x for x in json.loads((reports / "results.json").read_text())["results"] if x["id"] == "CLS-W-06"]
    case_ms = res["duration_s"] * 1000
    assert case_ms >= 200 and shown_ms >= 0.9 * case_ms, (shown_ms, case_ms, case[:2000])
    shot = tmp_path / "overview.png"
    subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                    "--window-size=1400,1000", f"--screenshot={shot}", index.as_uri()],
                   capture_output=True, timeout=180)
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


# ---------------------------------------------------------------- issue 27: evidence to sign off on

@pytest.fixture(scope="module")
def non_strict_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A worker that does not meet a SHOULD (the mutant designated to CONN-DOWN-02) beside
    cases it passes, with Allure results (no HTML needed)."""
    out = tmp_path_factory.mktemp("non-strict") / "reports"
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--no-html", "-n", "0", "--reports", str(out),
                        "--target", "mutant:downgrade-assigns-at-once",
                        "-k", "CONN-DOWN-02 or CLS-W-01"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 4, r.stdout[-3000:] + r.stderr[-2000:]  # PARTIAL (narrowed), nothing FAILed
    return out


def test_non_strict_reads_as_a_should_not_met_never_as_skipped(non_strict_reports: Path) -> None:
    results = {labels(r, "as_id")[0]: r for r in allure_results(non_strict_reports) if labels(r, "as_id")}
    non_strict = [r for cid, r in results.items() if cid.startswith("CONN-DOWN-02")]
    assert non_strict, sorted(results)
    for r in non_strict:
        assert r["status"] == "unknown", r["status"]  # not "skipped": the pie no longer reads 100 %
        message = r["statusDetails"]["message"]
        assert message.startswith("SHOULD not met (NON-STRICT): ") and "XFail" not in json.dumps(r["statusDetails"])
    categories = json.loads((non_strict_reports / "allure-results" / "categories.json").read_text())
    [category] = [c for c in categories if c["name"].startswith("NON-STRICT")]
    assert "unknown" in category["matchedStatuses"]
    assert all(re.match(category["messageRegex"], r["statusDetails"]["message"]) for r in non_strict)
    # the verdict's own result does not fall into it, though its counts name NON-STRICT
    verdict = next(r for r in allure_results(non_strict_reports) if r["name"].startswith("Verdict"))
    assert "NON-STRICT=" in verdict["statusDetails"]["message"]
    assert not re.match(category["messageRegex"], verdict["statusDetails"]["message"])


def test_steps_span_their_exchanges_and_notes_have_no_empty_sections(non_strict_reports: Path) -> None:
    from fakebroker.protocol import default_registry
    from fakebroker.exchange.transcript import load
    [w01] = [r for r in allure_results(non_strict_reports) if labels(r, "as_id") == ["CLS-W-01"]]
    [source] = [a["source"] for a in w01["attachments"] if a["name"] == "transcript.jsonl"]
    t = load(non_strict_reports / "allure-results" / source, default_registry())
    answers = {(e.conn, e.correlation_id): e for e in t.events if e.kind == "response"}
    # each step spans its own exchange, request sent to answer seen, as the transcript timed them
    # (not the moment the step was written after the case); a single member's JoinGroup may be
    # answered within the millisecond, so the spans themselves may all be 0
    expected = [(int(e.time * 1000), int(answers.get((e.conn, e.correlation_id), e).time * 1000))
                for e in t.requests()]
    spans = [(s["start"], s["stop"]) for s in w01["steps"]]
    assert len(answers) >= 2 and spans == expected, (spans, expected)
    assert all(w01["start"] <= s["start"] <= s["stop"] <= w01["stop"] for s in w01["steps"])
    # each "log tail:" is followed by the tail itself, in a code block: never by nothing
    tails = re.findall(r"log tail:(.*?)(?=\n- |\Z)", w01["description"], re.S)
    assert tails and all("```" in t and t.split("```")[1].strip() for t in tails), w01["description"]


def test_the_transcript_attachment_is_the_projects_format_and_reads_back(non_strict_reports: Path,
                                                                           tmp_path: Path) -> None:
    """`fakebroker pcap`, `replay`'s reader and `decode` take the attachment as it is; its pcap
    has the broker on 9092, where Wireshark looks for Kafka."""
    from fakebroker.protocol import default_registry
    from fakebroker.exchange.transcript import load
    [w01] = [r for r in allure_results(non_strict_reports) if labels(r, "as_id") == ["CLS-W-01"]]
    by_name = {a["name"]: non_strict_reports / "allure-results" / a["source"] for a in w01["attachments"]}
    transcript = by_name["transcript.jsonl"]
    assert transcript.suffix == ".jsonl"
    t = load(transcript, default_registry())  # what replay and pcap read
    assert t.header is not None and t.requests()
    out = tmp_path / "again.pcap"
    r = subprocess.run([sys.executable, "-m", "fakebroker.cli", "pcap", str(transcript), "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "broker port 9092" in r.stdout, r.stdout + r.stderr
    assert out.read_bytes() == by_name["capture.pcap"].read_bytes()  # the attached pcap is that one
    first = json.loads(transcript.read_text().splitlines()[1])
    d = subprocess.run([sys.executable, "-m", "fakebroker.cli", "decode", first["raw"]], capture_output=True,
                       text=True, timeout=60)
    assert d.returncode == 0 and json.loads(d.stdout)["api"] == first["api"], d.stderr


def test_a_report_folder_feeds_the_pipeline_each_case_once(non_strict_reports: Path) -> None:
    """`conformance ingest/audit REPORTS/` reads the cases' transcript attachments, not also
    their pcaps (the same frames): each conversation counts once."""
    from conformance.pipeline.inputs import resolve
    inputs = resolve([str(non_strict_reports)])
    attached = [p for p in inputs.transcripts if "/allure-results/" in p]
    cases = [r for r in allure_results(non_strict_reports) if any(a["name"] == "transcript.jsonl"
                                                                  for a in r.get("attachments", []))]
    assert len(attached) == len(cases) > 0 and not [p for p in inputs.pcaps if "/allure-results/" in p]
