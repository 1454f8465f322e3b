"""``conformance matrix``: which protocols a release runs, which known bugs are open in it,
the cell targets it writes, and (realkafka) one old release on one protocol for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.matrix import Bug, Cell, cell_target, explain, load_bugs, render_markdown, supported
from conformance.harness.target import load_target

ROOT = Path(__file__).resolve().parents[2]


def test_protocols_per_release() -> None:
    assert supported((2, 2, 2)) == ["eager"]
    assert supported((2, 3, 1)) == ["eager", "compatible"]
    assert supported((2, 4, 1)) == ["eager", "compatible", "sessioned"]


def test_a_bug_is_open_until_its_line_has_the_fix() -> None:
    bug = Bug("KAFKA-1", "", ((2, 5, 1), (2, 6, 0)), frozenset({"CONN-X"}))
    assert bug.open_in((2, 4, 1)) and bug.open_in((2, 5, 0))
    assert not bug.open_in((2, 5, 1)) and not bug.open_in((2, 6, 0)) and not bug.open_in((3, 0, 0))
    assert explain("CONN-X[compatible]", (2, 5, 0), [bug]) == [{"id": "KAFKA-1", "fixed_in": "2.5.1, 2.6.0"}]
    assert explain("CONN-X[compatible]", (2, 6, 0), [bug]) == []
    assert explain("CONN-Y", (2, 5, 0), [bug]) == []


def test_the_known_bugs_file_loads_and_names_catalogue_cases() -> None:
    bugs = load_bugs()
    assert {b.id for b in bugs} >= {"KAFKA-9841", "KAFKA-10413", "KAFKA-9848", "KAFKA-15693", "KAFKA-12495",
                                    "KAFKA-9849", "KAFKA-9851", "KAFKA-9184"}
    ids = {r["id"] for r in json.loads((ROOT / "schemas" / "requirements.json").read_text())["requirements"]}
    assert all(c in ids for b in bugs for c in b.cases)


def test_a_cell_target_is_the_bundled_one_on_that_release(tmp_path: Path) -> None:
    old = load_target(cell_target("3.0.0", "compatible", False, tmp_path))
    bundled = load_target(ROOT / "fixtures" / "targets" / "apache-connect-compatible.toml")
    assert old.name == "apache-connect-3.0.0-compatible" and old.implementation_version == "3.0.0"
    assert old.connect == "3.0.0" and old.host_command is None and "{worker_host}" not in (old.command or "")
    assert old.timing == bundled.timing and old.seed_command == bundled.seed_command
    hosted = load_target(cell_target("4.1.0", "eager", True, tmp_path))
    assert hosted.host_command == bundled.host_command and "--host {worker_host}" in (hosted.command or "")


def test_the_table_marks_what_no_bug_explains() -> None:
    cell = Cell("3.0.0", "compatible", "NOT CERTIFIED", {"MUST": {"PASS": 30, "FAIL": 2}},
                [{"case": "CONN-INC-13[compatible]", "bugs": [{"id": "KAFKA-12495", "fixed_in": "3.4.0"}]},
                 {"case": "CONN-INC-10[compatible]", "bugs": []}], host="no")
    md = render_markdown([cell], {"command": "conformance matrix --versions 3.0.0", "date": "d",
                                  "suite_commit": "c", "skipped": ["2.2.0 compatible"]})
    assert "CONN-INC-13[compatible] (KAFKA-12495 fixed in 3.4.0); CONN-INC-10[compatible] (**unexplained**)" in md
    assert "| 3.0.0 | compatible | NOT CERTIFIED | 30/2/0 |" in md and "2.2.0 compatible" in md
    assert cell.unexplained == ["CONN-INC-10[compatible]"]


@pytest.mark.realkafka
def test_one_old_release_on_one_protocol(tmp_path: Path) -> None:
    """CI's share of the matrix: Connect 3.0.0 (log4j 1, a JVM per worker, the seed as 3.0.0
    writes it) on eager, a few cases: every one of them passes, the cell is PARTIAL (-k)."""
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "matrix", "--versions", "3.0.0",
                        "--protocols", "eager", "--reports", str(tmp_path), "-n", "2",
                        "-k", "CONN-EAGER-01 or CONN-EAGER-03 or CONN-PROT-02"],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    doc = json.loads((tmp_path / "matrix.json").read_text())
    (cell,) = doc["cells"]
    assert (cell["version"], cell["protocol"]) == ("3.0.0", "eager"), r.stdout[-3000:]
    assert cell["verdict"] == "PARTIAL" and not cell["failed"] and not cell["broken"], r.stdout[-3000:]
    # the three cases, and the invariants over their exchanges at eager (CONN-INV-01, -04)
    assert cell["counts"]["MUST"]["PASS"] == 5 and cell["host"].startswith("no")
    assert "[1/1] Connect 3.0.0 eager: starting" in r.stdout and "% of cases done" in r.stdout
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    print(f"one old release on one protocol: {time.monotonic() - started:.1f} s")


def test_reuse_takes_a_former_runs_cells_and_explains_their_failures_afresh(tmp_path: Path) -> None:
    former = Cell("2.4.1", "sessioned", "NOT CERTIFIED", {"MUST": {"PASS": 40, "FAIL": 1}},
                  [{"case": "CONN-INC-12[sessioned]", "bugs": []}], host="no", wall_s=200.0)
    (tmp_path / "matrix.json").write_text(json.dumps({"cells": [former.__dict__]}))
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "matrix", "--versions", "2.4.1",
                        "--protocols", "sessioned", "--reports", str(tmp_path), "--reuse"],
                       capture_output=True, text=True, timeout=120)
    assert "[1/1] Connect 2.4.1 sessioned: NOT CERTIFIED (from" in r.stdout, r.stdout + r.stderr
    (cell,) = json.loads((tmp_path / "matrix.json").read_text())["cells"]
    assert [b["id"] for b in cell["failed"][0]["bugs"]] == ["KAFKA-10413"] and cell["wall_s"] == 200.0
    assert r.returncode == 0  # every failure explained
