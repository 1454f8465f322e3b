"""The report's plots as inline SVG: every plot has a title, labelled axes with their unit,
a legend for its colours, and marks carrying data (``class="bar"``, each with a tooltip)
that a browser test can count."""

from __future__ import annotations

import html
from collections.abc import Sequence

W, H, PAD, LEFT = 640, 240, 40, 56
MODE_COLORS = {"eager": "#c62828", "incremental": "#1565c0", "draft": "#6a1b9a"}
CAUSE_COLORS = {"eager": "#c62828", "revoked": "#1565c0", "lost": "#ef6c00"}
BAR = "#1565c0"


def _svg(title: str, width: float, height: float) -> list[str]:
    return [f'<svg class="plot" role="img" aria-label="{html.escape(title)}" width="{width:.0f}" '
            f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" xmlns="http://www.w3.org/2000/svg">',
            f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-size="13">{html.escape(title)}</text>']


def _axes(x_label: str, y_label: str, top: float, y_max: float, width: float = W, height: float = H) -> list[str]:
    """The x and y axes with their labels (unit included) and the y axis's top value."""
    return [f'<line x1="{LEFT}" y1="{height - PAD}" x2="{width - 8}" y2="{height - PAD}" stroke="#333"/>',
            f'<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{height - PAD}" stroke="#333"/>',
            f'<text x="{(LEFT + width) / 2:.0f}" y="{height - 6}" text-anchor="middle" font-size="11">'
            f'{html.escape(x_label)}</text>',
            f'<text x="12" y="{(top + height - PAD) / 2:.0f}" text-anchor="middle" font-size="11" '
            f'transform="rotate(-90 12 {(top + height - PAD) / 2:.0f})">{html.escape(y_label)}</text>',
            f'<text x="{LEFT - 4}" y="{top + 4}" text-anchor="end" font-size="10">{y_max:g}</text>',
            f'<text x="{LEFT - 4}" y="{height - PAD}" text-anchor="end" font-size="10">0</text>']


def legend(items: dict[str, str]) -> str:
    """Colour swatches with what each means (HTML, beside a plot)."""
    return ('<p class="legend">' + " ".join(
        f'<span><svg width="12" height="12"><rect width="11" height="11" fill="{c}" stroke="#999"/></svg> '
        f'{html.escape(label)}</span>' for label, c in items.items()) + "</p>")


def bars(title: str, x_label: str, y_label: str, labels: Sequence[str], values: Sequence[float],
         colors: Sequence[str] | None = None, unit: str = "") -> str:
    """One bar per value (``colors``: one per bar, default blue), left to right."""
    top, y0 = 28, H - PAD
    peak = max(values, default=0) or 1
    bw = (W - LEFT - 8) / max(len(values), 1)
    out = _svg(title, W, H) + _axes(x_label, y_label, top, max(values, default=0))
    for i, (label, v) in enumerate(zip(labels, values)):
        h = (y0 - top) * v / peak
        x = LEFT + i * bw
        out.append(f'<rect class="bar" x="{x + 1:.1f}" y="{y0 - h:.1f}" width="{max(bw - 2, 1):.1f}" '
                   f'height="{h:.1f}" fill="{colors[i] if colors else BAR}"><title>{html.escape(label)}: '
                   f'{v:g}{unit}</title></rect>')
        if len(labels) <= 12:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{y0 + 12}" text-anchor="middle" font-size="9">'
                       f'{html.escape(label)}</text>')
    return "".join(out) + "</svg>"


def histogram(title: str, x_label: str, values: Sequence[float], bins: int = 12) -> str:
    """How many values fall in each of ``bins`` equal ranges (labelled by their lower bound)."""
    if not values:
        return bars(title, x_label, "count", [], [])
    lo, hi = min(values), max(values)
    step = (hi - lo) / bins or 1
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / step), bins - 1)] += 1
    return bars(title, x_label, "count", [f"{lo + i * step:.0f}" for i in range(bins)], counts)


def spans(title: str, x_label: str, rows: Sequence[tuple[str, Sequence[tuple[float, float | None, str, str]]]],
          end: float, colors: dict[str, str]) -> str:
    """A timeline: one row per label, one bar per (start, stop, colour key, tooltip); a stop
    of None runs to ``end`` (the recording's), drawn faded: its length is not known."""
    row_h, top = 16, 28
    height = top + row_h * len(rows) + PAD
    left = 150
    scale = (W - left - 8) / (end or 1)
    out = _svg(title, W, height)
    out += [f'<line x1="{left}" y1="{height - PAD}" x2="{W - 8}" y2="{height - PAD}" stroke="#333"/>',
            f'<text x="{(left + W) / 2:.0f}" y="{height - 6}" text-anchor="middle" font-size="11">'
            f'{html.escape(x_label)}</text>',
            f'<text x="{left}" y="{height - PAD + 12}" font-size="10">0</text>',
            f'<text x="{W - 8}" y="{height - PAD + 12}" text-anchor="end" font-size="10">{end:g}</text>']
    for j, (label, bars_) in enumerate(rows):
        y = top + row_h * j
        out.append(f'<text x="4" y="{y + 11}" font-size="10">{html.escape(label)}</text>')
        for start, stop, key, tip in bars_:
            x1, x2 = left + start * scale, left + (end if stop is None else stop) * scale
            fade = ' fill-opacity="0.35"' if stop is None else ""
            out.append(f'<rect class="bar" x="{x1:.1f}" y="{y + 2}" width="{max(x2 - x1, 1.5):.1f}" height="{row_h - 4}" '
                       f'fill="{colors.get(key, BAR)}"{fade}><title>{html.escape(label)}: {html.escape(tip)}'
                       f'</title></rect>')
    return "".join(out) + "</svg>"
