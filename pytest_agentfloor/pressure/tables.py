"""Pressure report tables (text cells) and the failure-record plot, from stats.pressure.summarise."""

from __future__ import annotations

from html import escape
from typing import Any

from ..report.format import DASH, TextTable, ci_pp, pct, pval, signed
from ..report.sections import ReportSection

LABEL = {"V": "V 128-8", "W": "W high-low", "linked": "linked-raw", "VxW": "V x W", "VxD": "V x linked",
         "WxD": "W x linked", "compact": "compact-raw", "typed": "typed-raw"}
#: columns the terminal drops first when narrow (report files show all)
OPTIONAL = ("CI models", "p models", "CI intents", "p intents", "units", "flip p")
FLAGS = ("truncation", "budget", "turn_limit", "infeasible", "wrong_conclusion", "other", "-")
COLOURS = {"truncation": "#c0392b", "budget": "#e67e22", "turn_limit": "#f1c40f", "infeasible": "#8e44ad",
           "wrong_conclusion": "#2980b9", "other": "#7f8c8d", "-": "#bdc3c7"}


def contrast_table(s: dict[str, Any], lane: str) -> TextTable:
    rows = s["contrasts"][lane]
    t = TextTable(f"pressure_contrasts_{lane}", f"Pressures: eight paired contrasts ({lane} lane)",
                  ["contrast", "units", "pp", "CI families", "p families", "CI intents", "p intents",
                   "CI models", "p models", "flip p", "flip p Holm"], "lrrrrrrrrrr")
    for r in rows:
        if not r.get("units"):
            t.add([LABEL[r["contrast"]], "0"] + [DASH] * 9)
            continue
        cells = [LABEL[r["contrast"]], str(r["units"]), signed(r["pp"])]
        for c in ("family", "intent", "model"):
            cells += [ci_pp(r[f"{c}_lo"], r[f"{c}_hi"]), pval(r.get(f"{c}_p_holm"))]
        cells += [pval(r.get("signflip_p")), pval(r.get("signflip_p_holm"))]
        t.add(cells)
    t.notes.append("Contrasts: V 128-8, W high-low and linked-raw are main effects; 'x' rows their interactions; "
                   "compact-raw and typed-raw are taken at (V8, low). p columns are Holm-adjusted over the eight.")
    t.notes.append("A unit is one (model, family); its success in a cell is the mean over runs. Main effects "
                   "average four paired differences at the endpoint cells {8,128} x {low,high} x {raw,linked}, "
                   "interactions two differences-in-differences. Intervals: 95% percentile cluster bootstrap, "
                   "10,000 draws; p: centred bootstrap (floor 1/10,000), Holm over the eight per resampling unit. "
                   "Sign-flip: exact over intent means.")
    return t


def truncation_table(s: dict[str, Any]) -> TextTable | None:
    t = TextTable("pressure_truncation", "Pressures: truncation at the completion cap and the menu effect",
                  ["lane", "V", "episodes", "truncated", "share", "before any call"], "lrrrrr")
    notes = []
    for lane, tr in s["truncation"].items():
        if not tr:
            continue
        per = tr["per_V"]
        for i, v in enumerate(sorted(per, key=int)):
            e = per[v]
            t.add([lane, str(v), str(e["episodes"]), str(e["truncated"]), pct(e["share"]), str(e["before_first_call"])],
                  end_section=i == len(per) - 1)
        if tr.get("pairs") and "effect_pp" in tr:
            lo, hi = tr["bounds_pp"]
            notes.append(
                f"{lane}: {tr['pairs']} matched pairs (V=8 vs V=128), menu effect {signed(tr['effect_pp'])} pp; "
                f"{tr['lost']} lost, {tr['gained']} gained; {tr['lost_truncated_at_V128']} lost pairs truncated at "
                f"V=128 carry {tr['pp_lost_in_truncated']:.1f} of {tr['pp_lost']:.1f} pp lost; neither truncated: "
                f"{tr['neither_truncated']} pairs, effect {signed(tr['effect_neither_truncated_pp'])} pp; "
                f"worst-case bounds [{signed(lo)}, {signed(hi)}] pp.")
        arms = tr.get("truncated_by_arm") or {}
        if arms:
            notes.append(f"{lane}: truncated failures per arm at the endpoint cells: " + "; ".join(
                f"{axis} " + " vs ".join(f"{lv}: {n}" for lv, n in levels.items()) for axis, levels in arms.items()))
    t.notes.extend(notes)
    return t if t.rows else None


def lanes_table(s: dict[str, Any]) -> TextTable | None:
    lanes = s.get("lanes")
    if not lanes:
        return None
    t = TextTable("pressure_lanes", "Pressures: routed (oracle-assisted) versus fixed menu lane",
                  ["pairs", "routed-fixed pp", "95% CI", "p", "extra tokens", "extra schemas"], "rrrrrr")
    exp = lanes["fixed_extra_exposures"]
    t.add([str(lanes["pairs"]), signed(lanes["routed_minus_fixed_pp"]), ci_pp(lanes["lo"], lanes["hi"]),
           pval(lanes["p"]), f"{lanes['fixed_extra_tokens']:,.0f}", DASH if exp is None else f"{exp:.1f}"])
    t.notes.append("95% CI: family-cluster bootstrap. Extra tokens and extra schemas: what the fixed lane costs "
                   "per episode beyond the routed lane (tokens reported; schemas shown, summed over requests). "
                   "The routed lane narrows the menu to the operational tools after the first executed operational "
                   "call; it uses the ground truth, so it is a reference, not a repair a deployment could run.")
    return t


def failure_table(s: dict[str, Any]) -> TextTable | None:
    rows = s.get("failure_records") or []
    if not rows:
        return None
    t = TextTable("pressure_failures", "Pressures: failure records (first unmet obligation x terminal flag) per level",
                  ["pressure", "level", "obligation", "terminal flag", "failures", "of episodes"], "llllrr")
    for i, r in enumerate(rows):
        last = i == len(rows) - 1 or rows[i + 1]["axis"] != r["axis"]
        t.add([r["axis"], r["level"], r["obligation"], r["flag"], str(r["failures"]), str(r["episodes"])],
              end_section=last)
    return t


def checkpoint_table(s: dict[str, Any]) -> TextTable | None:
    cp = s.get("checkpoint")
    if not cp:
        return None
    t = TextTable("pressure_checkpoint", "Pressures: the W medium checkpoint at (V8, raw)",
                  ["lane", "units", "low", "medium", "high", "medium-low pp", "95% CI", "high-medium pp", "95% CI"],
                  "lrrrrrrrr")
    for lane, r in cp.items():
        ml, hm = r["medium_minus_low"], r["high_minus_medium"]
        t.add([lane, str(r["units"]), pct(r["success"]["low"]), pct(r["success"]["medium"]),
               pct(r["success"]["high"]), signed(ml["pp"]), ci_pp(ml["lo"], ml["hi"]), signed(hm["pp"]),
               ci_pp(hm["lo"], hm["hi"])])
    t.notes.append("Success at V8 with raw records for one, two and three cited records (the medium workflow is a "
                   "checkpoint cell, not a level of the factorial); units (model, family) holding all three; "
                   "family-cluster intervals. Exploratory, as seed 002's curvature.")
    return t


def tables(s: dict[str, Any]) -> list[TextTable]:
    out = [contrast_table(s, s["primary_lane"])]
    out += [contrast_table(s, lane) for lane in s["contrasts"] if lane != s["primary_lane"]]
    out += [t for t in (truncation_table(s), lanes_table(s), checkpoint_table(s), failure_table(s)) if t is not None]
    if s.get("arm_records_left_out"):
        out[0].notes.append(f"{s['arm_records_left_out']} record(s) of repair arms or raised caps are left out of "
                            "these tables (the frozen harness's); they report in the repairs section.")
    return out


def svg_stack(x: float, height: int, bar: int, total: int, segments: list[tuple[int, str, str]]) -> list[str]:
    """One stacked bar of a share plot, from the axis up: (count, colour, escaped title) per segment,
    each as tall as its share of `total`; empty segments draw nothing."""
    out, y = [], float(height)
    for k, colour, title in segments:
        if not k:
            continue
        h = height * k / max(1, total)
        y -= h
        out.append(f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{h:.1f}" fill="{colour}"><title>{title}</title>'
                   f'</rect>')
    return out


def svg_legend(width: int, items: list[tuple[str, str]]) -> list[str]:
    """The colour key in a share plot's right margin: (label, colour) per line."""
    return [f'<rect x="{width - 140}" y="{10 + 14 * i}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{width - 126}" y="{19 + 14 * i}" font-size="10">{escape(label)}</text>'
            for i, (label, colour) in enumerate(items)]


def failure_svg(s: dict[str, Any]) -> str:
    """Stacked bars: failed share of episodes per pressure level, split by terminal flag."""
    rows = s.get("failure_records") or []
    if not rows:
        return ""
    levels: dict[tuple[str, str], dict[str, int]] = {}
    totals: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["axis"], r["level"])
        levels.setdefault(key, {})
        levels[key][r["flag"]] = levels[key].get(r["flag"], 0) + r["failures"]
        totals[key] = r["episodes"]
    bar, gap, height, left = 26, 10, 140, 40
    width = left + len(levels) * (bar + gap) + 150
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 40}" role="img" '
             f'aria-label="failure records per pressure level">',
             f'<line x1="{left}" y1="{height}" x2="{width - 150}" y2="{height}" stroke="#333"/>',
             f'<text x="2" y="12" font-size="10">100%</text><text x="2" y="{height}" font-size="10">0%</text>']
    for n, (key, flags) in enumerate(levels.items()):
        x = left + n * (bar + gap)
        parts += svg_stack(x, height, bar, totals[key],
                           [(flags.get(f, 0), COLOURS[f], f"{escape(key[1])}: {flags.get(f, 0)} {escape(f)}")
                            for f in FLAGS])
        parts.append(f'<text x="{x}" y="{height + 14}" font-size="9">{escape(key[1])}</text>')
    parts += svg_legend(width, [(f, COLOURS[f]) for f in FLAGS[:-1]])
    parts.append("</svg>")
    return "".join(parts)


def section() -> ReportSection:
    """The controlled-pressure section: the contrasts of stats/pressure.py, these tables and the plot."""
    from ..stats import pressure as pstats

    return ReportSection("pressure", "Controlled pressures",
                         lambda recs, meta, reference, alpha, options: pstats.summarise(recs),
                         tables, failure_svg,
                         {"pressure_contrasts_routed": OPTIONAL, "pressure_contrasts_fixed": OPTIONAL},
                         frozenset({"pressure_failures"}))
