"""``conformance history`` over report folders written by real ``conformance run``s of the
fake broker and of a mutant (CERTIFIED, PARTIAL, NOT CERTIFIED): what each run covered and
left out, regressions and fixes only where both sides ran, durations against noise.

The runs are cheap ones (the fake broker's virtual clock; -k narrows all but one), started
together once per session: about 60-90 s wall on a loaded 2-core machine, ~15 s CPU."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.reports.results_file import read
from tests.support.certification import ROOT, run_certification

# Every test here reads the same runs: one xdist process (the Spark one) makes them once.
pytestmark = pytest.mark.xdist_group("spark")

FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"
MUTANT = "mutant:no-generation-bump"
RUNS = {  # folder -> (target file, -k); "full": the whole coordinator suite (CERTIFIED)
    "full": (FAKEBROKER, None),
    "join-a": (FAKEBROKER, "CLS-JOIN-0"), "join-b": (FAKEBROKER, "CLS-JOIN-0"),
    "join-c": (FAKEBROKER, "CLS-JOIN-0"),
    "mutant": (MUTANT, "CLS-JOIN"),
}


@pytest.fixture(scope="session")
def reports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")

    def one(name: str) -> Path:
        target, keyword = RUNS[name]
        r = run_certification(target, root / name, *(["-k", keyword] if keyword else []), suite="coordinator")
        assert (root / name / "results.json").is_file(), r.stdout[-2000:] + r.stderr[-2000:]
        return root / name

    with ThreadPoolExecutor(len(RUNS)) as pool:
        return dict(zip(RUNS, pool.map(one, RUNS)))


def _verdict(folder: Path) -> str:
    return json.loads((folder / "certificate.json").read_text())["verdict"]


def test_real_results_read_through_the_writers_schema(reports):
    assert [_verdict(reports[n]) for n in ("full", "join-a", "mutant")] == ["CERTIFIED", "PARTIAL", "NOT CERTIFIED"]
    full, mutant = read(reports["full"] / "results.json"), read(reports["mutant"] / "results.json")
    assert "provenance" in full.doc and "started" not in full.doc  # the format the old reader missed
    assert full.left_out == frozenset() and len(full.ran) > 100
    assert mutant.ran and mutant.left_out and not mutant.ran & mutant.left_out


def test_history_of_real_runs(spark, reports, tmp_path, capsys):
    full, mutant = reports["full"], reports["mutant"]
    failed = sorted(r["id"] for r in json.loads((mutant / "results.json").read_text())["results"]
                    if r["outcome"] in ("FAIL", "BROKEN", "NON-STRICT"))  # a SHOULD no longer met regresses too
    left_out = read(mutant / "results.json").left_out
    assert failed  # the mutant's defect shows in what it ran
    wh = tmp_path / "wh"
    code = main(["history", *map(str, reports.values()), "--warehouse", str(wh),
                 "--baseline", str(full), "--candidate", str(mutant)])
    cap = capsys.readouterr()
    out = cap.out
    assert code == 1, cap.err
    assert "Traceback" not in cap.err and len(cap.err) < 2000  # no Java or Python stack on screen
    assert f"history: {len(RUNS)} run(s)" in out
    ran, left = len(read(full / "results.json").ran), len(left_out)
    assert re.search(rf"#\d+ \S+: fakebroker \S+ CERTIFIED, {ran} requirement\(s\) run, 0 left out\n", out)
    assert re.search(rf"#\d+ \S+: mutant-no-generation-bump \S+ NOT CERTIFIED, {ran - left} requirement\(s\) "
                     rf"run, {left} left out \(PARTIAL scope\)", out)
    section = out.split(f"regressions {full} -> {mutant}: ")[1]
    assert section.startswith(f"{len(failed)}\n")
    assert sorted(re.findall(r"^  (\S+): PASS -> (?:FAIL|BROKEN|NON-STRICT)", section, re.M)) == failed
    assert "fixed: 0\n" in section
    assert f"not compared: {left} only the baseline ran, 0 only the candidate ran" in section
    named = set(re.findall(r"^  (\S+): ", section, re.M))
    assert not named & left_out  # never regressed or fixed where the candidate did not run it
    # The three CLS-JOIN-0 runs and the full one: four timings per requirement, judged
    # against noise; the fake broker's milliseconds never make a "slower".
    judged = re.search(r"durations: (\d+) of \d+ requirement\(s\) have 3\+ earlier runs", out)
    assert judged and int(judged.group(1)) >= 5
    assert "0 slower beyond noise" in out
    # the other way round, the same requirements are fixes and nothing regressed
    assert main(["history", str(full), str(mutant), "--warehouse", str(tmp_path / "wh2"),
                 "--baseline", str(mutant), "--candidate", str(full)]) == 0
    back = capsys.readouterr().out.split("regressions ")[1]
    assert back.split("\n")[0].endswith(": 0") and f"fixed: {len(failed)}" in back
    assert f"not compared: 0 only the baseline ran, {left} only the candidate ran" in back
    page = (wh / "report" / "index.html").read_text()
    assert page.index("Regressions first") < page.index("<h3>Runs</h3>") < page.index('aria-label="outcome per')
    assert "<table>" in page and "<pre>" not in page.split("<h3>Runs")[1]  # markdown rendered
    assert 'class="legend"' in page and "not run (left out" in page
    labels = re.findall(r'<text x="[0-9.]+" y="34" text-anchor="middle" font-size="10">(#\d+)</text>', page)
    assert labels == [f"#{i}" for i in range(1, len(RUNS) + 1)]  # run labels over the grid's columns
    outcome = {r["id"]: r["outcome"] for r in json.loads((mutant / "results.json").read_text())["results"]}
    for rid in failed:  # the mutant's failures are drawn, not the 200 that passed everywhere
        assert f"{rid}: {outcome[rid]}" in page
