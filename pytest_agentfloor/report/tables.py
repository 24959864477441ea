"""The ladder's tables and captions, built from a Summary: the same cells for report.md, report.html
and the terminal, so the three always say the same thing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..grading.failure import FAILURE_MODES, FAILURE_NAMES
from ..grading.obligations import NAMES as OBLIGATION_NAMES
from ..grading.obligations import ORDER as OBLIGATION_ORDER
from ..stats import OVERALL, Summary
from .format import (DASH, UNKNOWN, UNRELIABLE, TextTable, ci_pct, ci_pp, params, pct, pct_num, pricing_text, pval,
                     secs, signed, tcr_class, tokens, usd, verdict)


def scope_label(scope: str) -> str:
    return "all" if scope == OVERALL else scope


TERMINAL_FLAG_SHORT: dict[str, str] = {
    "truncation": "trunc", "budget": "budget", "turn_limit": "turns", "infeasible": "infeas",
    "wrong_conclusion": "wrong", "other": "other", "none": "none",
}
#: what each terminal flag's column means (the legend names every flag a table shows)
TERMINAL_FLAG_MEANING: dict[str, str] = {
    "truncation": "output truncated", "budget": "token or call budget", "context_limit": "context window full",
    "turn_limit": "turn limit", "infeasible": "declared infeasible", "wrong_conclusion": "ended on a wrong conclusion",
    "other": "none of these (the outcome was right but another obligation failed, or the episode ended another way)",
    "none": "no flag",
}


def interval_caption(summary: Summary) -> str:
    """How every interval in the report was computed (printed under each table that shows one)."""
    c = summary.config
    level = f"{100 * c['ci_level']:g}%"
    if c.get("interval_method", "guarded") == "paper":
        how = (f"{level} CIs: plain percentile bootstrap as in the AgentFloor paper (--interval-method paper; "
               "it can be zero-width on small samples)")
    else:
        how = (f"{level} CIs: guarded (never narrower than the Wilson score interval for a TCR or Tango's score "
               "interval for a paired Δ; hull with the percentile bootstrap)")
    return (f"{how}; {c['n_boot']} resamples, seed {c['seed']}, resampling {c['resampling_unit']} units.")


def decision_caption(summary: Summary) -> str:
    c = summary.config
    if c.get("decision_bound", "two-sided") == "one-sided":
        return ("Non-inferior: the one-sided 95% bound (90% CI low end) is above −margin; equivalent (TOST): "
                "the 90% CI lies within ±margin.")
    return ("Non-inferior: the 95% CI's low end is above −margin (Table 1's reading); equivalent: the 95% CI "
            "lies within ±margin.")


# -- shared tables ----------------------------------------------------------------------------
def config_line(summary: Summary) -> str:
    c = summary.config
    unit = c["resampling_unit"]
    infra = "infra errors count as failures" if c["infra_as_failure"] else "infra errors excluded from TCR"
    ref = f"reference {c['reference']}, margin ±{c['margin_pp']:g} pp" if c["reference"] else "no reference model"
    method = c.get("interval_method", "guarded")
    return (f"{summary.n_records} run records · {len(summary.model_order)} model(s) · "
            f"tiers {', '.join(s for s in summary.scopes if s != OVERALL) or DASH} · {ref} · "
            f"{c['n_boot']} bootstrap resamples (seed {c['seed']}) over {unit} units · "
            f"{method} intervals · {infra}")


def judge_line(summary: Summary) -> str:
    """One line: who decided the semantic checks, the judge's cache use, cost and latency."""
    j = summary.judge.get(OVERALL)
    if j is None or not (j.judge_verdicts or j.keyword_verdicts or j.judge_errors):
        return "semantic checks: none in these runs"
    who = f"judge {', '.join(j.judges)}" if j.judges else "judge"
    parts = [f"semantic checks: {j.judge_verdicts} verdict(s) by the {who}, "
             f"{j.keyword_verdicts} by the keyword stand-in"]
    if j.judge_verdicts or j.judge_errors:
        parts.append(f"judge cache {j.cache_hits} hit(s), {j.judge_requests} request(s) "
                     f"(hit rate {pct(j.hit_rate, 0)})")
        parts.append(f"judge cost {usd(j.judge_cost_usd, UNKNOWN)}, latency {secs(j.judge_latency_s)} "
                     "(apart from the judged models')")
        parts.append(f"{j.judge_errors} judge error(s) (infrastructure)")
    return " · ".join(parts)


def judge_table(summary: Summary) -> TextTable:
    """Per judged model: semantic verdicts by source, judge failures and errors, cache, cost."""
    t = TextTable("judge", "Semantic checks: judge and keyword verdicts",
                  ["model", "judge", "by judge", "judge fail", "by keyword", "judge errors", "cache hits",
                   "requests", "hit rate", "judge $", "judge s"], "llrrrrrrrrr")
    for m in [*summary.model_order, OVERALL]:
        j = summary.judge.get(m)
        if j is None:
            continue
        t.add([m if m != OVERALL else "all", ", ".join(j.judges) or DASH, str(j.judge_verdicts),
               str(j.judge_fails), str(j.keyword_verdicts), str(j.judge_errors), str(j.cache_hits),
               str(j.judge_requests), pct(j.hit_rate, 0), usd(j.judge_cost_usd, UNKNOWN), secs(j.judge_latency_s)],
              end_section=m == summary.model_order[-1] if summary.model_order else False)
    t.notes.append("A semantic check is decided once per predicate and item: by the judge under --agentfloor-judge, else by "
                   "its keyword rules. Judge cost and latency are the judge's own, not part of the models' cost.")
    return t


def models_table(summary: Summary, meta: Mapping[str, Mapping[str, Any]]) -> TextTable:
    t = TextTable("models", "Models", ["model", "params", "provider", "pricing", "records", "infra errors"], "llllrr")
    for m in summary.model_order:
        info = summary.models[m]
        mm = meta.get(m) or {}
        t.add([m + (" (reference)" if info.is_reference else ""), params(info.params_b), mm.get("provider") or DASH,
               pricing_text(mm), str(info.n_records), str(info.n_infra)])
    t.notes.append("Models are listed smallest first (params); models without a size come last.")
    return t


def tcr_long_table(summary: Summary) -> TextTable:
    """Long form: one row per model x scope (the terminal's main table)."""
    t = TextTable("tcr", "AgentFloor: task completion by model and tier",
                  ["model", "tier", "runs", "passed", "TCR", "95% CI", "infra", "TCR infra=fail", "endpoint"],
                  "llrrrrrrl")
    for m in summary.model_order:
        for sc in summary.scopes:
            e = summary.tcr[m][sc]
            t.add([m, scope_label(sc), str(e.n_runs), str(e.n_passed), pct(e.tcr), ci_pct(e.ci_low, e.ci_high),
                   str(e.n_infra), pct(e.tcr_infra_as_failure) if e.n_infra else "",
                   UNRELIABLE if e.unreliable else ""],
                  ["", "", "", "", tcr_class(e.tcr), "", "infra" if e.n_infra else "", "", "bad" if e.unreliable else ""],
                  end_section=sc == OVERALL)
    t.notes.append(interval_caption(summary))
    return t


def tcr_matrix_table(summary: Summary) -> TextTable:
    """Model x tier matrix: ``TCR% [low, high]``; the best TCR of each tier is marked ``best``."""
    scopes = list(summary.scopes)
    t = TextTable("tcr_matrix", "Task completion rate with 95% CI",
                  ["model", "params", *[scope_label(s) for s in scopes]], "ll" + "r" * len(scopes))
    best = {sc: max((e.tcr for e in (summary.tcr[m][sc] for m in summary.model_order)
                     if e.tcr is not None and not e.unreliable), default=None) for sc in scopes}
    flagged = False
    for m in summary.model_order:
        cells, cls = [m, params(summary.models[m].params_b)], ["", ""]
        for sc in scopes:
            e = summary.tcr[m][sc]
            text = DASH if e.tcr is None else f"{pct_num(e.tcr)} {ci_pct(e.ci_low, e.ci_high)}"
            if e.unreliable:
                flagged = True
                text += f" ⚠ {UNRELIABLE} ({pct_num(e.tcr_infra_as_failure)} with infra as failures)"
            cells.append(text)
            cls.append(tcr_class(e.tcr) + (" best" if e.tcr is not None and not e.unreliable and e.tcr == best[sc]
                                           else ""))
        t.add(cells, cls)
    t.notes.append("Cells: TCR % [95% CI]. Best TCR per tier in bold. Runs per cell are in tcr.csv. "
                   + interval_caption(summary))
    if flagged:
        t.notes.append(f"⚠ {UNRELIABLE}: more than {100 * summary.config.get('infra_threshold', 0.05):g}% of the "
                       "cell's runs ended in an infrastructure error; the cell is never 'best' and the model is kept "
                       "out of the Pareto front and the recipes for it.")
    return t


def paired_table(summary: Summary) -> TextTable | None:
    p = summary.paired
    if not p.available:
        return None
    t = TextTable(
        "paired", f"Paired comparison against {p.reference} (margin ±{p.margin_pp:g} pp, Holm-adjusted)",
        ["model", "tier", "pairs", "model TCR", "ref TCR", "Δ pp", "95% CI", "90% CI", "non-inf", "equiv",
         "b/c", "p", "p Holm"], "llrrrrrrccrrr")
    unpaired = 0
    for m in summary.model_order:
        if m not in p.tests:
            continue
        scopes = [sc for sc in summary.scopes if sc in p.tests[m]]
        for i, sc in enumerate(scopes):
            x = p.tests[m][sc]
            last = i == len(scopes) - 1
            unpaired += x.n_unpaired_model + x.n_unpaired_ref if sc == OVERALL else 0
            if x.n_pairs == 0:
                t.add([m, scope_label(sc), "0", *[DASH] * 10], [""] * 2 + ["na"] * 11, end_section=last)
                continue
            few = x.n_pairs < x.n_min_pairs
            ni, ni_c = verdict(x.noninferior, x.noninferior_holm, x.noninferiority_verdict, few)
            eq, eq_c = verdict(x.equivalent, x.equivalent_holm, x.equivalence_verdict, few)
            d_c = "" if x.delta_pp is None or x.delta_pp == 0 else ("up" if x.delta_pp > 0 else "down")
            p_c = "sig" if x.p_mcnemar_holm is not None and x.p_mcnemar_holm < p.alpha else ""
            t.add([m, scope_label(sc), str(x.n_pairs), pct(x.tcr_model), pct(x.tcr_ref), signed(x.delta_pp),
                   ci_pp(x.ci95_low_pp, x.ci95_high_pp), ci_pp(x.ci90_low_pp, x.ci90_high_pp), ni, eq,
                   f"{x.mcnemar_b}/{x.mcnemar_c}", pval(x.p_mcnemar), pval(x.p_mcnemar_holm)],
                  ["", "", "", "", "", d_c, "", "", ni_c, eq_c, "", "", p_c], end_section=last)
    t.notes.append(
        f"Δ = TCR(model) − TCR({p.reference}) over runs paired on (task, variant, instance, run). "
        + decision_caption(summary) + f" Margin ±{p.margin_pp:g} pp. " + interval_caption(summary) + " "
        "no = refuted: the decision interval excludes the claim (unadjusted). Insufficient evidence: too few = "
        f"fewer than {p.n_min_pairs} pairs, too few for any result to certify the margin; unclear = the interval "
        "straddles the margin (more runs would decide it). "
        "yes = holds after Holm adjustment across the family (all model × tier tests, or all overall tests); "
        "yes† = holds unadjusted only. b/c: McNemar's discordant pairs, where only the model / only the "
        "reference passed; p: exact two-sided McNemar test, p Holm: Holm-adjusted in the same family.")
    if unpaired:
        t.notes.append(f"{unpaired} scored run(s) had no counterpart on the other side and are not in the pairs.")
    return t


def paired_undecided(summary: Summary) -> str | None:
    """When paired non-inferiority claims are undecided (intervals too wide): how many, and the runs
    the widest-off one would need at its observed rates (None when every claim is decided)."""
    from ..stats.paired import decision_tail, pairs_to_decide

    p = summary.paired
    if not p.available:
        return None
    tests = [t for by in p.tests.values() for sc, t in by.items() if sc != OVERALL and t.n_pairs]
    open_ = [t for t in tests if t.noninferiority_verdict == "insufficient evidence"]
    if not open_:
        return None
    tail = decision_tail(p.alpha, p.decision)
    need = [(pairs_to_decide(t, p.margin_pp, tail, p.decision), t) for t in open_]
    known = [(n, t) for n, t in need if n is not None]
    text = (f"Paired: {len(open_)} of {len(tests)} tier non-inferiority claims are insufficient evidence "
            f"(intervals too wide to decide at ±{p.margin_pp:g} pp).")
    if known:
        n, t = max(known, key=lambda x: x[0])
        text += (f" The most demanding, {t.model} on tier {scope_label(t.scope)} (Δ {signed(t.delta_pp)} pp, "
                 f"{t.n_pairs} pairs), would need about {n:,} pairs at its observed rates: "
                 f"{-(-n // t.n_pairs)}× this session's runs.")
    return text


def failure_modes_present(summary: Summary) -> list[str]:
    """FAILURE_MODES in cascade order, plus any other label with a count (e.g. ``none``)."""
    extra: set[str] = set()
    for m in summary.model_order:
        for b in summary.breakdown[m].values():
            extra |= {k for k, v in b.failure_mode.items() if v and k not in FAILURE_MODES}
    return [*FAILURE_MODES, *sorted(extra)]


def failure_table(summary: Summary) -> TextTable:
    """Failure-mode counts per model x scope (failed runs only, scopes without failures left out)."""
    modes = failure_modes_present(summary)
    t = TextTable("failures", "AgentFloor: failure modes (model failures; infra errors excluded)",
                  ["model", "tier", "failed", *modes], "llr" + "r" * len(modes))
    for m in summary.model_order:
        scopes = [sc for sc in summary.scopes if summary.breakdown[m][sc].n_failed]
        for i, sc in enumerate(scopes):
            b = summary.breakdown[m][sc]
            t.add([m, scope_label(sc), str(b.n_failed), *[str(b.failure_mode.get(k, 0) or "") for k in modes]],
                  end_section=i == len(scopes) - 1)
    t.notes.append("Failure mode of a failed run, the first of this cascade that applies: " + "; ".join(
        f"{k} {FAILURE_NAMES[k]}" for k in FAILURE_MODES) + ".")
    return t


def _labels_used(summary: Summary, attr: str, order: Iterable[str]) -> list[str]:
    used: set[str] = set()
    for m in summary.model_order:
        for b in summary.breakdown[m].values():
            used |= {k for k, v in getattr(b, attr).items() if v}
    order = list(order)
    return [k for k in order if k in used] + sorted(used - set(order))


def unmet_table(summary: Summary) -> TextTable:
    """First unmet obligation and terminal flag counts per model x scope (labels that occur only)."""
    obls = _labels_used(summary, "first_unmet", OBLIGATION_ORDER)
    flags = _labels_used(summary, "terminal_flag", TERMINAL_FLAG_SHORT)
    t = TextTable("unmet", "AgentFloor: first unmet obligation and terminal flag (failed runs)",
                  ["model", "tier", "failed", *[f"{k}" for k in obls], *[TERMINAL_FLAG_SHORT.get(k, k) for k in flags]],
                  "llr" + "r" * (len(obls) + len(flags)))
    for m in summary.model_order:
        scopes = [sc for sc in summary.scopes if summary.breakdown[m][sc].n_failed]
        for i, sc in enumerate(scopes):
            b = summary.breakdown[m][sc]
            t.add([m, scope_label(sc), str(b.n_failed), *[str(b.first_unmet.get(k, 0) or "") for k in obls],
                   *[str(b.terminal_flag.get(k, 0) or "") for k in flags]], end_section=i == len(scopes) - 1)
    if obls:
        t.notes.append("First obligation of the case that the run did not meet: " + "; ".join(
            f"{k} {OBLIGATION_NAMES.get(k, 'no obligation named' if k == 'none' else k)}" for k in obls) + ".")
    if flags:
        t.notes.append("Then how the episode ended: " + ", ".join(
            f"{TERMINAL_FLAG_SHORT.get(k, k)} = {TERMINAL_FLAG_MEANING.get(k, k.replace('_', ' '))}" for k in flags)
            + ".")
    return t


def cost_table(summary: Summary, scope: str = OVERALL) -> TextTable:
    front = set(summary.pareto.get(scope, []))
    t = TextTable("cost", f"Cost and latency ({'all tiers' if scope == OVERALL else 'tier ' + scope})",
                  ["model", "params", "TCR", "$/run self-hosted", "$/pass self-hosted", "$/run cloud GPU",
                   "$/pass cloud GPU", "wall/run", "wall/pass", "model s/run", "model s/pass", "tokens/run",
                   "infra $", "Pareto"], "llrrrrrrrrrrrc")
    for m in summary.model_order:
        c = summary.cost[m][scope]
        unreliable = summary.tcr[m][scope].unreliable
        t.add([m, params(summary.models[m].params_b), pct(c.tcr), usd(c.cost_per_run, UNKNOWN),
               usd(c.cost_per_pass, UNKNOWN if c.n_passed else DASH), usd(c.cloud_cost_per_run, UNKNOWN),
               usd(c.cloud_cost_per_pass, UNKNOWN if c.n_passed else DASH),
               secs(c.mean_wall_s), secs(c.wall_per_pass), secs(c.mean_latency_s), secs(c.latency_per_pass),
               f"{tokens(c.mean_tokens_in)} / {tokens(c.mean_tokens_out)}",
               usd(c.infra_cost_usd, UNKNOWN) if c.n_infra else DASH,
               "✓" if m in front else (UNRELIABLE if unreliable else "")],
              ["", "", tcr_class(c.tcr), "", "", "", "", "", "", "", "", "", "",
               "yes" if m in front else ("bad" if unreliable else "")])
    t.notes.append("Cost is charged on the time the model was busy serving the run (model s), so it does not depend "
                   "on how many items ran in parallel. self-hosted: the model's hourly price, or $0.50/h for a model "
                   "with a known size; cloud GPU: $0.50 / $1.50 / $2.50 per hour for ≤ 4 B / 7–14 B / ≥ 20 B "
                   "parameters (sizes between tiers go up a tier); a model priced per token costs its token bill in "
                   "both. unknown: no price and no size, never $0. The Pareto front uses the self-hosted figure.")
    t.notes.append("Per run: mean over scored runs; per pass: per run / TCR. wall = episode wall-clock, model s = "
                   "time waiting on the model, tokens = mean input / output tokens. infra $: spent on infra-error "
                   "runs, not charged to the model. Pareto: not beaten on both cost per run and TCR by another "
                   f"model; models without a known cost and {UNRELIABLE}s are left out.")
    return t


def cost_by_tier_table(summary: Summary) -> TextTable:
    scopes = list(summary.scopes)
    t = TextTable("cost_tier", "Cost per passed task by tier (self-hosted)",
                  ["model", *[scope_label(s) for s in scopes]], "l" + "r" * len(scopes))
    for m in summary.model_order:
        t.add([m, *[usd(summary.cost[m][sc].cost_per_pass, UNKNOWN if summary.cost[m][sc].n_passed else DASH)
                    for sc in scopes]])
    t.notes.append("— = no passed run in the cell; unknown = no price and no size.")
    return t


def recipes_table(summary: Summary) -> TextTable:
    targets = [str(int(x)) if float(x).is_integer() else repr(float(x)) for x in summary.config["targets_pct"]]
    t = TextTable("recipes", "Deployment recipes: smallest model whose 95% CI lower bound clears τ",
                  ["tier", *[f"τ {k}%" for k in targets], "cost/pass", "wall/pass"], "l" + "l" * len(targets) + "rr")
    for tier, by_target in summary.recipes.items():
        cells, cls = [tier], [""]
        best = None
        for k in targets:
            r = by_target.get(k)
            if r is None or r.model is None:
                cells.append(DASH if r is None else "none" if r.outcome == "refuted" else "unclear")
                cls.append("no" if r is not None and r.outcome == "refuted" else "na")
                continue
            cells.append(f"{r.model} (≥{pct_num(r.ci_low)}%)")
            cls.append("yes")
            best = best or r
        cells += [usd(best.cost_per_pass, UNKNOWN) if best else DASH, secs(best.wall_per_pass) if best else DASH]
        cls += ["", ""]
        t.add(cells, cls)
    t.notes.append("A model qualifies only if its 95% CI lower bound on the tier's TCR (in brackets) is at least "
                   "τ: the data must rule out a true TCR below the target. Size order is params ascending; "
                   "cost (self-hosted) and wall per pass are those of the model named at the lowest τ. "
                   f"A model flagged {UNRELIABLE} on a tier is not recommended for it. none = refuted: every model's "
                   "interval lies below τ; unclear = insufficient evidence: some model's interval straddles τ. "
                   + interval_caption(summary))
    why = recipes_note(summary)
    if why:
        t.notes.append(why)
    return t


def recipes_note(summary: Summary) -> str | None:
    """Why recipe cells are empty, and what would fill one (None when every cell names a model)."""
    from ..stats.recipes import runs_for_lower_bound

    cells = [r for by in summary.recipes.values() for r in by.values()]
    empty = [r for r in cells if r.model is None]
    if not empty:
        return None
    open_ = [r for r in empty if r.outcome == "insufficient evidence"]
    head = "The recipe table is empty: " if len(empty) == len(cells) else f"{len(empty)} of {len(cells)} recipe cells are empty: "
    text = (head + f"{len(empty) - len(open_)} refuted (every model's 95% CI lies below τ), {len(open_)} insufficient "
            "evidence (an interval straddles τ: too wide to decide).")
    for r in open_:  # the first undecided cell whose best model could be certified with more runs
        best = max(r.undecided, key=lambda m: summary.tcr[m][r.tier].tcr or 0.0)
        e = summary.tcr[best][r.tier]
        need = runs_for_lower_bound(e.tcr or 0.0, r.target_pct)
        if need is None or e.ci_low is None or e.ci_high is None:
            continue
        text += (f" E.g. tier {r.tier}, τ {r.target_pct:g}%: {best} has TCR {pct_num(e.tcr)}% "
                 f"[{pct_num(e.ci_low)}, {pct_num(e.ci_high)}] from {e.n_runs} runs; at that TCR its lower bound "
                 f"reaches τ from about {need} runs (Wilson's; the guarded interval may need more), "
                 f"{-(-need // max(e.n_runs, 1))}× the runs of this session.")
        break
    return text


def reliability_table(summary: Summary) -> TextTable | None:
    k_max = max((c.max_runs for m in summary.model_order for c in summary.reliability[m].values()), default=0)
    if k_max < 2:
        return None
    scopes = list(summary.scopes)
    t = TextTable("reliability", f"Reliability over repeated runs: pass^k (all k runs pass), k = 1..{k_max}",
                  ["model", "tier", "items", *[f"k={k}" for k in range(1, k_max + 1)], f"pass@{k_max}"],
                  "llr" + "r" * (k_max + 1))
    for m in summary.model_order:
        for sc in scopes:
            c = summary.reliability[m][sc]
            pts = {p.k: p for p in c.points}
            hat = [pct(pts[k].pass_hat_k) if k in pts else DASH for k in range(1, k_max + 1)]
            at = pct(pts[k_max].pass_at_k) if k_max in pts else DASH
            t.add([m, scope_label(sc), str(c.n_items), *hat, at], end_section=sc == OVERALL)
    t.notes.append("An item is a (task, variant, instance); its runs are repeats. pass^k: chance that k runs "
                   "drawn from an item all pass; pass@k: that at least one does (unbiased estimators).")
    return t


def pareto_lines(summary: Summary) -> list[str]:
    out = []
    for sc in summary.scopes:
        front = summary.pareto.get(sc) or []
        out.append(f"{scope_label(sc)}: {' → '.join(front) if front else DASH}")
    return out


def diagnostics_table(summary: Summary) -> TextTable | None:
    """Per model x tier diagnostic rates (malformed = the paper's SDR), from the per-run call counts."""
    diag = summary.diagnostics or {}
    if not any(d.n_calls or d.mean_turns for by in diag.values() for d in by.values()):
        return None
    t = TextTable("diagnostics", "Diagnostics: how the models called tools",
                  ["model", "tier", "runs", "malformed", "hallucinated", "leaked text", "repeated", "calls/run",
                   "turns/run"], "llrrrrrrr")
    for m in summary.model_order:
        for sc in summary.scopes:
            d = diag[m][sc]
            t.add([m, scope_label(sc), str(d.n_runs - d.n_runs_missing), pct(d.malformed_rate),
                   pct(d.hallucinated_rate), pct(d.leaked_rate), pct(d.repeated_rate),
                   DASH if d.mean_calls is None else f"{d.mean_calls:.1f}",
                   DASH if d.mean_turns is None else f"{d.mean_turns:.1f}"], end_section=sc == OVERALL)
    t.notes.append("Rates per tool call, pooled over the cell's runs (infra errors left out): malformed = arguments "
                   "that do not fit the tool's schema (the paper's SDR), hallucinated = a tool that does not exist, "
                   "repeated = an identical earlier call; leaked text = turns whose text looks like a tool call that "
                   "was not sent as one, per turn. — = no call (or no turn) in the cell.")
    return t


def instance_table(summary: Summary) -> TextTable | None:
    """The instance-variation ablation, one row per model x task x instance."""
    if not summary.instance_ablation:
        return None
    t = TextTable("instances", "Instance-variation ablation (not pooled into the tiers)",
                  ["model", "task", "tier", "instance", "runs", "passed", "TCR", "95% CI (Wilson)", "infra"],
                  "llllrrrrr")
    rows = list(summary.instance_ablation)
    for i, c in enumerate(rows):
        last = i == len(rows) - 1 or (rows[i + 1].model, rows[i + 1].task) != (c.model, c.task)
        t.add([c.model, c.task, c.tier, c.instance, str(c.n_runs), str(c.n_passed), pct(c.tcr),
               ci_pct(c.ci_low, c.ci_high), str(c.n_infra)], ["", "", "", "", "", "", tcr_class(c.tcr), "", ""],
              end_section=last)
    head = summary.config.get("headline_instance") or "i0"
    t.notes.append(f"Headline TCR uses instance {head} only, as the AgentFloor paper does; the other instances "
                   "change the task's data and are this separate ablation. Wilson intervals: too few runs per cell "
                   "for a bootstrap.")
    return t
