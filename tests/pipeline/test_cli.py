"""The commands: exit codes (0 clean, 1 violations or regressions, 2 nothing usable), one
line per problem and no stack trace, the report written under the warehouse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.cli import main

from .test_audit import eager

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def goldens(tmp_path) -> Path:
    d = tmp_path / "golden"
    d.mkdir()
    for name in ("CLS-JOIN-31.jsonl", "C848-HB-HND-13.jsonl", "CLS-SYNC-11.jsonl"):
        shutil.copy(ROOT / "fixtures" / "golden" / name, d / name)
    return d


def test_audit_clean_then_violation(spark, goldens, tmp_path, capsys):
    wh = tmp_path / "wh"
    assert main(["audit", str(goldens), "--warehouse", str(wh)]) == 0
    out = capsys.readouterr().out
    assert "3 file(s)" in out and "0 violation(s)" in out
    bad = eager(True).save(tmp_path / "double.jsonl")
    assert main(["audit", str(bad), "--warehouse", str(wh)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:line 9: [double-ownership] group g1" in out
    # the report covers the warehouse: both audits' rebalances, the last audit's violations
    html = (wh / "report" / "index.html").read_text()
    assert html.count("<svg") >= 3 and "double-ownership" in (wh / "report" / "report.md").read_text()


def test_nothing_usable_exits_2_with_one_line(spark, tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "junk.jsonl").write_text("{oops\n")
    assert main(["audit", str(tmp_path / "missing.jsonl"), "--warehouse", str(tmp_path / "wh")]) == 2
    err = capsys.readouterr().err
    assert "missing.jsonl: no such file or folder" in err and "Traceback" not in err
    assert main(["audit", str(tmp_path / "empty.jsonl"), str(tmp_path / "junk.jsonl"),
                 "--warehouse", str(tmp_path / "wh")]) == 2
    cap = capsys.readouterr()
    assert "2 reject(s)" in cap.out and "junk.jsonl:line 1: invalid JSON" in cap.out
    assert "empty.jsonl:file 0: empty file" in cap.out
    assert "no exchanges to audit" in cap.err and "Traceback" not in cap.err + cap.out
    assert main(["ingest", str(tmp_path), "--warehouse", str(tmp_path / "wh2"), "--conf", "nonsense"]) == 2
    assert "--conf 'nonsense': expected key=value" in capsys.readouterr().err


def _report(d: Path, version: str, started: float, outcomes: dict[str, tuple[str, float]]) -> Path:
    d.mkdir(parents=True)
    (d / "results.json").write_text(json.dumps({
        "target": {"name": "acme", "kind": "worker", "implementation": "acme-connect", "version": version},
        "suite": "worker", "started": started, "finished": started + 60,
        "results": [{"id": k, "level": "MUST", "outcome": o, "message": "" if o == "PASS" else "expected x",
                     "duration_s": t} for k, (o, t) in sorted(outcomes.items())]}))
    (d / "certificate.json").write_text(json.dumps({"verdict": "CERTIFIED"}))
    return d


def test_history_regressions_and_flaky(spark, tmp_path, capsys):
    a = _report(tmp_path / "r1", "1.0", 1.7e9, {"R-1": ("PASS", 1.0), "R-2": ("PASS", 2.0), "R-3": ("FAIL", 1.0)})
    b = _report(tmp_path / "r2", "1.0", 1.7e9 + 86400, {"R-1": ("PASS", 1.1), "R-2": ("FAIL", 2.0), "R-3": ("FAIL", 1.0)})
    c = _report(tmp_path / "r3", "1.1", 1.7e9 + 2 * 86400, {"R-1": ("FAIL", 9.0), "R-2": ("PASS", 2.0), "R-3": ("PASS", 1.0)})
    wh = tmp_path / "wh"
    assert main(["history", str(a), str(b), str(c), "--warehouse", str(wh),
                 "--baseline", str(a), "--candidate", "1.1"]) == 1
    out = capsys.readouterr().out
    assert "history: 3 run(s), 3 requirement(s), 1 flaky" in out
    assert "flaky acme 1.0 R-2: FAIL/PASS over 2 runs" in out
    assert "regressions" in out and "R-1: PASS -> FAIL expected x" in out
    assert "R-2: PASS" not in out.split("regressions")[1]  # R-2 passes again in 1.1
    md = (wh / "report" / "report.md").read_text()
    assert "slower: acme R-1: 1.000s -> 9.000s" in md
    assert main(["history", str(a), str(c), "--warehouse", str(wh), "--baseline", "1.1",
                 "--candidate", str(a)]) == 1  # regress the other way round
