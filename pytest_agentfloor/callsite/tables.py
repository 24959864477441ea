"""Call-site report tables (text cells) and the acting-vs-refusing scatter, from a CallSiteSummary."""

from __future__ import annotations

from html import escape

from ..report.format import DASH, UNKNOWN, TextTable, ci_pct, pct, pval, tokens, usd
from ..report.sections import ReportSection
from ..render import safe_text
from .stats import CallSiteSummary

def seconds(x: float | None) -> str:
    return DASH if x is None else (f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s")


def accuracy_table(s: CallSiteSummary) -> TextTable:
    level = f"{100 * (1 - s.alpha):g}%"
    t = TextTable("callsite_accuracy", f"Call sites: accuracy per site and model with {level} Wilson CI",
                  ["site", "model", "cases", "passed", "accuracy", f"{level} CI", "infra", "mean tok in",
                   "sweep $", "spend share", "$/call", "latency/call"], "llrrrrrrrrrr")
    for site in s.sites:
        cells = [s.accuracy[site][m] for m in s.models if m in s.accuracy[site]]
        best = max((c.accuracy for c in cells if c.accuracy is not None), default=None)
        for i, c in enumerate(cells):
            cls = "best" if best is not None and c.accuracy == best else ""
            t.add([site, c.model, str(c.n_cases), f"{c.passed:g}", pct(c.accuracy), ci_pct(c.ci_low, c.ci_high),
                   str(c.n_infra), tokens(c.mean_tokens_in), usd(c.cost_usd, UNKNOWN if c.n_cases else DASH),
                   pct(c.spend_share), usd(c.cost_per_call, UNKNOWN if c.n_cases else DASH),
                   seconds(c.latency_s)],
                  ["", "", "", "", cls, "", "", "", "", "", "", ""], end_section=i == len(cells) - 1)
    t.notes.append("One pass per case is one unit; a case run several times counts once, with its mean score. "
                   "Spend share: the site's part of that model's cost for the whole sweep. $/call: the mean cost "
                   "of one case's call; latency/call: the median latency of one call.")
    if s.provisional:
        t.notes.append(f"{s.provisional} captured case(s) are provisional and not counted here (docs/capture.md, "
                       "'Review').")
    return t


def mcnemar_table(s: CallSiteSummary) -> TextTable | None:
    if s.reference is None:
        return None
    holm = s.verdict == "holm"
    t = TextTable("callsite_mcnemar", f"Call sites: McNemar against {s.reference} "
                  f"(verdict: {'Holm-adjusted' if holm else 'exact'} p)",
                  ["model", "site", "pairs", "only model", "only ref", "p (exact)", "p (Holm)", "differs"],
                  "llrrrrrl")
    for test in s.tests:
        t.add([test.model, test.site, str(test.n_pairs), str(test.only_model), str(test.only_reference),
               pval(test.p_value), pval(test.p_holm), "yes" if test.significant else "no"],
              [""] * 7 + ["no" if test.significant else "yes"])
    which = ("the Holm-adjusted p (Holm across the sites of each model)" if holm else
             "the exact p, unadjusted, as seed 001 reports it (--agentfloor-callsite-verdict holm: the Holm-adjusted p)")
    t.notes.append(f"Two-sided exact McNemar on the discordant pairs; p (Holm): adjusted across the sites of each "
                   f"model. 'differs' = {which} < {s.alpha:g}.")
    return t


def actuation_table(s: CallSiteSummary) -> TextTable | None:
    if not s.actuation:
        return None
    t = TextTable("callsite_actuation", "Actuator: acting versus refusing",
                  ["model", "actionable", "execution acc.", "exec CI", "impossible", "over-actuation", "over CI",
                   "substitutions", "hallucinated", "substitution share", "refused actionable"], "lrrrrrrrrrr")
    for a in s.actuation:
        t.add([a.model if a.site is None else f"{a.model} @ {a.site}", str(a.n_actionable), pct(a.execution_accuracy), ci_pct(*a.execution_ci), str(a.n_impossible),
               pct(a.over_actuation), ci_pct(*a.over_actuation_ci), str(a.substitutions), str(a.hallucinations),
               pct(a.substitution_share), str(a.refused_actionable)])
    t.notes.append("Execution accuracy on requests that should produce calls; over-actuation: share of impossible "
                   "requests that produced at least one call. Deployable is high execution with low over-actuation; "
                   "a model that never acts scores 0% over-actuation, so neither column is meaningful alone. "
                   "Substitution share: of the failed outputs that acted on a wrong device, those that chose a real "
                   "device of the site (not an invented id).")
    if any(a.site is not None for a in s.actuation):
        t.notes.append("MODEL @ SITE: a captured site that offers tools; actionable = the production reply called a "
                       "tool, impossible = it answered in text; execution accuracy = passed on the actionable "
                       "cases, over-actuation = called a tool where production answered.")
    return t


def routing_table(s: CallSiteSummary) -> TextTable:
    t = TextTable("callsite_routing", "Call sites: routing policies over hosted and local models",
                  ["policy", "routed acc.", "sweep $", "$/call", "saving", "note"], "lrrrrl")
    for r in s.routing:
        # no route (a site without records): a dash; a route through an unpriced model: unknown, never $0
        missing = UNKNOWN if r.accuracy is not None else DASH
        t.add([r.label or r.policy, pct(r.accuracy), usd(r.cost_usd, missing), usd(r.cost_per_call, missing),
               pct(r.saving),
               ("savings base" if r.base else "") + ("; " if r.base and r.note else "") + r.note])
    weights = ", ".join(f"{site} {100 * w:.0f}%" for site, w in s.weights.items())
    if s.weights_from == "captured call mix":
        weights += "; from the captured call mix: " + ", ".join(f"{k} {v} call(s)" for k, v in s.site_calls.items())
    elif s.weights_from == "cases":
        weights += "; each site's share of cases"
    base = next((r.label for r in s.routing if r.base), None)
    t.notes.append(f"Routed accuracy and $/call weight each site by its share of calls ({weights}); sweep $: "
                   "every case once. Saving: per call, against "
                   + (base if base else "no all-hosted route (no hosted model with records at every site)") + ". "
                   "Generation only: planner and codegen on the hosted model, every other site on its best "
                   "local model. Ties go to the smaller model, then the cheaper. Hosted or local: models.toml "
                   "'hosted', else inferred from provider and pricing (docs/callsite.md).")
    if any(r.policy == "matched_reference" for r in s.routing):
        t.notes.append(f"Cheapest matching the reference: each site on the cheapest model per call that the paired "
                       f"test does not find worse than {s.reference} and whose accuracy is within {s.margin_pp:g} "
                       "points of it (--agentfloor-margin); --agentfloor-routing-out writes it.")
    return t


def assignment_table(s: CallSiteSummary) -> TextTable:
    t = TextTable("callsite_assignment", "Call sites: which model each routing policy puts on each site",
                  # labels carry model names from stored records: no control character reaches a header
                  ["site", *[safe_text(r.label or r.policy, multiline=False) for r in s.routing]],
                  "l" * (1 + len(s.routing)))
    for site in s.sites:
        t.add([site, *[r.assignment.get(site) or DASH for r in s.routing]])
    return t


def group_table(s: CallSiteSummary) -> TextTable:
    t = TextTable("callsite_groups", "Call sites: accuracy by sub-group", ["site/group", *s.models],
                  "l" + "r" * len(s.models))
    for key, row in s.groups.items():
        t.add([key, *[pct(row.get(m), 0) for m in s.models]])
    return t


#: columns the terminal may drop, in this order, to fit its width (report files keep them all)
TERMINAL_OPTIONAL: dict[str, tuple[str, ...]] = {
    "callsite_accuracy": ("latency/call", "spend share", "mean tok in", "infra", "passed", "sweep $", "$/call"),
    "callsite_mcnemar": ("pairs", "only model", "only ref"),
    "callsite_actuation": ("refused actionable", "hallucinated", "substitutions", "exec CI", "over CI",
                           "actionable", "impossible"),
    "callsite_routing": ("note", "$/call", "saving", "sweep $"),
}


def tables(s: CallSiteSummary) -> list[TextTable]:
    out = [accuracy_table(s)]
    for t in (mcnemar_table(s), actuation_table(s)):
        if t is not None:
            out.append(t)
    out += [routing_table(s), assignment_table(s), group_table(s)]
    for w in s.warnings:
        out[0].notes.append(f"Warning: {w}")
    return out


def scatter_svg(s: CallSiteSummary) -> str:
    """Execution accuracy (x) against over-actuation rate (y), one point per model."""
    pts = [a for a in s.actuation if a.execution_accuracy is not None and a.over_actuation is not None]
    if not pts:
        return ""
    w, h, pad = 360, 260, 44
    px = lambda v: pad + v * (w - 2 * pad)  # noqa: E731
    py = lambda v: h - pad - v * (h - 2 * pad)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
           'role="img" aria-label="acting versus refusing">',
           f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>',
           f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle" font-size="11">execution accuracy (actionable)</text>',
           f'<text x="12" y="{h / 2}" text-anchor="middle" font-size="11" transform="rotate(-90 12 {h / 2})">'
           'over-actuation (impossible)</text>',
           f'<text x="{w - pad}" y="{h - pad - 4}" text-anchor="end" font-size="10" fill="#2a7">deployable</text>']
    for v in (0, 0.5, 1):
        out.append(f'<text x="{px(v):.1f}" y="{h - pad + 14}" text-anchor="middle" font-size="9">{v:.0%}</text>')
        out.append(f'<text x="{pad - 4}" y="{py(v) + 3:.1f}" text-anchor="end" font-size="9">{v:.0%}</text>')
    for a in pts:
        x, y = px(a.execution_accuracy), py(a.over_actuation)  # type: ignore[arg-type]
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="#36c"><title>{escape(a.model)}: execution '
                   f'{a.execution_accuracy:.0%}, over-actuation {a.over_actuation:.0%}</title></circle>')
        out.append(f'<text x="{x + 6:.1f}" y="{y - 6:.1f}" font-size="10">{escape(a.model)}</text>')
    out.append("</svg>")
    return "".join(out)


def section() -> ReportSection:
    """The call-site section: statistics from the call-site records, these tables and the scatter."""
    from . import routing, stats

    return ReportSection("callsite", "Call sites", lambda recs, meta, reference, alpha, options:
                         stats.summarise(recs, meta, reference=reference, alpha=alpha,
                                         weights=options.get("callsite_weights"),
                                         verdict=options.get("callsite_verdict") or "raw",
                                         margin_pp=float(options.get("margin_pp", 10.0))),
                         tables, scatter_svg, TERMINAL_OPTIONAL, frozenset({"callsite_groups"}),
                         export=routing.export, export_option="routing_out")
