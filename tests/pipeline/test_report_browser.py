"""The HTML report in a real headless browser, over real recordings: a classic consumer
group of confluent-kafka members (eager rounds) and Apache Kafka Connect 4.2.0's capture (an
incremental round revoking work), with a planted double ownership for the violations.
Chromium lays the page out; the DOM it dumps shows the first screen's order (verdict,
violations with their evidence, then the rebalance summary) and every plot drawn with data."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .conftest import CONSUMER_GROUP
from .test_audit import eager
from .test_operator_metrics import CONNECT


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    pytest.skip("no Chromium (Debian package chromium; .ci/setup.sh installs it)")


PLOTS = ["unit unavailability: when each unit ran nowhere",
         "pause per rebalance (longest time a unit ran nowhere)",
         "rebalance duration distribution (first JoinGroup to last assignment)"]


def test_report_first_screen_and_plots(spark, consumer_recording, tmp_path):
    from conformance.cli import main
    bad = eager(True).save(tmp_path / "double.jsonl")
    assert main(["audit", *map(str, consumer_recording), str(CONNECT), str(bad),
                 "--warehouse", str(tmp_path / "wh")]) == 1
    page = tmp_path / "wh" / "report" / "index.html"
    out = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-dev-shm-usage", "--virtual-time-budget=5000", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    dom = out.stdout
    # first screen: the verdict, the violation with its catalogue id and evidence, then the rebalances
    verdict, violation = dom.index("Verdict: VIOLATIONS"), dom.index("<strong>CONN-INV-01</strong>")
    link = dom.index(f'<a href="{bad.resolve().as_uri()}"><code>double.jsonl</code> line 9</a>')
    summary, first_plot = dom.index("<h2>Rebalances</h2>"), dom.index('<svg class="plot"')
    assert verdict < violation < link < summary < first_plot
    assert "group <code>g1</code> generation 1 members w1, w2 unit c1-0" in dom
    assert "<pre>" not in dom and "<table>" in dom  # markdown rendered as HTML
    assert f"<code>{CONSUMER_GROUP}</code>" in dom and "no rate per hour" in dom
    # the distribution of unit pauses by cause: Connect's revoked unit has not run again by the end
    assert "<th>unit pauses</th>" in dom and re.search(r"<td>revoked</td>\s*<td>1</td>(\s*<td>-</td>){3}\s*<td>1</td>", dom)
    assert re.findall(r'<svg class="plot"[^>]*aria-label="([^"]+)"', dom) == PLOTS
    drawn = re.search(r'<body data-plots-drawn="(\d+)" data-bars-per-plot="([\d,]+)"', dom)
    assert drawn, dom[:300]
    assert int(drawn.group(1)) == 3 and all(int(n) > 0 for n in drawn.group(2).split(","))
    svgs = dict(zip(PLOTS, re.findall(r'<svg class="plot".*?</svg>', dom, re.S)))
    # the timeline has the unit Connect 4.2.0 revoked
    assert re.search(r"<title>\S+ conn-a: revoked from [\d.]+ s", svgs[PLOTS[0]])
    # pauses of both modes, from the consumer group's eager rounds and Connect's incremental one
    assert re.search(rf"<title>{CONSUMER_GROUP}/\d+ eager: [\d.]+ ms</title>", svgs[PLOTS[1]])
    assert re.search(r"<title>\S+/\d+ incremental: [\d.]+ ms</title>", svgs[PLOTS[1]])
    for svg in svgs.values():  # axes labelled with their unit
        assert re.search(r"\((ms|s)[,)]", svg) or "count" in svg
    assert dom.count('class="legend"') >= 3
