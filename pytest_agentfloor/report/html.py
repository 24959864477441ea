"""report.html: one self-contained page (inline CSS and SVG; no script, font or URL to fetch).

Charts: a capability heatmap (models x tiers, coloured by TCR, CI in each cell), a cost-per-run
vs TCR scatter with CI whiskers and the Pareto front drawn as a staircase, and failure-mode
stacks. Tables: paired tests, deployment recipes, cost/latency, failure details, reliability.
Everything is a pure function of the Summary and model metadata (deterministic bytes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..grading.failure import FAILURE_NAMES
from ..render import safe_text
from ..stats import OVERALL, Summary
from .format import DASH, TextTable, ci_pct, pct, usd
from .sections import section_tables
from .tables import (
    config_line, cost_by_tier_table, cost_table, diagnostics_table, failure_modes_present, failure_table,
    instance_table, interval_caption, judge_table, models_table, paired_table, recipes_table, reliability_table,
    scope_label, tcr_long_table, unmet_table
)

FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", Arial, sans-serif'

CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --soft: #f6f8fa;
        --accent: #0969da; --good: #1a7f37; --mid: #9a6700; --bad: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 14px/1.45 FONT; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
p.sub { color: var(--muted); margin: 0 0 8px; }
p.note { color: var(--muted); font-size: 12.5px; margin: 6px 0 0; max-width: 1100px; }
.warn { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; margin: 12px 0; }
.warn ul { margin: 4px 0 0 18px; padding: 0; }
p.run { margin: 8px 0; padding: 6px 12px; border-radius: 6px; border: 1px solid var(--muted); }
p.run.partial { background: #fff8c5; border-color: #d4a72c; }
.chart { overflow-x: auto; }
svg { display: block; font-family: FONT; }
.scroll { overflow-x: auto; margin-top: 8px; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: var(--soft); font-weight: 600; border-bottom: 2px solid var(--line); }
tr.end td { border-bottom: 2px solid #afb8c1; }
td.l, th.l { text-align: left; } td.r, th.r { text-align: right; } td.c, th.c { text-align: center; }
td.good { color: var(--good); } td.mid { color: var(--mid); } td.bad { color: var(--bad); }
td.na { color: var(--muted); } td.best { font-weight: 700; } td.sig { font-weight: 700; }
td.up { color: var(--good); } td.down { color: var(--bad); } td.infra { color: var(--mid); }
td.yes span, td.raw span, td.no span { display: inline-block; min-width: 34px; padding: 0 6px;
  border-radius: 10px; font-size: 12px; text-align: center; }
td.yes span { background: #dafbe1; color: var(--good); font-weight: 600; }
td.raw span { background: #fff8c5; color: var(--mid); }
td.no span { background: var(--soft); color: var(--muted); }
.pair { display: flex; flex-wrap: wrap; gap: 8px 36px; align-items: flex-start; }
.pair > div { flex: 0 1 auto; max-width: 100%; }
.pair p.note { max-width: 520px; }
details { margin-top: 10px; } summary { cursor: pointer; color: var(--accent); }
nav.toc { margin: 12px 0 0; font-size: 13px; } nav.toc ol { margin: 4px 0 0; padding: 0; list-style: none;
  display: flex; flex-wrap: wrap; gap: 2px 16px; }
nav.toc a { color: var(--accent); text-decoration: none; } nav.toc a:hover { text-decoration: underline; }
section { scroll-margin-top: 8px; }
""".replace("FONT", FONT)

# YlGnBu-like sequential scale for TCR 0..1
_STOPS: tuple[tuple[float, tuple[int, int, int]], ...] = (
    (0.0, (255, 255, 217)), (0.25, (199, 233, 180)), (0.5, (65, 182, 196)), (0.75, (34, 94, 168)),
    (1.0, (8, 29, 88)),
)
MODE_COLOURS: dict[str, str] = {
    "F1": "#e15759", "F2": "#f28e2b", "F4": "#edc948", "F5": "#b07aa1", "F5b": "#ff9da7", "F6": "#9c755f",
    "F7": "#4e79a7", "F3": "#bab0ac", "none": "#d8dee4",
}
_EXTRA_COLOURS = ("#76b7b2", "#59a14f", "#8cd17d", "#86bcb6")


def _rgb(t: float) -> tuple[int, int, int]:
    t = min(1.0, max(0.0, t))
    for (t0, c0), (t1, c1) in zip(_STOPS, _STOPS[1:]):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return tuple(round(a + (b - a) * f) for a, b in zip(c0, c1))  # type: ignore[return-value]
    return _STOPS[-1][1]


def tcr_colour(t: float) -> str:
    return "#%02x%02x%02x" % _rgb(t)


def _text_on(t: float) -> str:
    r, g, b = _rgb(t)
    return "#ffffff" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 140 else "#1f2328"


def _f(x: float) -> str:
    """Coordinates with one decimal (and no ``-0``) so the SVG text is stable."""
    r = round(x, 1) + 0.0
    return f"{r:.1f}".rstrip("0").rstrip(".") if r != int(r) else str(int(r))


def _text_width(s: str, size: float) -> float:
    return 0.58 * size * len(s)


# -- charts ---------------------------------------------------------------------------------
def viewer_link(**filters: str | None) -> str:
    """A link into viewer.html (written beside report.html) with its filters preset in the URL hash."""
    from urllib.parse import quote

    return escape("viewer.html#" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in filters.items() if v),
                  quote=True)


def paired_links(summary: Summary, table: TextTable) -> list[str]:
    """Per row of the paired table (model, tier): links to its pairs side by side in the viewer."""
    ref = summary.paired.reference
    by_label = {scope_label(sc): sc for sc in summary.scopes}
    out = []
    for row in table.rows:
        m, sc = row[0], by_label.get(row[1], row[1])
        tier = None if sc == OVERALL else sc
        if row[2] == "0" or not ref:
            out.append("")
            continue
        out.append(f'<a href="{viewer_link(model=m, tier=tier, vs=ref)}">side by side</a> · '
                   f'<a href="{viewer_link(model=m, tier=tier, vs=ref, differ=ref)}">discordant</a>')
    return out


def toc_html(page: str) -> str:
    """A table of contents before the first section: every <section id> with its <h2>, in page order."""
    import re

    found = re.findall(r'<section id="([^"]+)"><h2>(.*?)</h2>', page)
    if not found:
        return page
    nav = ('<nav class="toc" aria-label="contents"><strong>Contents</strong><ol>'
           + "".join(f'<li><a href="#{sid}">{title}</a></li>' for sid, title in found)
           + '<li><a href="viewer.html">Transcripts (viewer.html)</a></li></ol></nav>\n')
    at = page.index('<section id="')
    return page[:at] + nav + page[at:]


def heatmap_svg(summary: Summary) -> str:
    models = list(summary.model_order)
    scopes = list(summary.scopes)
    labels = [m + (" (ref)" if summary.models[m].is_reference else "") for m in models]
    sizes = [("" if summary.models[m].params_b is None else f"{summary.models[m].params_b:g} B") for m in models]
    label_w = max([_text_width(s, 13) for s in labels] + [60]) + max([_text_width(s, 11) for s in sizes] + [0]) + 28
    cw, ch, gap, top = 104, 44, 10, 30
    x0 = label_w
    xs = [x0 + i * cw + (gap if sc == OVERALL else 0) for i, sc in enumerate(scopes)]
    width = xs[-1] + cw + 4 if xs else x0 + 4
    legend_y = top + ch * len(models) + 26
    height = legend_y + 40
    out = [f'<svg class="heatmap" width="{_f(width)}" height="{_f(height)}" viewBox="0 0 {_f(width)} {_f(height)}" '
           'role="img" aria-label="TCR heatmap, models by tier">']
    for x, sc in zip(xs, scopes):
        out.append(f'<text x="{_f(x + cw / 2)}" y="{top - 10}" text-anchor="middle" font-size="13" '
                   f'font-weight="600">{escape(scope_label(sc))}</text>')
    for j, (m, lab, size) in enumerate(zip(models, labels, sizes)):
        y = top + j * ch
        weight = ' font-weight="600"' if summary.models[m].is_reference else ""
        out.append(f'<text x="8" y="{_f(y + ch / 2 + 4.5)}" font-size="13"{weight}>{escape(lab)}</text>')
        if size:
            out.append(f'<text x="{_f(x0 - 10)}" y="{_f(y + ch / 2 + 4)}" font-size="11" fill="#59636e" '
                       f'text-anchor="end">{escape(size)}</text>')
        for x, sc in zip(xs, scopes):
            e = summary.tcr[m][sc]
            tip = (f"{m} · {scope_label(sc)}: {pct(e.tcr)} {ci_pct(e.ci_low, e.ci_high)}, "
                   f"{e.n_passed}/{e.n_runs} passed, {e.n_infra} infra"
                   + (f"; unreliable endpoint: {pct(e.tcr_infra_as_failure)} with infra errors as failures"
                      if e.unreliable else ""))
            if e.tcr is None:
                out.append(f'<g><title>{escape(tip)}</title><rect x="{_f(x + 1)}" y="{_f(y + 1)}" width="{cw - 2}" '
                           f'height="{ch - 2}" rx="3" fill="#f6f8fa" stroke="#d1d9e0"/>'
                           f'<text x="{_f(x + cw / 2)}" y="{_f(y + ch / 2 + 4)}" text-anchor="middle" '
                           f'font-size="12" fill="#59636e">{DASH}</text></g>')
                continue
            fg = _text_on(e.tcr)
            link = viewer_link(model=m, tier=None if sc == OVERALL else sc)
            out.append(
                f'<a href="{link}"><g><title>{escape(tip)} (open the runs)</title><rect x="{_f(x + 1)}" y="{_f(y + 1)}" width="{cw - 2}" '
                f'height="{ch - 2}" rx="3" fill="{tcr_colour(e.tcr)}"/>'
                f'<text x="{_f(x + cw / 2)}" y="{_f(y + 19)}" text-anchor="middle" font-size="14" font-weight="600" '
                f'fill="{fg}">{pct(e.tcr)}</text>'
                f'<text x="{_f(x + cw / 2)}" y="{_f(y + 34)}" text-anchor="middle" font-size="10.5" '
                f'fill="{fg}" fill-opacity="0.85">{ci_pct(e.ci_low, e.ci_high)}</text>'
                + (f'<text x="{_f(x + cw - 8)}" y="{_f(y + 15)}" text-anchor="end" font-size="12" '
                   f'fill="{fg}">⚠</text>' if e.unreliable else "") + '</g></a>')
    # legend
    lx, lw = x0, min(300.0, max(160.0, width - x0 - 10))
    out.append('<defs><linearGradient id="tcr-scale" x1="0" x2="1" y1="0" y2="0">'
               + "".join(f'<stop offset="{s:g}" stop-color="{tcr_colour(s)}"/>' for s, _ in _STOPS)
               + "</linearGradient></defs>")
    out.append(f'<text x="8" y="{legend_y + 11}" font-size="11.5" fill="#59636e">TCR (95% CI)</text>')
    out.append(f'<rect x="{_f(lx)}" y="{legend_y}" width="{_f(lw)}" height="12" fill="url(#tcr-scale)" '
               'stroke="#d1d9e0"/>')
    for v in (0, 25, 50, 75, 100):
        tx = lx + lw * v / 100
        out.append(f'<line x1="{_f(tx)}" x2="{_f(tx)}" y1="{legend_y + 12}" y2="{legend_y + 16}" stroke="#59636e"/>'
                   f'<text x="{_f(tx)}" y="{legend_y + 28}" font-size="10.5" text-anchor="middle" '
                   f'fill="#59636e">{v}%</text>')
    out.append("</svg>")
    return "".join(out)


def _nice_step(span: float, n: int = 5) -> float:
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


Box = tuple[float, float, float, float]


def _place_labels(points: Sequence[tuple[float, float, str, bool]], bounds: Box, size: float = 12,
                  obstacles: Sequence[Box] = ()) -> list[tuple[float, float, str, str, bool]]:
    """Greedy non-overlapping label placement: (x, y, anchor, text, bold) per point.

    Labels avoid each other, every marker and the ``obstacles`` (e.g. the Pareto line); front
    points are placed first. Where every candidate spot overlaps something, the least-overlapping
    one is used.
    """
    x_min, y_min, x_max, y_max = bounds
    boxes: list[Box] = [(px - 7, py - 7, px + 7, py + 7) for px, py, _, _ in points] + list(obstacles)
    placed: list[Box] = []
    order = sorted(range(len(points)), key=lambda i: (not points[i][3], points[i][1], points[i][0]))
    result: dict[int, tuple[float, float, str, str, bool]] = {}
    for i in order:
        px, py, text, bold = points[i]
        w, h = _text_width(text, size) + (4 if bold else 0), size + 2
        cands = [(px + 8, py + 4, "start"), (px - 8, py + 4, "end"), (px, py - 10, "middle"),
                 (px, py + 18, "middle")]
        for dy in (-8, 16, -20, 28, -32, 40, -44, 52):
            cands += [(px + 8, py + dy, "start"), (px - 8, py + dy, "end")]
        best: tuple[float, int, tuple[float, float, str], Box] | None = None
        for n, (tx, ty, anchor) in enumerate(cands):
            left = tx if anchor == "start" else tx - w if anchor == "end" else tx - w / 2
            box = (left, ty - h + 3, left + w, ty + 3)
            if box[0] < x_min or box[2] > x_max or box[1] < y_min or box[3] > y_max:
                continue
            overlap = sum(max(0.0, min(box[2], b[2]) - max(box[0], b[0]))
                          * max(0.0, min(box[3], b[3]) - max(box[1], b[1])) for b in boxes + placed)
            if best is None or (overlap, n) < (best[0], best[1]):
                best = (overlap, n, (tx, ty, anchor), box)
            if overlap == 0:
                break
        if best is None:  # nothing inside the bounds: right of the point
            chosen = (px + 8, py + 4, "start")
        else:
            chosen = best[2]
            placed.append(best[3])
        result[i] = (chosen[0], chosen[1], chosen[2], text, bold)
    return [result[i] for i in range(len(points))]


def scatter_svg(summary: Summary) -> tuple[str, list[str]]:
    """Cost per run (x) vs overall TCR (y) with CI whiskers and the Pareto staircase; plus notes."""
    notes: list[str] = []
    pts = []
    for m in summary.model_order:
        cost = summary.cost[m][OVERALL]
        e = summary.tcr[m][OVERALL]
        if cost.cost_per_run is None or e.tcr is None:
            notes.append(f"{m} is not plotted: cost unknown (no price and no size) or no scored run.")
            continue
        pts.append((m, cost.cost_per_run, e.tcr, e.ci_low, e.ci_high))
    front = [m for m in summary.pareto.get(OVERALL, []) if any(p[0] == m for p in pts)]
    W, H = 860, 470
    L, R, T, B = 72, 170, 24, 58
    pw, ph = W - L - R, H - T - B
    pad = 14.0  # keep markers off the frame
    costs = [p[1] for p in pts]
    log = bool(costs) and min(costs) > 0 and max(costs) / min(costs) >= 20
    if log:
        lo_e = math.floor(math.log10(min(costs)))
        hi_e = math.ceil(math.log10(max(costs)))
        if hi_e == lo_e:
            hi_e += 1
        mults = (1, 2, 5) if hi_e - lo_e <= 3 else (1,)
        xt = [m * 10.0 ** k for k in range(lo_e, hi_e + 1) for m in mults if m * 10.0 ** k <= 10.0 ** hi_e * 1.0001]

        def sx(v: float) -> float:
            return L + pad + (pw - 2 * pad) * (math.log10(v) - lo_e) / (hi_e - lo_e)
    else:
        top = max(costs, default=0.0)
        if top <= 0:
            x_hi = 1.0
            xt = [0.0]
            if pts:
                notes.append("No model has a cost (no pricing configured): every point sits at $0.")
        else:
            step = _nice_step(top)
            n = max(1, math.ceil(top / step - 1e-9))
            x_hi = n * step
            xt = [i * step for i in range(n + 1)]

        def sx(v: float) -> float:
            return L + pad + (pw - 2 * pad) * v / x_hi

    def sy(v: float) -> float:
        return T + pad + (ph - 2 * pad) * (1.0 - v)

    out = [f'<svg class="scatter" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
           'aria-label="Cost per run against TCR with the Pareto front">']
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="#fbfcfd" stroke="#d1d9e0"/>')
    for v in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
        y = sy(v)
        out.append(f'<line x1="{L}" x2="{L + pw}" y1="{_f(y)}" y2="{_f(y)}" stroke="#eaeef2"/>'
                   f'<text x="{L - 8}" y="{_f(y + 4)}" font-size="11" text-anchor="end" fill="#59636e">'
                   f'{round(v * 100)}%</text>')
    for v in xt:
        x = sx(v)
        out.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{T}" y2="{T + ph}" stroke="#eaeef2"/>'
                   f'<text x="{_f(x)}" y="{T + ph + 17}" font-size="11" text-anchor="middle" fill="#59636e">'
                   f'{escape(usd(v))}</text>')
    out.append(f'<text x="{_f(L + pw / 2)}" y="{H - 14}" font-size="12.5" text-anchor="middle">cost per run (USD'
               f'{", log scale" if log else ""})</text>')
    out.append(f'<text x="16" y="{_f(T + ph / 2)}" font-size="12.5" text-anchor="middle" '
               f'transform="rotate(-90 16 {_f(T + ph / 2)})">TCR, all tiers (95% CI)</text>')
    by_name = {p[0]: p for p in pts}
    obstacles: list[Box] = []
    if front:
        fp = [(sx(by_name[m][1]), sy(by_name[m][2])) for m in front]
        d = f"M{_f(fp[0][0])} {_f(fp[0][1])}"
        for (xa, ya), (xb, yb) in zip(fp, fp[1:]):
            d += f" H{_f(xb)} V{_f(yb)}"
            obstacles += [(xa, ya - 2, xb, ya + 2), (xb - 2, yb, xb + 2, ya)]
        d += f" H{_f(L + pw)}"
        obstacles.append((fp[-1][0], fp[-1][1] - 2, L + pw, fp[-1][1] + 2))
        out.append(f'<path d="{d}" fill="none" stroke="#0969da" stroke-width="2" stroke-dasharray="6 4" '
                   'stroke-linejoin="round"/>')
        # name the line itself: by a flat stretch of it, clear of every marker and whisker
        marks: list[Box] = [(sx(c) - 7, sy(t) - 7, sx(c) + 7, sy(t) + 7) for _, c, t, _, _ in pts]
        marks += [(sx(c) - 4, sy(hi), sx(c) + 4, sy(lo))
                  for _, c, _, lo, hi in pts if lo is not None and hi is not None]
        flats = [(xa, xb, ya) for (xa, ya), (xb, _) in zip(fp, fp[1:])] + [(fp[-1][0], L + pw, fp[-1][1])]
        lw = _text_width("Pareto front", 11.5)
        spots = [(x, y + dy) for xa, xb, y in sorted(flats, key=lambda f: f[0] - f[1]) if xb - xa > lw + 16
                 for x in ((xa + xb + lw) / 2, xb - 10, xa + lw + 12) for dy in (-7, 16)]
        spots.append((L + pw - 6, fp[-1][1] - 7))
        ex, ey = spots[-1]
        for cx, cy in spots:
            box = (cx - lw, cy - 12, cx, cy + 3)
            if box[1] >= T and box[3] <= T + ph and all(
                    box[2] <= b[0] or box[0] >= b[2] or box[3] <= b[1] or box[1] >= b[3] for b in marks):
                ex, ey = cx, cy
                break
        obstacles.append((ex - lw, ey - 12, ex, ey + 3))
        out.append(f'<text x="{_f(ex)}" y="{_f(ey)}" font-size="11.5" text-anchor="end" fill="#0969da" '
                   'font-style="italic">Pareto front</text>')
    for m, c, t, lo, hi in pts:
        x, y = sx(c), sy(t)
        if lo is not None and hi is not None:
            out.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{_f(sy(hi))}" y2="{_f(sy(lo))}" stroke="#8c959f" '
                       'stroke-width="1.5"/>'
                       f'<line x1="{_f(x - 4)}" x2="{_f(x + 4)}" y1="{_f(sy(hi))}" y2="{_f(sy(hi))}" stroke="#8c959f"/>'
                       f'<line x1="{_f(x - 4)}" x2="{_f(x + 4)}" y1="{_f(sy(lo))}" y2="{_f(sy(lo))}" '
                       'stroke="#8c959f"/>')
    for m, c, t, lo, hi in pts:
        x, y = sx(c), sy(t)
        on = m in front
        tip = f"{m}: {usd(c)} per run, TCR {pct(t)} {ci_pct(lo, hi)}" + (" (Pareto front)" if on else "")
        out.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{6 if on else 5}" fill="{"#0969da" if on else "#ffffff"}" '
                   f'stroke="{"#0969da" if on else "#57606a"}" stroke-width="2"><title>{escape(tip)}</title></circle>')
    obstacles.append((L + pw + 8, T, W, T + 84))  # the legend
    for m, c, t, lo, hi in pts:
        if lo is not None and hi is not None:
            obstacles.append((sx(c) - 4, sy(hi), sx(c) + 4, sy(lo)))
    # models drawn at the same spot share one label
    sharing: dict[tuple[float, float], list[str]] = {}
    for m, c, t, _, _ in pts:
        sharing.setdefault((round(sx(c)), round(sy(t))), []).append(m)
    labels = _place_labels([(float(x), float(y), ", ".join(ms), any(m in front for m in ms))
                            for (x, y), ms in sharing.items()],
                           (L + 2, T + 2, L + pw + R - 8, T + ph - 2), obstacles=obstacles)
    for x, y, anchor, text, bold in labels:
        style = ' font-weight="700" fill="#0a3069"' if bold else ' fill="#1f2328"'
        out.append(f'<text x="{_f(x)}" y="{_f(y)}" font-size="12" text-anchor="{anchor}"{style}>{escape(text)}</text>')
    # legend
    lx, ly = L + pw + 16, T + 8
    out.append(f'<line x1="{lx}" x2="{lx + 26}" y1="{ly}" y2="{ly}" stroke="#0969da" stroke-width="2" '
               f'stroke-dasharray="6 4"/><text x="{lx + 32}" y="{ly + 4}" font-size="12">Pareto front</text>'
               f'<circle cx="{lx + 13}" cy="{ly + 20}" r="6" fill="#0969da" stroke="#0969da" stroke-width="2"/>'
               f'<text x="{lx + 32}" y="{ly + 24}" font-size="12">on the front</text>'
               f'<circle cx="{lx + 13}" cy="{ly + 40}" r="5" fill="#ffffff" stroke="#57606a" stroke-width="2"/>'
               f'<text x="{lx + 32}" y="{ly + 44}" font-size="12">dominated</text>'
               f'<line x1="{lx + 13}" x2="{lx + 13}" y1="{ly + 54}" y2="{ly + 70}" stroke="#8c959f" '
               'stroke-width="1.5"/>'
               f'<text x="{lx + 32}" y="{ly + 66}" font-size="12">95% CI of TCR</text>')
    out.append("</svg>")
    return "".join(out), notes


def failure_stack_svg(summary: Summary) -> str:
    """Per model: failed share of scored runs (all tiers), split by failure mode."""
    modes = failure_modes_present(summary)
    extra = iter(_EXTRA_COLOURS * 4)
    colours = {k: MODE_COLOURS.get(k) or next(extra) for k in modes}
    models = list(summary.model_order)
    label_w = max([_text_width(m, 13) for m in models] + [60]) + 20
    bw, bh, gap, top = 520, 20, 8, 8
    W = label_w + bw + 150
    legend_y = top + len(models) * (bh + gap) + 26
    used = [k for k in modes if any(summary.breakdown[m][OVERALL].failure_mode.get(k) for m in models)]
    entry_w = max([_text_width(f"{k} {FAILURE_NAMES.get(k, 'no label')}", 11.5) + 34 for k in used] + [100])
    per_row = max(1, int((W - label_w) // entry_w))
    H = legend_y + 20 * math.ceil(max(len(used), 1) / per_row) + 8
    out = [f'<svg class="failures" width="{_f(W)}" height="{_f(H)}" viewBox="0 0 {_f(W)} {_f(H)}" role="img" '
           'aria-label="Failure modes per model">']
    x0 = label_w
    for j, m in enumerate(models):
        y = top + j * (bh + gap)
        b = summary.breakdown[m][OVERALL]
        runs = summary.cost[m][OVERALL].n_runs  # scored runs, the TCR denominator
        n_model_runs = b.n_failed + summary.tcr[m][OVERALL].n_passed
        denom = max(runs, n_model_runs, 1)
        out.append(f'<text x="8" y="{_f(y + bh / 2 + 4.5)}" font-size="13">{escape(m)}</text>')
        out.append(f'<rect x="{_f(x0)}" y="{_f(y)}" width="{bw}" height="{bh}" fill="#f6f8fa" stroke="#d1d9e0"/>')
        x = x0
        for k in modes:
            n = b.failure_mode.get(k, 0)
            if not n:
                continue
            w = bw * n / denom
            tip = f"{m}: {k} {FAILURE_NAMES.get(k, k)}: {n} of {denom} runs"
            out.append(f'<a href="{viewer_link(model=m, outcome="fail", fm=k)}">'
                       f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{bh}" fill="{colours[k]}">'
                       f'<title>{escape(tip)} (open the runs)</title></rect></a>')
            x += w
        out.append(f'<text x="{_f(x0 + bw + 8)}" y="{_f(y + bh / 2 + 4.5)}" font-size="12" fill="#59636e">'
                   f'{b.n_failed} failed / {denom} ({pct(b.n_failed / denom if denom else None, 0)})</text>')
    out.append(f'<text x="{_f(x0)}" y="{_f(legend_y - 8)}" font-size="11" fill="#59636e">bar = all scored runs '
               '(100%); coloured part = failed runs by failure mode</text>')
    for i, k in enumerate(used):
        lx = x0 + (i % per_row) * entry_w
        ly = legend_y + (i // per_row) * 20
        out.append(f'<rect x="{_f(lx)}" y="{_f(ly)}" width="12" height="12" fill="{colours[k]}"/>'
                   f'<text x="{_f(lx + 17)}" y="{_f(ly + 10.5)}" font-size="11.5">{escape(k)} '
                   f'{escape(FAILURE_NAMES.get(k, "no label"))}</text>')
    if not used:
        out.append(f'<text x="{_f(x0)}" y="{_f(legend_y + 10)}" font-size="12" fill="#59636e">'
                   'No model failures.</text>')
    out.append("</svg>")
    return "".join(out)


# -- tables -----------------------------------------------------------------------------------
def html_table(t: TextTable, *, title: str | None = None, links: Sequence[str] | None = None,
               links_header: str = "runs") -> str:
    """The table as HTML; ``links`` (one HTML cell body per row, already escaped) adds a last column."""
    out = ['<div class="scroll"><table>']
    if title:
        out.append(f"<caption>{escape(title)}</caption>")
    out.append("<thead><tr>" + "".join(f'<th class="{a}">{escape(h)}</th>' for h, a in zip(t.headers, t.align))
               + (f'<th class="l">{escape(links_header)}</th>' if links is not None else "") + "</tr></thead><tbody>")
    ends = set(t.sections)
    for i, (row, cls) in enumerate(zip(t.rows, t.classes)):
        tr = '<tr class="end">' if i in ends and i != len(t.rows) - 1 else "<tr>"
        cells = []
        for text, a, c in zip(row, t.align, cls):
            klass = " ".join(x for x in (a, c) if x)
            body = escape(text)
            if set(c.split()) & {"yes", "raw", "no"}:
                body = f"<span>{body}</span>"
            cells.append(f'<td class="{klass}">{body}</td>')
        if links is not None:
            cells.append(f'<td class="l">{links[i] if i < len(links) else ""}</td>')
        out.append(tr + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    out += [f'<p class="note">{escape(n)}</p>' for n in t.notes]
    return "".join(out)


def _section(sid: str, title: str, *body: str) -> str:
    return f'<section id="{sid}"><h2>{escape(title)}</h2>' + "".join(body) + "</section>\n"


def render_html(summary: Summary, meta: Mapping[str, Mapping[str, Any]]) -> str:
    parts = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
             '<meta name="viewport" content="width=device-width, initial-scale=1">'
             '<title>AgentFloor report</title>'
             f"<style>{CSS}</style></head>\n<body><main>\n"
             f'<header><h1>AgentFloor report</h1><p class="sub">{escape(config_line(summary))}</p></header>\n']
    if summary.warnings:
        parts.append('<div class="warn"><strong>Warnings</strong><ul>'
                     + "".join(f"<li>{escape(safe_text(w, multiline=False))}</li>" for w in summary.warnings) + "</ul></div>\n")
    if not summary.model_order:
        parts.append("<p>No run records.</p></main></body></html>\n")
        return "".join(parts)

    parts.append(_section(
        "capability", "Capability: task completion rate by model and tier",
        f'<div class="chart">{heatmap_svg(summary)}</div>',
        f'<p class="note">Each cell: TCR over scored runs and its 95% CI. {escape(interval_caption(summary))} '
        'Rows smallest model first; hover a cell for counts. A cell marked ⚠ is an unreliable endpoint '
        '(too many infrastructure errors). Click a cell (or a failure-mode bar below) to open its runs in the '
        'transcript viewer, <a href="viewer.html">viewer.html</a>.</p>',
        f'<details><summary>TCR table with runs, passes and infra errors</summary>'
        f'{html_table(tcr_long_table(summary))}</details>'))

    scatter, notes = scatter_svg(summary)
    front = summary.pareto.get(OVERALL) or []
    chart = f'<div class="chart">{scatter}</div>'
    if not any(summary.cost[m][OVERALL].cost_per_run for m in summary.model_order):
        # nothing to plot (no model has a price, or every one costs $0): a chart would be empty
        chart, notes = ('<p class="note">No cost chart: no model has a known cost above $0 per run (no pricing '
                        'configured). The table below gives TCR and what is known of cost.</p>'), []
    parts.append(_section(
        "cost", "Cost vs TCR (all tiers)", chart,
        f'<p class="note">Pareto front (cheaper or better than every other model): '
        f'{escape(" → ".join(front) if front else DASH)}.</p>',
        *[f'<p class="note">{escape(n)}</p>' for n in notes],
        html_table(cost_table(summary)),
        f'<details><summary>Cost per passed task by tier</summary>{html_table(cost_by_tier_table(summary))}'
        "</details>"))

    paired = paired_table(summary)
    if paired is not None:
        parts.append(_section("paired", paired.title, html_table(paired, links=paired_links(summary, paired)),
                              '<p class="note">runs: each pair side by side in the transcript viewer, the '
                              "model's run beside the reference's on the same item, aligned turn by turn; "
                              "discordant: only the items where one passed and the other failed.</p>"))
    else:
        parts.append(_section("paired", "Paired comparison",
                              f'<p class="note">Not computed: {escape(str(summary.paired.reason))}.</p>'))

    parts.append(_section("recipes", "Deployment recipes", html_table(recipes_table(summary))))

    ft = failure_table(summary)
    parts.append(_section(
        "failures", "Why runs failed", f'<div class="chart">{failure_stack_svg(summary)}</div>',
        *([f'<div class="pair"><div>{html_table(ft, title="Failure modes by tier")}</div><div>'
           f'{html_table(unmet_table(summary), title="First unmet obligation and terminal flag")}</div></div>']
          if ft.rows else ['<p class="note">No model failures.</p>'])))

    diag = diagnostics_table(summary)
    if diag is not None:
        parts.append(_section("diagnostics", diag.title, html_table(diag)))
    inst = instance_table(summary)
    if inst is not None:
        parts.append(_section("instances", inst.title, html_table(inst)))
    parts.append(_section("judge", "Semantic checks", html_table(judge_table(summary))))
    rel = reliability_table(summary)
    parts.append(_section("models", "Models", html_table(models_table(summary, meta)),
                          *([f"<h2>{escape(rel.title)}</h2>", html_table(rel)] if rel is not None else [])))
    parts.append("</main></body></html>\n")
    return safe_text("".join(parts))  # escaped already; no control character survives either


__all__ = ["failure_stack_svg", "heatmap_svg", "render_html", "scatter_svg", "tcr_colour"]


def section_html(sections: Mapping[str, Any]) -> str:
    from html import escape

    parts = []
    for section, tabs in section_tables(sections):
        fig = section.figure(sections[section.key])
        body = (f'<div class="chart">{fig}</div>' if fig else "") + "".join(
            f"<h3>{escape(t.title)}</h3>{html_table(t)}" for t in tabs)
        parts.append(f'<section id="{section.key}"><h2>{escape(section.title)}</h2>{body}</section>\n')
    from ..render import safe_text

    return safe_text("".join(parts))  # escaped already; no control character survives either
