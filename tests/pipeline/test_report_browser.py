"""The HTML report in a real headless browser: Chromium renders the page and its inline
SVG plots (the DOM it dumps after layout holds every plot with its bars)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .test_audit import delayed, eager, incremental


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    pytest.skip("no Chromium (Debian package chromium; .ci/setup.sh installs it)")


def test_report_renders_its_plots(spark, tmp_path):
    from conformance.cli import main
    for name, script in (("inc", incremental()), ("eager", eager(False)), ("delay", delayed(False))):
        script.save(tmp_path / f"{name}.jsonl")
    assert main(["audit", str(tmp_path), "--warehouse", str(tmp_path / "wh")]) == 0
    page = tmp_path / "wh" / "report" / "index.html"
    out = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-dev-shm-usage", "--virtual-time-budget=5000", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    dom = out.stdout
    plots = re.findall(r'<svg class="plot"[^>]*aria-label="([^"]+)"', dom)
    assert plots == ["rebalance duration (ms)", "rebalances by units moved",
                     "mean stop-the-world pause per rebalance (ms)"]
    # bars with a real height: the plots have data, not just axes
    heights = [float(h) for h in re.findall(r'<rect class="bar"[^>]*height="([0-9.]+)"', dom)]
    assert len(heights) >= 3 and max(heights) > 0
    assert "eager" in dom and "incremental" in dom
    drawn = re.search(r'<body data-plots-drawn="(\d+)" data-bars-drawn="(\d+)"', dom)
    assert drawn, dom[:300]
    assert int(drawn.group(1)) == 3 and int(drawn.group(2)) == len(heights) - heights.count(0.0)
