"""compare_runs on real report folders: the fake broker's run against itself is the same, against
a coordinator mutant's run it names the requirement, the case, the verdict and the counts that
changed; an invariant's evidence that moved is apart from a changed outcome; folders that are
not report folders are refused in one line."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.tools.compare_runs import differences, read_run
from fakebroker.exit_codes import EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"
WORKER = ROOT / "fixtures" / "targets" / "kafka-python-worker.toml"
# The mutant's designated case refuses it (fixtures/mutants/coordinators.toml); CLS-JOIN-03 is
# one it passes, so a difference in one requirement and none in the other is the tool's doing.
MUTANT, KILLER, OTHER = "mutant:heartbeat-ok-while-rebalancing", "CLS-HB-02", "CLS-JOIN-03"


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _run(target: str, reports: Path, k: str = f"{KILLER} or {OTHER}") -> Path:
    r = _python("-m", "conformance.cli", "run", "--target", target, "-n", "0", "--no-html",
                "--reports", str(reports), "-k", k)
    assert (reports / "results.json").exists(), r.stdout[-2000:] + r.stderr[-2000:]
    return reports


def compare_runs(*args: str) -> subprocess.CompletedProcess[str]:
    return _python("-m", "conformance.tools.compare_runs", *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return (_run(str(FAKEBROKER), tmp_path_factory.mktemp("base")),
            _run(MUTANT, tmp_path_factory.mktemp("mutant")))


def test_a_run_compared_with_itself_has_no_difference(runs: tuple[Path, Path]) -> None:
    base, _ = runs
    r = compare_runs(str(base), str(base))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "0 difference(s) (evidence moved not counted)"
    assert r.stdout.splitlines()[1].split()[:3] == ["fakebroker", "PARTIAL", "2/0"]


def test_a_mutant_run_differs_in_its_killing_requirement_case_verdict_and_counts(runs: tuple[Path, Path]) -> None:
    base, mutant = runs
    r = compare_runs(str(base), str(mutant))
    assert r.returncode == 1, r.stdout + r.stderr
    pair = "fakebroker -> mutant-heartbeat-ok-while-rebalancing"
    diffs = [ln.removeprefix(pair + ": ") for ln in r.stdout.splitlines() if ln.startswith(pair + ": ")]
    assert f"{KILLER}: PASS -> FAIL" in diffs and f"{KILLER} case live: PASS -> FAIL" in diffs
    assert "verdict: PARTIAL -> NOT CERTIFIED" in diffs
    assert "count MUST PASS: 2 -> 1" in diffs and "count MUST FAIL: 0 -> 1" in diffs
    assert not [d for d in diffs if d.startswith(OTHER)]
    assert r.stdout.splitlines()[-1] == f"{len(diffs)} difference(s) (evidence moved not counted)"


def test_trees_of_several_targets_pair_runs_by_target_name(runs: tuple[Path, Path], tmp_path: Path) -> None:
    base, mutant = runs
    before, after = tmp_path / "before", tmp_path / "after"
    for tree in (before, after):
        shutil.copytree(base, tree / "fakebroker")
    shutil.copytree(mutant, after / "mutant")
    r = compare_runs(str(before), str(after))
    assert r.returncode == 1, r.stdout + r.stderr
    assert [ln for ln in r.stdout.splitlines() if ln.startswith("mutant-heartbeat-ok-while-rebalancing: ")] == [
        "mutant-heartbeat-ok-while-rebalancing: run only after"]
    assert not [ln for ln in r.stdout.splitlines() if ln.startswith("fakebroker: ")]


def test_folders_that_are_not_report_folders_are_refused_in_one_line(runs: tuple[Path, Path], tmp_path: Path) -> None:
    base, _ = runs
    r = compare_runs(str(tmp_path), str(base))
    assert r.returncode == EXIT_USAGE and r.stdout == ""
    assert r.stderr.strip() == f"compare_runs: {tmp_path}: no results.json in it or in its sub-folders " \
                               "(rule: a report folder of conformance run)"
    twice = tmp_path / "twice"
    shutil.copytree(base, twice / "a")
    shutil.copytree(base, twice / "b")
    r = compare_runs(str(twice), str(base))
    assert r.returncode == EXIT_USAGE and len(r.stderr.strip().splitlines()) == 1
    assert "two runs of target 'fakebroker' (a, b)" in r.stderr and "Traceback" not in r.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "results.json").write_text("{", encoding="utf-8")
    r = compare_runs(str(broken), str(base))
    assert r.returncode == EXIT_USAGE and r.stderr.startswith(f"compare_runs: {broken / 'results.json'}: not JSON")


def test_an_invariant_case_that_gave_no_round_is_evidence_moved_but_a_failing_one_differs(
        tmp_path: Path) -> None:
    # A real worker's case that waits for its own SyncGroup as leader gives every invariant a
    # round at each protocol; the other side is that run with one case's evidence taken away
    # (as a case ending at the worker's first JoinGroup sometimes gives none), then failing.
    before = read_run(_run(str(WORKER), tmp_path, k="CONN-ASSIGN-01"))
    key = ("CONN-INV-04[eager]", "CONN-ASSIGN-01[eager]")
    assert before.cases[key] == "PASS" and "CONN-INV-04[eager]" in before.invariants
    gone = dataclasses.replace(before, cases={k: v for k, v in before.cases.items() if k != key})
    assert differences(before, gone) == ([], ["CONN-INV-04[eager] case CONN-ASSIGN-01[eager]: PASS -> absent"])
    failed = dataclasses.replace(before, cases={**before.cases, key: "FAIL"})
    assert differences(before, failed) == (["CONN-INV-04[eager] case CONN-ASSIGN-01[eager]: PASS -> FAIL"], [])
    assert differences(before, before) == ([], [])


def test_a_reader_that_stops_early_gets_no_traceback(runs: tuple[Path, Path]) -> None:
    base, mutant = runs
    p = subprocess.Popen([sys.executable, "-m", "conformance.tools.compare_runs", str(base), str(mutant)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # as `| head` does once it has its lines
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 1 and err == ""
