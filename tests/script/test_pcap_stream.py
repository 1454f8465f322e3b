"""``pcap`` streams: a fault far into a transcript stops the export at its line, and no
output (not even a partial one) is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakebroker import cli

pytest.importorskip("scapy")
GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "CLS-COMMIT-12.jsonl"


def _many(n: int) -> list[str]:
    """The golden exchange repeated on ``n`` connections (seq renumbered)."""
    lines = GOLDEN.read_text().splitlines()
    out, seq = [lines[0]], 0
    for conn in range(1, n + 1):
        for line in lines[1:]:
            obj = json.loads(line)
            if "seq" in obj:
                seq += 1
                obj["seq"] = seq
            obj["conn"] = conn
            out.append(json.dumps(obj))
    return out


def test_a_fault_late_in_the_file_refuses_it_and_leaves_no_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _many(30)
    bad = tmp_path / "late.jsonl"
    bad.write_text("\n".join(lines) + "\n" + '{"kind":"close","conn":1}' + "\n")  # no "by"
    out = tmp_path / "x.pcap"
    assert cli.main(["pcap", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fakebroker pcap: {bad}:{len(lines) + 1}: ") and "by" in err
    assert list(tmp_path.iterdir()) == [bad]  # neither x.pcap nor x.pcap.partial


def test_a_streamed_export_counts_frames_and_connections(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "many.jsonl"
    lines = _many(20)
    good.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.pcap"
    assert cli.main(["pcap", str(good), "-o", str(out)]) == 0
    frames = sum(1 for line in lines[1:] if json.loads(line)["kind"] != "close")
    assert capsys.readouterr().out == f"{out}: {frames} frame(s) on 20 connection(s), broker port 9092\n"
    assert out.stat().st_size > 0 and not (tmp_path / "m.pcap.partial").exists()
