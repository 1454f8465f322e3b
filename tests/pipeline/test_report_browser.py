"""The HTML report in a real headless browser, over real recordings: a classic consumer
group of confluent-kafka members (eager rounds), Apache Kafka Connect 4.2.0's capture (an
incremental round revoking work) and a planted broken worker's run through the fake broker
(it reassigns work in the round that revokes it: CONN-INV-02). Chromium lays the page out;
the DOM it dumps shows the first screen's order (verdict, violations with their evidence,
then the rebalance summary), the links laid out on the first screen, and every plot drawn
with data. Each violation's link is followed to its file and line, which must hold the
exchange it names."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from fakebroker.protocol import default_registry

from .conftest import CONSUMER_GROUP
from .test_operator_metrics import CONNECT


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)  # type: ignore[return-value]
    pytest.skip("no Chromium (Debian package chromium; .ci/setup.sh installs it)")


PLOTS = ["unit unavailability: when each unit ran nowhere",
         "pause per rebalance (longest time a unit ran nowhere)",
         "rebalance duration distribution (first JoinGroup to last assignment)"]


def _line(path: Path, n: int) -> dict:
    with path.open(encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if i == n:
                return json.loads(text)
    raise AssertionError(f"{path} has no line {n}")


def _request_of(path: Path, resp: dict) -> dict:
    """The request a response line answers: the same connection and correlation id, before it."""
    with path.open(encoding="utf-8") as f:
        lines = [json.loads(t) for t in f]
    asked = [x for x in lines[:lines.index(resp)] if x.get("kind") == "request"
             and (x.get("conn"), x.get("correlation_id")) == (resp["conn"], resp["correlation_id"])]
    assert asked, resp
    return asked[-1]


def _evidence_holds(path: Path, line: int, group: str, generation: int, members: list[str], unit: str) -> None:
    """The linked line is the SyncGroup answer the violation names: the request it answers is
    of that group, generation and one of those members, and the assignment gives the unit."""
    resp = _line(path, line)
    assert (resp["kind"], resp["api"], resp["body"]["ErrorCode"]) == ("response", "SyncGroup", 0), resp
    req = _request_of(path, resp)["body"]
    assert (req["GroupId"], req["GenerationId"]) == (group, generation) and req["MemberId"] in members, req
    _, a = default_registry()["ConnectProtocolAssignment"].decode_versioned(bytes.fromhex(resp["body"]["Assignment"]))
    given = {c.connector if t == -1 else f"{c.connector}-{t}" for c in a.assignment or () for t in c.tasks}
    assert unit in given, (unit, given)


def test_report_first_screen_and_plots(spark, consumer_recording, violating_recording, tmp_path):
    from conformance.cli import main
    assert main(["audit", *map(str, consumer_recording), str(CONNECT), *map(str, violating_recording),
                 "--warehouse", str(tmp_path / "wh")]) == 1
    page = tmp_path / "wh" / "report" / "index.html"
    out = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                          "--disable-dev-shm-usage", "--virtual-time-budget=5000", f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-500:]
    dom = out.stdout
    # first screen: the verdict, the violation with its catalogue id and evidence, then the rebalances
    verdict, violation = dom.index("Verdict: VIOLATIONS"), dom.index("<strong>CONN-INV-02</strong>")
    first = re.search(r'<li><strong>CONN-INV-02</strong> \(revoke-before-reassign\): <a href="([^"]+)"><code>([^<]+)</code> '
                      r"line (\d+)</a> group <code>([^<]+)</code> generation (\d+) members ([^<]+?) unit (\S+?):", dom)
    assert first, dom[violation:violation + 800]
    href, name, line, group, generation, members, unit = first.groups()
    summary, first_plot = dom.index("<h2>Rebalances</h2>"), dom.index('<svg class="plot"')
    assert verdict < violation < first.start(2) < summary < first_plot
    on_screen = re.search(r'data-first-screen-links="([^"]*)"', dom)
    assert on_screen and f"{name} line {line}" in json.loads(html.unescape(on_screen.group(1)))
    # the link resolves to the recording's file, whose named line holds that exchange
    path = Path(unquote(urlparse(html.unescape(href)).path))
    assert path in violating_recording and path.name == name
    _evidence_holds(path, int(line), group, int(generation), members.split(", "), unit)
    assert "<pre>" not in dom and "<table>" in dom  # markdown rendered as HTML
    assert f"<code>{CONSUMER_GROUP}</code>" in dom and "no rate per hour" in dom
    # the distribution of unit pauses by cause: Connect 4.2.0's revoked unit has not run again by
    # the end; each unit the broken worker revoked ran again at once, on the member it gave it to
    reassigned = dom.count("<strong>CONN-INV-02</strong>")
    assert "<th>unit pauses</th>" in dom and re.search(
        rf"<td>revoked</td>\s*<td>{1 + reassigned}</td>(\s*<td>\d+</td>){{3}}\s*<td>1</td>", dom)
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
