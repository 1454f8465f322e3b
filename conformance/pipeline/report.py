"""The report people look at: one HTML file (plots as inline SVG drawn here) and a
markdown twin, under ``WAREHOUSE/report/``. Only aggregates reach the driver."""

from __future__ import annotations

import html
from pathlib import Path

from pyspark.sql import functions as F

from .history import duration_trends, flaky
from .tables import OUTCOME, RUN, VIOLATION
from .warehouse import Warehouse

COLORS = {"PASS": "#2e7d32", "NOT-APPLICABLE": "#9e9e9e", "NON-STRICT": "#f9a825",
          "FAIL": "#c62828", "BROKEN": "#6a1b9a"}
W, H, PAD = 560, 220, 36
RATE_WINDOW_MS = 3_600_000  # a group's span before a rate per hour is stated for it


def bars(title: str, labels: list[str], values: list[float], unit: str = "") -> str:
    """A bar chart as an SVG element (one <rect class="bar"> per value)."""
    top = max(values, default=0) or 1
    bw = (W - 2 * PAD) / max(len(values), 1)
    out = [f'<svg class="plot" role="img" aria-label="{html.escape(title)}" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg">',
           f'<text x="{W / 2}" y="16" text-anchor="middle" font-size="13">{html.escape(title)}</text>',
           f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#333"/>']
    for i, (label, v) in enumerate(zip(labels, values)):
        h = (H - 2 * PAD - 10) * v / top
        x = PAD + i * bw
        out.append(f'<rect class="bar" x="{x + 1:.1f}" y="{H - PAD - h:.1f}" width="{max(bw - 2, 1):.1f}" '
                   f'height="{h:.1f}" fill="#1565c0"><title>{html.escape(label)}: {v:g}{unit}</title></rect>')
        if len(labels) <= 12:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{H - PAD + 14}" text-anchor="middle" '
                       f'font-size="10">{html.escape(label)}</text>')
    out.append(f'<text x="4" y="{PAD}" font-size="10">{top:g}{unit}</text></svg>')
    return "".join(out)


def histogram(title: str, values: list[float], bins: int = 12, unit: str = "") -> str:
    if not values:
        return bars(title, [], [])
    lo, hi = min(values), max(values)
    step = (hi - lo) / bins or 1
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / step), bins - 1)] += 1
    return bars(title, [f"{lo + i * step:.0f}{unit}" for i in range(bins)], counts)


NOT_RUN = "not run (left out or not in this run)"


def legend() -> str:
    """What each grid colour means (the outcomes and a run that did not run a requirement)."""
    items = [(o, c) for o, c in COLORS.items()] + [(NOT_RUN, "#fff")]
    return ('<p class="legend">' + " ".join(
        f'<span><svg width="12" height="12"><rect width="11" height="11" fill="{c}" stroke="#999"/></svg> '
        f'{html.escape(o)}</span>' for o, c in items) + "</p>")


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
    return md, [legend(), timeline([r.label for r in rs], shown)] if shown else []


# After layout the page records how many plots and bars the browser drew with a size, so a
# headless browser's DOM dump shows the plots rendered (tests/pipeline/test_report_browser.py).
_LAID_OUT = ("<script>addEventListener('load',()=>{const v=e=>{const r=e.getBoundingClientRect();"
             "return r.width>0&&r.height>0};const b=document.body.dataset;"
             "b.plotsDrawn=[...document.querySelectorAll('svg.plot')].filter(v).length;"
             "b.barsDrawn=[...document.querySelectorAll('svg.plot rect.bar')].filter(v).length})</script>")


def write_report(wh: Warehouse, baseline: str | None = None, candidate: str | None = None) -> tuple[Path, Path]:
    """The verdict and violations first, then the rebalance summary, then the history; each
    section's markdown rendered as HTML with its plots after it."""
    out = wh.root / "report"
    out.mkdir(exist_ok=True)
    sections: list[tuple[list[str], list[str]]] = []
    if wh.exists("violations"):
        v = wh.read("violations", VIOLATION)
        counts = [(r["invariant"], r["count"]) for r in v.groupBy("invariant").count().orderBy("invariant").collect()]
        total = sum(c for _, c in counts)
        md = ["## Audit", "", f"**Verdict: {'VIOLATIONS' if total else 'CLEAN'}** — {total} violation(s)", ""]
        if counts:
            md += ["| invariant | violations |", "| --- | --- |"] + [f"| {k} | {c} |" for k, c in counts] + [""]
        sample = v.orderBy("source", "ref").limit(50).collect()
        md += [f"- [`{x.source}` {x.ref_kind} {x.ref}]({_uri(x.source)}): **{x.invariant}** group {x.group_id} generation "
               f"{x.generation} members {', '.join(x.members or []) or '-'} unit {x.unit or '-'}: "
               f"{html.escape(x.detail or '')}" for x in sample] + [""]
        sections.append((md, []))
    if wh.exists("rounds"):
        rb = wh.spark.read.parquet(wh.path("rounds"))
        durations = [r[0] for r in rb.select("duration_ms").where("duration_ms is not null").limit(100000).collect()]
        moved = (rb.groupBy("units_moved").count().orderBy("units_moved").collect())
        pause = rb.groupBy("mode").agg(F.avg("pause_ms").alias("p"), F.count("*").alias("n"),
                                       F.sum("span_ms").alias("span")).orderBy("mode").collect()
        # A rate per hour only for groups seen for an hour at least: 6 rebalances in 2 minutes
        # is not "180 an hour".
        rate = (rb.groupBy("source", "group_id").agg(F.count("*").alias("n"), F.max("span_ms").alias("span"))
                .withColumn("per_hour", F.when(F.col("span") >= RATE_WINDOW_MS, F.col("n") / (F.col("span") / 3.6e6))))
        stats = rate.agg(F.expr(f"percentile(per_hour, 0.5) filter (where span >= {RATE_WINDOW_MS})").alias("median"),
                         F.max(F.when(F.col("span") >= RATE_WINDOW_MS, F.col("per_hour"))).alias("max"),
                         F.count(F.when(F.col("span") >= RATE_WINDOW_MS, 1)).alias("rated"),
                         F.count("*").alias("groups"), F.max("span").alias("longest")).first()
        plots = [histogram("rebalance duration (ms)", durations),
                 bars("rebalances by units moved", [str(r["units_moved"]) for r in moved],
                      [r["count"] for r in moved]),
                 bars("mean stop-the-world pause per rebalance (ms)", [r["mode"] for r in pause],
                      [round(r["p"] or 0, 1) for r in pause], " ms")]
        if stats["rated"]:
            rates = (f"rebalances per hour per group ({stats['rated']} of {stats['groups']} group(s) "
                     f"seen for an hour or more): median {stats['median']:.1f}, max {stats['max']:.1f}")
        else:
            rates = (f"no rate per hour: no group was seen for an hour (the longest for "
                     f"{(stats['longest'] or 0) / 60000:.1f} min)")
        md = ["## Rebalances", "", f"{len(durations)} rebalance(s); {rates}", "",
              "| mode | rebalances | mean pause (ms) |", "| --- | --- | --- |"]
        md += [f"| {r['mode']} | {r['n']} | {r['p'] or 0:.1f} |" for r in pause] + [""]
        sections.append((md, plots))
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


def _uri(source: str) -> str:
    """The evidence file as a link (a local path as a file: URI; a URL as it is)."""
    return source if "://" in source else Path(source).resolve().as_uri()


def _markdown(text: str) -> str:
    import markdown
    return markdown.markdown(text, extensions=["tables", "fenced_code"])
