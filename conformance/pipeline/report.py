"""The report people look at: one HTML file (plots as inline SVG drawn here) and a
markdown twin, under ``WAREHOUSE/report/``. Only aggregates reach the driver."""

from __future__ import annotations

import html
from pathlib import Path

from pyspark.sql import functions as F

from .history import duration_trends, flaky, regressions
from .tables import OUTCOME, VIOLATION
from .warehouse import Warehouse

COLORS = {"PASS": "#2e7d32", "NOT-APPLICABLE": "#9e9e9e", "NON-STRICT": "#f9a825",
          "FAIL": "#c62828", "BROKEN": "#6a1b9a"}
W, H, PAD = 560, 220, 36


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


def timeline(rows: list[tuple[str, str, str]]) -> str:
    """Outcome per requirement (rows) and run (columns): coloured cells."""
    runs = sorted({r for r, _, _ in rows})
    reqs = sorted({q for _, q, _ in rows})
    cell = 14
    width, height = 160 + cell * len(runs), 24 + cell * len(reqs)
    out = [f'<svg class="plot" role="img" aria-label="outcome timeline" width="{width}" height="{height}" '
           f'xmlns="http://www.w3.org/2000/svg"><text x="4" y="14" font-size="13">outcome timeline '
           'per requirement (columns: runs, oldest first)</text>']
    col = {r: i for i, r in enumerate(runs)}
    row = {q: i for i, q in enumerate(reqs)}
    for q, i in row.items():
        out.append(f'<text x="4" y="{24 + cell * i + 11}" font-size="10">{html.escape(q)}</text>')
    for r, q, o in rows:
        out.append(f'<rect class="bar" x="{160 + cell * col[r]}" y="{24 + cell * row[q]}" width="{cell - 2}" '
                   f'height="{cell - 2}" fill="{COLORS.get(o, "#000")}"><title>{html.escape(r)} '
                   f'{html.escape(q)}: {o}</title></rect>')
    return "".join(out) + "</svg>"


# After layout the page records how many plots and bars the browser drew with a size, so a
# headless browser's DOM dump shows the plots rendered (tests/pipeline/test_report_browser.py).
_LAID_OUT = ("<script>addEventListener('load',()=>{const v=e=>{const r=e.getBoundingClientRect();"
             "return r.width>0&&r.height>0};const b=document.body.dataset;"
             "b.plotsDrawn=[...document.querySelectorAll('svg.plot')].filter(v).length;"
             "b.barsDrawn=[...document.querySelectorAll('svg.plot rect.bar')].filter(v).length})</script>")


def write_report(wh: Warehouse, baseline: str | None = None, candidate: str | None = None) -> tuple[Path, Path]:
    out = wh.root / "report"
    out.mkdir(exist_ok=True)
    plots: list[str] = []
    md: list[str] = ["# connect-conformance pipeline report", ""]
    if wh.exists("violations"):
        v = wh.read("violations", VIOLATION)
        counts = [(r["invariant"], r["count"]) for r in v.groupBy("invariant").count().orderBy("invariant").collect()]
        md += ["## Audit", "", f"{sum(c for _, c in counts)} violation(s)", ""]
        md += ["| invariant | violations |", "| --- | --- |"] + [f"| {k} | {c} |" for k, c in counts] + [""]
        sample = v.orderBy("source", "ref").limit(50).collect()
        md += [f"- `{x.source}` {x.ref_kind} {x.ref}: [{x.invariant}] {x.detail}" for x in sample] + [""]
    if wh.exists("rounds"):
        rb = wh.spark.read.parquet(wh.path("rounds"))
        durations = [r[0] for r in rb.select("duration_ms").where("duration_ms is not null").limit(100000).collect()]
        moved = (rb.groupBy("units_moved").count().orderBy("units_moved").collect())
        pause = rb.groupBy("mode").agg(F.avg("pause_ms").alias("p"), F.count("*").alias("n"),
                                       F.sum("span_ms").alias("span")).orderBy("mode").collect()
        rate = rb.groupBy("source", "group_id").agg(
            (F.count("*") / F.greatest(F.max("span_ms") / 3.6e6, F.lit(1e-9))).alias("per_hour"))
        stats = rate.agg(F.expr("percentile(per_hour, 0.5)").alias("median"), F.max("per_hour").alias("max")).first()
        plots.append(histogram("rebalance duration (ms)", durations))
        plots.append(bars("rebalances by units moved", [str(r["units_moved"]) for r in moved],
                          [r["count"] for r in moved]))
        plots.append(bars("mean stop-the-world pause per rebalance (ms)", [r["mode"] for r in pause],
                          [round(r["p"] or 0, 1) for r in pause], " ms"))
        md += ["## Rebalances", "", f"{len(durations)} rebalance(s); rebalances per hour per group: "
               f"median {stats['median'] or 0:.1f}, max {stats['max'] or 0:.1f}", "",
               "| mode | rebalances | mean pause (ms) |", "| --- | --- | --- |"]
        md += [f"| {r['mode']} | {r['n']} | {r['p'] or 0:.1f} |" for r in pause] + [""]
    if wh.exists("outcomes"):
        o = wh.read("outcomes", OUTCOME)
        cells = [(r.run_id, r.requirement, r.outcome) for r in
                 o.select("run_id", "requirement", "outcome", "started").orderBy("started").limit(20000).collect()]
        plots.append(timeline(cells))
        fl = flaky(o).collect()
        md += ["## Certification history", "", f"{len({c[0] for c in cells})} run(s); {len(fl)} flaky requirement(s)", ""]
        md += [f"- flaky: {r.target} {r.impl_version} {r.requirement}: {'/'.join(r.seen)}" for r in fl]
        slow = duration_trends(o).where("ratio > 1.5").orderBy(F.desc("ratio")).limit(10).collect()
        md += [f"- slower: {r.target} {r.requirement}: {r.first:.3f}s -> {r.latest:.3f}s" for r in slow]
        if baseline and candidate:
            reg = regressions(o, baseline, candidate).collect()
            md += ["", f"### Regressions {baseline} -> {candidate}: {len(reg)}", ""]
            md += [f"- {r.requirement}: {r.baseline} -> {r.candidate}" for r in reg]
        md.append("")
    md_text = "\n".join(md)
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>connect-conformance pipeline report"
            "</title><style>body{font-family:sans-serif;max-width:70em;margin:1em auto}svg{display:block;"
            "margin:1em 0;border:1px solid #ddd}pre{white-space:pre-wrap}</style></head><body>"
            + "".join(plots) + "<pre>" + html.escape(md_text) + "</pre>" + _LAID_OUT + "</body></html>")
    (out / "index.html").write_text(page, encoding="utf-8")
    (out / "report.md").write_text(md_text, encoding="utf-8")
    return out / "index.html", out / "report.md"
