"""The report people look at: one HTML file (plots as inline SVG drawn here) and a
markdown twin, under ``WAREHOUSE/report/``. Only aggregates reach the driver."""

from __future__ import annotations

import html
from pathlib import Path

from pyspark.sql import Window
from pyspark.sql import functions as F

from .history import duration_trends, flaky
from .plots import CAUSE_COLORS, MODE_COLORS, bars, histogram, legend, spans
from .tables import OUTCOME, ROUND, RUN, VIOLATION
from .warehouse import Warehouse

COLORS = {"PASS": "#2e7d32", "NOT-APPLICABLE": "#9e9e9e", "NON-STRICT": "#f9a825",
          "FAIL": "#c62828", "BROKEN": "#6a1b9a"}
RATE_WINDOW_MS = 3_600_000  # a group's span before a rate per hour is stated for it
TIMELINE_UNITS = 40  # the units with the longest pauses drawn on the timeline
NOT_RUN = "not run (left out or not in this run)"


def _outcome_legend() -> str:
    """What each grid colour means (the outcomes and a run that did not run a requirement)."""
    return legend({**COLORS, NOT_RUN: "#fff"})


def timeline(runs: list[str], rows: dict[str, dict[str, str]]) -> str:
    """Outcome per requirement (rows) and run (columns, by label, oldest first); a blank cell:
    that run did not run the requirement."""
    cell, left, top = 16, 160, 40
    width, height = left + cell * len(runs) + 8, top + cell * len(rows) + 4
    out = [f'<svg class="plot" role="img" aria-label="outcome per requirement and run" width="{width}" '
           f'height="{height}" xmlns="http://www.w3.org/2000/svg"><text x="4" y="14" font-size="13">'
           'outcome per requirement (rows) and run (columns, oldest first)</text>']
    for i, r in enumerate(runs):
        out.append(f'<text x="{left + cell * i + cell / 2}" y="{top - 6}" text-anchor="middle" '
                   f'font-size="10">{html.escape(r)}</text>')
    for j, (q, seen) in enumerate(sorted(rows.items())):
        y = top + cell * j
        out.append(f'<text x="4" y="{y + 11}" font-size="10">{html.escape(q)}</text>')
        for i, r in enumerate(runs):
            o = seen.get(r)
            cls = ' class="bar"' if o else ""
            out.append(f'<rect{cls} x="{left + cell * i}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                       f'fill="{COLORS.get(o, "#000") if o else "#fff"}" stroke="#999"><title>{html.escape(r)} '
                       f'{html.escape(q)}: {html.escape(o or NOT_RUN)}</title></rect>')
    return "".join(out) + "</svg>"


def _history(wh: Warehouse, baseline: str | None, candidate: str | None) -> tuple[list[str], list[str]]:
    """(markdown, plots) of the history: regressions first, then the runs with their labels,
    then the grid of the requirements that changed or did not pass."""
    from .history import compare, labelled
    o = wh.read("outcomes", OUTCOME)
    runs = labelled(wh.read("runs", RUN))
    md = ["## Certification history", ""]
    if baseline and candidate:
        _, lines = compare(o, baseline, candidate)
        md += ["### Regressions first", "", "```", *lines, "```", ""]
    md += ["### Runs", "", "| run | id | target | version | verdict | requirements run | left out |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    rs = runs.orderBy("started", "run_id").collect()
    md += [f"| {r.label} | `{r.run_id}` | {r.target} | {r.impl_version} | {r.verdict or 'no certificate'} "
           f"| {r.ran} | {len(r.left_out or [])} |" for r in rs] + [""]
    fl = flaky(o).collect()
    md += [f"{len(fl)} flaky requirement(s)", ""]
    md += [f"- flaky: {r.target} {r.impl_version} {r.requirement}: {'/'.join(r.seen)}" for r in fl]
    slow = duration_trends(o).where("slower").collect()
    md += [f"- slower beyond noise: {r.target} {r.requirement}: {r.latest:.3f}s against median "
           f"{r.median:.3f}s over {r.earlier_runs} earlier runs" for r in slow] + [""]
    label = {r.run_id: r.label for r in rs}
    grid: dict[str, dict[str, str]] = {}
    for r in o.select("run_id", "requirement", "outcome").collect():
        grid.setdefault(r.requirement, {})[label[r.run_id]] = r.outcome
    shown = {q: seen for q, seen in grid.items()
             if len(set(seen.values())) > 1 or set(seen.values()) - {"PASS", "NOT-APPLICABLE"}}
    md += [f"The grid below shows the {len(shown)} requirement(s) whose outcome changed between runs or "
           f"that did not pass; {len(grid) - len(shown)} passed in every run that ran them.", ""]
    return md, [_outcome_legend(), timeline([r.label for r in rs], shown)] if shown else []


# After layout the page records how many plots the browser drew with a size, per plot how
# many of its data marks, and the text of the links laid out on the first screen (the
# viewport before any scrolling), so a headless browser's DOM dump shows the plots carry
# data and the evidence is seen first (tests/pipeline/test_report_browser.py).
_LAID_OUT = ("<script>addEventListener('load',()=>{const v=e=>{const r=e.getBoundingClientRect();"
             "return r.width>0&&r.height>0};const b=document.body.dataset;"
             "const p=[...document.querySelectorAll('svg.plot')].filter(v);b.plotsDrawn=p.length;"
             "b.barsPerPlot=p.map(s=>[...s.querySelectorAll('rect.bar')].filter(v).length).join(',');"
             "b.firstScreenLinks=JSON.stringify([...document.querySelectorAll('a[href]')].filter("
             "a=>v(a)&&a.getBoundingClientRect().bottom<=innerHeight).map(a=>a.textContent))})</script>")


def write_report(wh: Warehouse, baseline: str | None = None, candidate: str | None = None) -> tuple[Path, Path]:
    """The verdict and violations first, then the rebalance summary, then the history; each
    section's markdown rendered as HTML with its plots after it."""
    out = wh.root / "report"
    out.mkdir(exist_ok=True)
    sections: list[tuple[list[str], list[str]]] = []
    if wh.exists("violations"):
        sections.append(_audit(wh))
    if wh.exists("rounds"):
        sections.append(_rebalances(wh))
    if wh.exists("outcomes"):
        sections.append(_history(wh, baseline, candidate))
    md_text = "\n".join(["# connect-conformance pipeline report", ""] + [x for md, _ in sections for x in md])
    body = "".join(_markdown("\n".join(md)) + "".join(plots) for md, plots in sections)
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>connect-conformance pipeline report"
            "</title><style>body{font-family:sans-serif;max-width:70em;margin:1em auto}svg{display:block;"
            "margin:1em 0;border:1px solid #ddd}.legend svg{display:inline;border:0;margin:0}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
            "</style></head><body><h1>connect-conformance pipeline report</h1>"
            + body + _LAID_OUT + "</body></html>")
    (out / "index.html").write_text(page, encoding="utf-8")
    (out / "report.md").write_text(md_text, encoding="utf-8")
    return out / "index.html", out / "report.md"


def _audit(wh: Warehouse) -> tuple[list[str], list[str]]:
    """The verdict, the count per catalogue id, then each violation with its evidence."""
    v = wh.read("violations", VIOLATION)
    counts = v.groupBy("requirement", "invariant").count().orderBy("requirement", "invariant").collect()
    total = sum(r["count"] for r in counts)
    md = ["## Audit", "", f"**Verdict: {'VIOLATIONS' if total else 'CLEAN'}** — {total} violation(s)", ""]
    if counts:
        md += ["| requirement | rule | violations |", "| --- | --- | --- |"]
        md += [f"| {r['requirement']} | {r['invariant']} | {r['count']} |" for r in counts] + [""]
    shown = v.orderBy("source", "ref").limit(50).collect()
    md += [f"- **{x.requirement}** ({x.invariant}): [`{Path(x.source).name}` {x.ref_kind} {x.ref}]({_uri(x.source)}) "
           f"group `{x.group_id}` generation {x.generation} members {', '.join(x.members or []) or '-'} "
           f"unit {x.unit or '-'}: {html.escape(x.detail or '')}" for x in shown]
    if total > len(shown):
        md.append(f"- … and {total - len(shown)} more (the `violations` table)")
    return md + [""], []


def _rate_line(rb) -> str:  # noqa: ANN001
    """Rebalances per hour, only for groups seen for an hour at least: 6 rebalances in 2
    minutes is not "180 an hour"."""
    rate = (rb.groupBy("source", "group_id").agg(F.count("*").alias("n"), F.max("span_ms").alias("span"))
            .withColumn("per_hour", F.when(F.col("span") >= RATE_WINDOW_MS, F.col("n") / (F.col("span") / 3.6e6))))
    s = rate.agg(F.expr("percentile(per_hour, 0.5)").alias("median"), F.max("per_hour").alias("max"),
                 F.count("per_hour").alias("rated"), F.count("*").alias("groups"),
                 F.max("span").alias("longest")).first()
    if s["rated"]:
        return (f"rebalances per hour per group ({s['rated']} of {s['groups']} group(s) seen for an hour or "
                f"more): median {s['median']:.1f}, max {s['max']:.1f}")
    return f"no rate per hour: no group was seen for an hour (the longest for {(s['longest'] or 0) / 60000:.1f} min)"


def _rebalances(wh: Warehouse) -> tuple[list[str], list[str]]:
    """The summary per group, then three plots: each unit's time running nowhere, the pause
    of each rebalance by mode, and how long rebalances take."""
    rb = wh.read("rounds", ROUND)  # by the schema: a warehouse of an older version reads nulls
    per_group = (rb.groupBy("group_id", "source").agg(
        F.count("*").alias("n"), F.concat_ws("/", F.array_sort(F.collect_set("mode"))).alias("modes"),
        F.expr("percentile(duration_ms, 0.5)").alias("median"), F.max("duration_ms").alias("longest"),
        F.max("pause_ms").alias("pause"), F.sum("units_moved").alias("moved"),
        F.sum("units_paused").alias("paused")).orderBy(F.desc("n")).limit(30).collect())
    md = ["## Rebalances", "", f"{sum(r['n'] for r in per_group)} rebalance(s) in {len(per_group)} group(s); "
          f"{_rate_line(rb)}", "",
          "| group | source | rebalances | mode | median duration (ms) | longest (ms) | longest pause (ms) "
          "| units moved | unit pauses |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    dash = lambda x, f="{:.0f}": "-" if x is None else f.format(x)  # noqa: E731 (not decoded: no number)
    md += [f"| `{r['group_id']}` | {Path(r['source']).name} | {r['n']} | {r['modes']} | {dash(r['median'])} "
           f"| {dash(r['longest'])} | {dash(r['pause'])} | {dash(r['moved'], '{}')} | {dash(r['paused'], '{}')} |"
           for r in per_group] + [""]
    md += _pause_distribution(rb)
    md += ["A unit is a Connect connector or task, or a consumer group's partition (`topic-3`); a "
           "round whose assignment bytes no decoder reads has its unit columns `-`. A pause is the time a unit ran nowhere: an eager round stops every unit from its first "
           "JoinGroup to its last assignment; an incremental round's revoked unit waits for the round "
           "that gives it out again; lost work (its owner left) waits from the first round without "
           "its owner, KIP-415's scheduled delay included.", ""]
    return md, [x for x in (_unit_timeline(rb), _pause_per_round(rb), _durations(rb)) if x]


def _pause_distribution(rb) -> list[str]:  # noqa: ANN001
    """Unit pauses by cause: how many, their spread, and how many had not ended by the end."""
    rows = (rb.select(F.explode("pauses").alias("p")).groupBy("p.cause").agg(
        F.count("*").alias("n"), F.count("p.ms").alias("ended"),
        F.expr("percentile(p.ms, array(0.5, 0.95))").alias("q"), F.max("p.ms").alias("max"))
        .orderBy("cause").collect())
    if not rows:
        return []
    md = ["| unit pauses | count | median (ms) | 95th percentile (ms) | longest (ms) | not ended by the recording's end |",
          "| --- | --- | --- | --- | --- | --- |"]
    md += [f"| {r['cause']} | {r['n']} | {r['q'][0]:.0f} | {r['q'][1]:.0f} | {r['max']:.0f} | {r['n'] - r['ended']} |"
           if r["ended"] else f"| {r['cause']} | {r['n']} | - | - | - | {r['n']} |" for r in rows]
    return md + [""]


def _unit_timeline(rb) -> str:  # noqa: ANN001
    p = (rb.withColumn("t0", F.min("start_ms").over(Window.partitionBy("source", "group_id")))
         .select("group_id", "t0", F.explode("pauses").alias("p")).select("group_id", "t0", "p.*"))
    worst = (p.groupBy("group_id", "unit").agg(F.sum(F.coalesce("ms", F.lit(0.0))).alias("total"))
             .orderBy(F.desc("total"), "group_id", "unit").limit(TIMELINE_UNITS))
    rows = p.join(worst, ["group_id", "unit"]).orderBy(F.desc("total"), "group_id", "unit", "from_ms").collect()
    if not rows:
        return ""
    # the axis ends a little after the last pause seen (an open one is drawn up to there)
    end = 1.1 * max(((r["to_ms"] or r["from_ms"]) - r["t0"]) / 1000 for r in rows)
    by_unit: dict[str, list] = {}
    for r in rows:
        stop = None if r["to_ms"] is None else (r["to_ms"] - r["t0"]) / 1000
        tip = (f"{r['cause']} from {(r['from_ms'] - r['t0']) / 1000:.3f} s, "
               + ("not running again by the end of the recording" if stop is None else f"{r['ms']:.0f} ms"))
        by_unit.setdefault(f"{r['group_id']} {r['unit']}", []).append(
            ((r["from_ms"] - r["t0"]) / 1000, stop, r["cause"], tip))
    return (spans("unit unavailability: when each unit ran nowhere", "time since the group's first rebalance (s)",
                  list(by_unit.items()), round(end, 3) or 1.0, CAUSE_COLORS)
            + legend({"eager stop-the-world": CAUSE_COLORS["eager"], "revoked (incremental)": CAUSE_COLORS["revoked"],
                      "lost (owner left; scheduled delay)": CAUSE_COLORS["lost"],
                      "faded: not running again by the end of the recording": "#bbb"}))


def _pause_per_round(rb) -> str:  # noqa: ANN001
    rows = (rb.where("pause_ms is not null").orderBy("start_ms", "group_id", "generation")
            .select("group_id", "generation", "mode", "pause_ms").limit(200).collect())
    if not rows:
        return ""
    return (bars("pause per rebalance (longest time a unit ran nowhere)", "rebalance, in time order (group/generation)",
                 "pause (ms)", [f"{r['group_id']}/{r['generation']} {r['mode']}" for r in rows],
                 [round(r["pause_ms"], 1) for r in rows], [MODE_COLORS.get(r["mode"], "#999") for r in rows], " ms")
            + legend({m: c for m, c in MODE_COLORS.items() if m in {r["mode"] for r in rows}}))


def _durations(rb) -> str:  # noqa: ANN001
    values = [r[0] for r in rb.where("duration_ms is not null").select("duration_ms").limit(100_000).collect()]
    if not values:
        return ""
    return (histogram("rebalance duration distribution (first JoinGroup to last assignment)",
                      "duration (ms, lower bound of each range)", values)
            + legend({"rebalances in the range": "#1565c0"}))


def _uri(source: str) -> str:
    """The evidence file as a link (a local path as a file: URI; a URL as it is)."""
    return source if "://" in source else Path(source).resolve().as_uri()


def _markdown(text: str) -> str:
    import markdown
    return markdown.markdown(text, extensions=["tables", "fenced_code"])
