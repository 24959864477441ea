"""The repair section's tables (text cells) and the frontier plot, from pressure.repairs.summary."""

from __future__ import annotations

from html import escape
from typing import Any

from ..report.format import DASH, TextTable, ci_pp, pct, pval, signed, usd
from ..report.sections import ReportSection
from .tables import svg_legend, svg_stack

ENDING_COLOURS = {"passed": "#27ae60", "token_budget": "#e67e22", "call_limit": "#d35400", "turn_budget": "#f1c40f",
                  "infeasible": "#8e44ad", "truncated": "#c0392b", "other": "#7f8c8d"}
#: columns the terminal drops first when narrow (report files show all)
OPTIONAL = ("clusters", "best other", "p IUT", "Delta CI", "Sigma CI", "Gamma CI", "L CI", "units")


def _est(e: dict[str, Any] | None) -> tuple[str, str]:
    if not e or e.get("pp") is None:
        return DASH, DASH
    return signed(e["pp"]), ci_pp(e.get("lo"), e.get("hi"))


def layer_table(s: dict[str, Any]) -> TextTable | None:
    rows = s.get("layers") or []
    if not rows:
        return None
    t = TextTable("repairs_layers", "Repairs: assigned loss, stress gain, selectivity and wrong-layer advantage",
                  ["layer", "repair", "units", "clusters", "L pp", "L CI", "Gamma pp", "Gamma CI", "Sigma pp",
                   "Sigma CI", "Delta pp", "Delta CI", "best other", "p IUT", "p Holm", "activates"],
                  "llrrrrrrrrrrlrrl")
    for i, r in enumerate(rows):
        cells = [r["layer"], r["repair"], str(r["L"]["units"]), str(r["L"]["clusters"])]
        for q in ("L", "gamma", "sigma", "delta"):
            cells += list(_est(r.get(q)))
        cells += [r.get("best_other") or DASH, pval(r.get("p_iut")), pval(r.get("p_holm")),
                  "yes" if r.get("active") else "no"]
        by = r.get("by_config") or {}
        t.add(cells, end_section=not by and i + 1 < len(rows) and rows[i + 1]["group"] != r["group"])
        for n, (config, b) in enumerate(by.items()):
            t.add(["", f"  {config}", str(b["units"]), ""] + [x for q in ("L", "gamma", "sigma") for x in _est(b[q])]
                  + [DASH, DASH, "", "", "", ""], end_section=n == len(by) - 1)
    t.notes.append("Per layer, a unit is (configuration, family, the other cell coordinates, the rest of the harness): "
                   "L = none(unstressed) - none(stressed), Gamma = repair - none under stress, Sigma = Gamma minus the "
                   "repair's gain without stress, Delta = Sigma minus the best other repair's Sigma on the same units "
                   "(all in pp). Stress: R and V: V 8 -> 128; W: low -> high; D: raw -> compact/typed/linked; "
                   "frontier: 2 -> 30 calls. Intervals: 95% family-cluster bootstrap, 10,000 draws.")
    t.notes.append("Indented rows: each configuration's own L, Gamma and Sigma on its units (no activation test: "
                   "the pooled row carries it).")
    t.notes.append("A repair activates when L, Gamma and Sigma are all > 0 (intersection-union test: its p is the "
                   "largest one-sided p, each the larger of the bootstrap's and an exact sign-flip test's over "
                   "families), Holm over R, V, W, D, and over the controller with its control (which also needs "
                   "Delta > 0). With C families no p goes below 2^-C: fewer than 7 families never activate a layer "
                   "among four.")
    return t


def switch_table(s: dict[str, Any]) -> TextTable | None:
    sw = s.get("switches")
    if not sw or not sw["rows"]:
        return None
    t = TextTable("repairs_switches", "Repairs versus configuration switches on the same stressed cells",
                  ["incumbent", "repair", "switch", "units", "success pp", "95% CI", "cost diff", "cost CI",
                   "switch dominates"], "lllrrrrrl")
    for i, r in enumerate(sw["rows"]):
        for j, v in enumerate(r["versus"]):
            cost = DASH if v["cost_diff"] is None else usd(v["cost_diff"]) if v["cost_diff"] >= 0 \
                else "-" + usd(-v["cost_diff"])
            cost_ci = "unknown" if not v["cost_known"] else (
                f"[{'-' if v['cost_lo'] < 0 else ''}{usd(abs(v['cost_lo']))}, "
                f"{'-' if v['cost_hi'] < 0 else ''}{usd(abs(v['cost_hi']))}]")
            t.add([r["incumbent"] if j == 0 else "", r["repair"] if j == 0 else "", v["switch"], str(v["units"]),
                   signed(v["success_pp"]), ci_pp(v["success_lo"], v["success_hi"]), cost, cost_ci,
                   "yes" if v["dominates"] else "no"], end_section=j == len(r["versus"]) - 1)
    for name, c in sorted(sw["counts"].items()):
        t.notes.append(f"{name}: success-superior {c['success_superior']}, nondominated {c['nondominated']}, "
                       f"cost-superior {c['cost_superior']} of {c['of']} incumbent(s).")
    t.notes.append("Paired on (family, cell); the repair runs on its stressed cells, each switch with the plain harness. "
                   "Superior: the 95% family-cluster interval against every switch lies above zero (success) or "
                   "below zero (cost), and an exact sign-flip test over families agrees (fewer than six families "
                   "never certify). Dominance: point estimates of success, tokens, wall time and cost (without cost "
                   "where a cost is unknown).")
    return t


def repeat_table(s: dict[str, Any]) -> TextTable | None:
    rep = s.get("repeats")
    if not rep:
        return None
    t = TextTable("repairs_repeats", "Sentinel repeats: run-to-run agreement per arm",
                  ["arm", "groups", "runs", "pass@1", "all runs", "any run", "disagreement", "incomplete"], "lrrrrrrr")
    for r in rep["rows"]:
        t.add([r["arm"], str(r["groups"]), str(r["runs"]), pct(r["pass_at_1"]), pct(r["all_runs"]),
               pct(r["any_run"]), pct(r["disagreement"]), str(r["incomplete"])])
    for g in rep["gains"]:
        t.notes.append(f"repeated gain of {g['repair']} on its stressed cells: {signed(g['pp'])} pp "
                       f"{ci_pp(g['lo'], g['hi'])} over {g['units']} unit(s).")
    t.notes.append("A group is one (configuration, arm, family, cell) run that many times; groups with another "
                   "number of runs are counted as incomplete and left out. Disagreement = any run - all runs.")
    return t


def policy_table(s: dict[str, Any]) -> TextTable | None:
    rows = s.get("policy")
    if not rows:
        return None
    t = TextTable("repairs_policy", "Probe, then act only after a failed probe",
                  ["incumbent", "action", "blocks", "probe failed", "recovered", "policy success",
                   "tokens/1000 (probe charged)", "USD/1000 (probe charged)", "USD/1000 (no probe)"], "llrrrrrrr")
    for i, r in enumerate(rows):
        first = i == 0 or rows[i - 1]["incumbent"] != r["incumbent"]
        rec = f"{r['recovered']} ({pct(r['recovered_share'])})" if r["recovered_share"] is not None else DASH
        t.add([r["incumbent"] if first else "", r["action"], str(r["blocks"]), str(r["probe_failed"]), rec,
               pct(r["policy_success"]), f"{r['tokens_per_1000_with_probe']:,.0f}",
               usd(r["usd_per_1000_with_probe"], "unknown"), usd(r["usd_per_1000_without_probe"], "unknown")],
              end_section=i + 1 < len(rows) and rows[i + 1]["incumbent"] != r["incumbent"])
    t.notes.append("A block is (configuration, family, cell); the probe is its plain run 0; 'retry' its run 1; an arm "
                   "its run 0 of that arm; 'switch to X' configuration X's plain run 0. Recovered: successes among the "
                   "blocks whose probe failed. Costs per 1,000 conditions charge the probe and the action where the "
                   "probe failed.")
    return t


def sweep_table(s: dict[str, Any]) -> TextTable | None:
    sw = s.get("cap_sweep")
    if not sw:
        return None
    t = TextTable("repairs_cap_sweep", "Cap sweep: the menu contrast at the frozen cap and at capN",
                  ["configuration", "lane", "stratum", "trunc V128 low", "trunc V128 high", "check", "contrast low",
                   "CI", "contrast high", "CI", "interaction", "CI", "clears 5 pp"], "lllrrlrrrrrrl")

    def cells(r: dict[str, Any]) -> list[str]:
        return [signed(r["low"]["pp"]), ci_pp(r["low"]["lo"], r["low"]["hi"]), signed(r["high"]["pp"]),
                ci_pp(r["high"]["lo"], r["high"]["hi"]), signed(r["interaction"]["pp"]),
                ci_pp(r["interaction"]["lo"], r["interaction"]["hi"]),
                "yes" if r["interaction"].get("clears_margin") else "no"]
    for r in sw["rows"]:
        label = r["config"] + ("" if r["arm"] == "none" else f" ({r['arm']})") + f" x{r['scale']}"
        t.add([label, r["lane"], r["stratum"], pct(r["truncated_low"]), pct(r["truncated_high"]),
               "pass" if r["check"] else "fail", *cells(r)], end_section=False)
    if sw["strata"]:
        t.sections.append(len(t.rows) - 1)
    for st in sw["strata"]:
        t.add([f"stratum {st['stratum']} pooled ({st['configs']})", "", st["stratum"], "", "", "", *cells(st)])
    t.notes.append(f"Strata by the low-cap V=128 truncation share: B >= 20%, M 5-20%, N none ('-': between 0 and 5%). "
                   f"Check: at most {pct(sw['check_ceiling'], 0)} still truncated at V=128 at the high cap; stratum B "
                   "pools only configurations that pass it. Contrast: V 128 - 8 paired within (family, W, D) over the "
                   "endpoint W x D cells; interaction: high-cap minus low-cap contrast; 95% family-cluster intervals. "
                   f"Clears the pre-specified {sw['margin_pp']:g} pp margin: lower bound above it and an exact "
                   "sign-flip test over families at 2.5% (impossible with fewer than six families).")
    return t


def frontier_table(s: dict[str, Any]) -> TextTable | None:
    fr = s.get("frontier")
    if not fr:
        return None
    t = TextTable("repairs_frontier", "Workflow frontier: success and the limit that fired, by chain length",
                  ["configuration", "arm", "calls", "episodes", "success", "change from 2", "CI", "ended by",
                   "median calls", "median requests", "median tokens"], "llrrrrrlrrr")
    rows = fr["rows"]
    for i, r in enumerate(rows):
        ch = r.get("change_from_2") or {}
        ends = ", ".join(f"{k} {v}" for k, v in r["endings"].items() if v)
        t.add([r["config"], r["arm"], str(r["calls"]), str(r["episodes"]), pct(r["success"]),
               signed(ch.get("pp")) if ch else DASH, ci_pp(ch.get("lo"), ch.get("hi")) if ch else DASH, ends,
               f"{r['median_calls']:g}", f"{r['median_requests']:g}", f"{r['median_tokens']:,.0f}"],
              end_section=i + 1 < len(rows) and (rows[i + 1]["config"], rows[i + 1]["arm"]) != (r["config"], r["arm"]))
    t.notes.append("Ended by: passed, or the termination of each failed episode (token_budget: the 128,000-token "
                   "episode budget; call_limit, turn_budget, infeasible, truncated at the completion cap, other). "
                   "Calls count the model's and the public-handoff controller's; requests are model requests. "
                   "Change from 2: paired within family, 95% family-cluster interval.")
    return t


def tables(s: dict[str, Any]) -> list[TextTable]:
    return [t for t in (layer_table(s), switch_table(s), sweep_table(s), repeat_table(s), policy_table(s),
                        frontier_table(s)) if t is not None]


def frontier_svg(s: dict[str, Any]) -> str:
    """Figure 9's reading: for each configuration and arm, how the episodes of 2, 6, 14 and 30 calls
    ended, as stacked bars of shares (passed, then each limit that fired)."""
    fr = s.get("frontier")
    if not fr:
        return ""
    rows = fr["rows"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["config"], r["arm"]), []).append(r)
    bar, gap, group_gap, height, left = 22, 6, 26, 140, 40
    width = left + sum(len(g) * (bar + gap) + group_gap for g in groups.values()) + 150
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 56}" role="img" '
             f'aria-label="how frontier episodes ended, by chain length">',
             f'<line x1="{left}" y1="{height}" x2="{width - 150}" y2="{height}" stroke="#333"/>',
             f'<text x="2" y="12" font-size="10">100%</text><text x="2" y="{height}" font-size="10">0%</text>']
    x = left
    for (config, arm), rs in groups.items():
        x0 = x
        for r in rs:
            parts += svg_stack(x, height, bar, r["episodes"], [
                (r["endings"].get(e, 0), ENDING_COLOURS[e],
                 f'{escape(config)} {escape(arm)}, {r["calls"]} calls: {r["endings"].get(e, 0)} {escape(e)}')
                for e in fr["endings"]])
            parts.append(f'<text x="{x}" y="{height + 13}" font-size="9">{r["calls"]}</text>')
            x += bar + gap
        parts.append(f'<text x="{x0}" y="{height + 28}" font-size="9">{escape(config)}</text>'
                     f'<text x="{x0}" y="{height + 40}" font-size="9">{escape(arm)}</text>')
        x += group_gap
    parts += svg_legend(width, [(e, ENDING_COLOURS[e]) for e in fr["endings"]])
    parts.append("</svg>")
    return "".join(parts)


def section() -> ReportSection:
    """Repairs, switches, repeats, the cap sweep and the frontier (pressure.repairs.summary)."""
    from .repairs.summary import summarise

    return ReportSection("pressure_repairs", "Repairs, switches, the cap sweep and the workflow frontier",
                         lambda recs, meta, reference, alpha, options: summarise(recs),
                         tables, frontier_svg, {"repairs_layers": OPTIONAL},
                         frozenset({"repairs_switches", "repairs_policy", "repairs_frontier", "repairs_cap_sweep"}))
