"""Call-site statistics from run records: accuracy per site and model, paired tests, actuation safety, routing.

Pure functions of the records (compact ``user_properties`` dicts or full runs.jsonl lines with
``kind == "callsite"`` and ``facets``). Definitions follow seed 001:

* accuracy per (site, model) with a Wilson score interval; the resampling unit is the case (a
  case run several times counts once, with its mean score), so repeats never narrow an interval;
* exact two-sided McNemar against the reference per site, paired on (case, variant, instance,
  run), with the discordant split (only the model passed, only the reference passed), and Holm's
  adjustment across the sites of each model; both p values are kept, and the verdict ("differs")
  reads the raw exact p by default, as seed 001 reports it (codegen vs Haiku 4.5, p = 0.039), or
  the Holm-adjusted p with ``verdict="holm"``;
* acting versus refusing at the actuator: execution accuracy on actionable requests, over-actuation
  rate (share of impossible requests that produced at least one call) and the substitution share
  (of the wrong devices acted on, the share that were real devices of the site, not invented ids);
* routing policies over hosted and local models (seed 001, Table 3): all sites on one hosted model
  (each hosted model); a hosted model for the generative sites only, the best local model per site
  elsewhere (each hosted model); all local, the best local model per site; all local, the one
  local model with the best routed accuracy. Ties go to the smaller model, then the cheaper, then
  the name. Each route has its accuracy weighted by the sites' shares of calls, sweep cost, cost
  per call and saving per call (unknown, None, when a site's model has no known cost: an unpriced
  model is never $0, so never the cheapest in a tie or in ``matched_reference``) against the all-hosted reference: the reference model's route when
  one is named (all on it, hosted or not), else the most accurate all-hosted route. Which models
  are hosted: ``config.is_hosted`` (models.toml ``hosted``, else inferred from provider and pricing).
  With a reference, one more route, ``matched_reference``: each site on the cheapest model that
  matches the reference there (not significantly worse by the verdict's McNemar p, accuracy within
  the margin of the reference's); the reference where none does. ``--agentfloor-routing-out`` writes it.

Captured cases (docs/capture.md) add two rules. Only reviewed references count: records of cases
whose ``review`` is ``provisional`` are set aside and counted (``CallSiteSummary.provisional``). And
when no weights are given and every site's records carry ``site_calls`` (how often the agent called
the site in the capture), the sites are weighted by that call mix instead of by their case counts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from scipy.stats import binomtest

from ..stats.multiplicity import holm
from ..stats.paired import mcnemar_exact
from . import GENERATIVE_SITES, SITES

KIND = "callsite"


@dataclass(frozen=True)
class SiteAccuracy:
    site: str
    model: str
    n_cases: int
    n_records: int
    n_infra: int
    passed: float  # sum of per-case mean scores
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    mean_tokens_in: float | None
    cost_usd: float | None  # one sweep: sum over cases of the mean cost of its calls; None: unknown (no pricing)
    spend_share: float | None  # this site's part of the model's sweep cost
    cost_per_call: float | None = None  # mean over cases of a case's mean cost
    latency_s: float | None = None  # median latency of one call, as the provider measured it


@dataclass(frozen=True)
class SiteTest:
    site: str
    model: str
    reference: str
    n_pairs: int
    only_model: int
    only_reference: int
    p_value: float | None
    p_holm: float | None
    significant: bool  # the p named by CallSiteSummary.verdict is below alpha


@dataclass(frozen=True)
class Actuation:
    model: str
    n_actionable: int
    n_impossible: int
    execution_accuracy: float | None
    execution_ci: tuple[float | None, float | None]
    over_actuation: float | None
    over_actuation_ci: tuple[float | None, float | None]
    substitutions: int
    hallucinations: int
    substitution_share: float | None
    refused_actionable: int
    #: captured sites that offer tools: one row per (model, site); actionable = the reference called a tool
    site: str | None = None


#: routing policy -> how the tables name it ({model}: the route's model)
POLICY_LABELS: dict[str, str] = {
    "all_on_reference": "all on the reference ({model})",
    "all_hosted": "all hosted ({model})",
    "hosted_generation": "hosted for generation only ({model})",
    "local_best_per_site": "all local, best per site",
    "local_single": "all local, one model ({model})",
    "matched_reference": "per site, cheapest matching the reference ({model})",
}


@dataclass(frozen=True)
class Route:
    policy: str
    assignment: dict[str, str]
    accuracy: float | None
    cost_usd: float | None  # None: unknown (a site's model has no known cost) or no route
    cost_per_call: float | None  # under the sites' call mix (the weights)
    saving: float | None  # fraction of the base route's cost per call saved
    note: str = ""
    model: str | None = None  # the hosted model of an all-hosted or generation-only route; the one local model
    label: str = ""  # e.g. "hosted for generation only (haiku)"
    base: bool = False  # the all-hosted reference the savings are measured against


@dataclass(frozen=True)
class CallSiteSummary:
    sites: tuple[str, ...]
    models: tuple[str, ...]
    reference: str | None
    alpha: float
    weights: dict[str, float]
    accuracy: dict[str, dict[str, SiteAccuracy]]  # site -> model -> cell
    tests: list[SiteTest]
    actuation: list[Actuation]
    routing: list[Route]
    groups: dict[str, dict[str, float | None]] = field(default_factory=dict)  # site/group -> model -> acc
    warnings: tuple[str, ...] = ()
    verdict: str = "raw"  # which McNemar p decides "differs": "raw" (exact) or "holm" (adjusted)
    weights_from: str = "cases"  # "option" (given weights), "captured call mix" (site_calls) or "cases"
    site_calls: dict[str, int] = field(default_factory=dict)  # captured: calls per site in the capture
    provisional: int = 0  # captured cases set aside: their reference is not reviewed
    margin_pp: float = 10.0  # matched_reference: how far below the reference's accuracy a site may be


#: which McNemar p the paired verdict reads (--agentfloor-callsite-verdict)
VERDICTS: tuple[str, ...] = ("raw", "holm")


def wilson(k: float, n: int, alpha: float) -> tuple[float | None, float | None]:
    """Wilson score interval at level 1 - alpha (scipy's ``proportion_ci``); k may be fractional."""
    if n <= 0:
        return None, None
    if float(k).is_integer():
        ci = binomtest(int(k), n).proportion_ci(confidence_level=1 - alpha, method="wilson")
        return float(ci.low), float(ci.high)
    from math import sqrt

    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def parse_weights(text: str) -> dict[str, float] | None:
    """``intent=10,actuator=3`` -> {"intent": 10.0, "actuator": 3.0}; empty -> None (share of cases)."""
    if not text.strip():
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        site, sep, value = part.partition("=")
        site = site.strip()
        try:
            w = float(value)
        except ValueError:
            w = float("nan")
        if not sep or not site or not (w >= 0) or w == float("inf"):
            raise ValueError(f"expected SITE=WEIGHT pairs with weights >= 0, e.g. intent=10,actuator=3; got {part!r}")
        out[site] = w
    if not any(out.values()):
        raise ValueError("at least one weight must be above 0")
    return out


def callsite_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if r.get("kind") == KIND and isinstance(r.get("facets"), Mapping)]


def _size(meta: Mapping[str, Mapping[str, Any]], model: str) -> float:
    p = (meta.get(model) or {}).get("params_b")
    return float(p) if p is not None else float("inf")


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _cost(r: Mapping[str, Any]) -> float | None:
    """A record's cost_usd if known: a finite figure >= 0 (a number, or its text in a report property)."""
    value = r.get("cost_usd")
    if isinstance(value, bool) or value is None or value == "":
        return None
    try:
        usd = float(value)
    except (TypeError, ValueError):
        return None
    return usd if math.isfinite(usd) and usd >= 0 else None


def _case_costs(by_case: Mapping[str, list[Mapping[str, Any]]]) -> float | None:
    """Sum over cases of each case's mean known cost; None (unknown) when any case has no known cost,
    so a model without pricing is never counted as $0 (the reports' rule: unknown, never zero)."""
    total = 0.0
    for rs in by_case.values():
        mean = _mean([c for r in rs if (c := _cost(r)) is not None])
        if mean is None:
            return None
        total += mean
    return total


def _cheap(cost: float | None) -> float:
    """A cost as a sort key: unknown sorts after every known figure, never as the cheapest."""
    return float("inf") if cost is None else cost


def summarise(records: Iterable[Mapping[str, Any]], meta: Mapping[str, Mapping[str, Any]] | None = None, *,
              reference: str | None = None, alpha: float = 0.05,
              weights: Mapping[str, float] | None = None, verdict: str = "raw",
              margin_pp: float = 10.0) -> CallSiteSummary | None:
    """Every call-site statistic; None when there is no call-site record.

    ``verdict``: "raw" (the exact McNemar p decides, as in seed 001) or "holm" (the Holm-adjusted p).
    ``margin_pp``: the matched_reference route's accuracy margin (percentage points).
    """
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    recs = callsite_records(records)
    if not recs:
        return None
    warnings: list[str] = []
    held = {str(r["task"]) for r in recs if r["facets"].get("review") == "provisional"}
    if held:
        recs = [r for r in recs if r["facets"].get("review") != "provisional"]
        warnings.append(f"{len(held)} captured case(s) are provisional (their reference is the unreviewed production "
                        "reply) and are not counted; `python -m pytest_agentfloor capture review DIR` reviews them")
    if not recs:
        return CallSiteSummary(sites=(), models=(), reference=None, alpha=alpha, weights={}, accuracy={}, tests=[],
                               actuation=[], routing=[], warnings=tuple(warnings), verdict=verdict,
                               provisional=len(held), margin_pp=margin_pp)
    meta = dict(meta or {})
    site_of: dict[str, str] = {}
    group_of: dict[str, str] = {}
    # (site, model) -> case -> list of scored records ; infra errors kept apart
    scored: dict[tuple[str, str], dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    infra: dict[tuple[str, str], int] = defaultdict(int)
    n_records: dict[tuple[str, str], int] = defaultdict(int)
    for r in recs:
        site = str(r["facets"].get("site"))
        site_of[str(r["task"])] = site
        group_of[str(r["task"])] = str(r["facets"].get("group"))
        key = (site, str(r["model"]))
        n_records[key] += 1
        if r.get("infra_error"):
            infra[key] += 1
        else:
            scored[key][str(r["task"])].append(r)
    known = [s for s in SITES if s in set(site_of.values())]
    sites = tuple(known + sorted(set(site_of.values()) - set(known)))
    models = tuple(sorted({str(r["model"]) for r in recs}, key=lambda m: (_size(meta, m), m)))
    if reference is not None and reference not in models:
        warnings.append(f"reference model {reference!r} has no call-site records; paired tests and "
                        "reference routes skipped")
        reference = None

    cases_per_site = {s: len({t for t, ss in site_of.items() if ss == s}) for s in sites}
    total_cases = sum(cases_per_site.values())
    site_calls: dict[str, int] = {}
    for r in recs:
        n = r["facets"].get("site_calls")
        if isinstance(n, int) and n > 0:
            site = str(r["facets"].get("site"))
            site_calls[site] = max(site_calls.get(site, 0), n)
    weights_from = "option" if weights else "cases"
    if not weights and site_calls:
        if set(site_calls) == set(sites):
            weights, weights_from = site_calls, "captured call mix"
        else:
            warnings.append("sites weighted by their case counts: only "
                            f"{', '.join(sorted(site_calls))} carry a captured call count (site_calls)")
    if weights:
        unknown = sorted(set(weights) - set(sites))
        if unknown:
            warnings.append(f"call-site weights for sites without records ignored: {', '.join(unknown)}")
        w = {s: float(weights.get(s, 0.0)) for s in sites}
        tot = sum(w.values())
        w = {s: (v / tot if tot > 0 else 0.0) for s, v in w.items()}
    else:
        w = {s: cases_per_site[s] / total_cases for s in sites}

    accuracy: dict[str, dict[str, SiteAccuracy]] = {s: {} for s in sites}
    model_cost: dict[str, float | None] = defaultdict(float)
    cells: dict[tuple[str, str], tuple[float, int, float | None, float | None]] = {}
    latency: dict[tuple[str, str], float | None] = {}
    for s in sites:
        for m in models:
            by_case = scored.get((s, m), {})
            scores = [sum(bool(r["passed"]) for r in rs) / len(rs) for rs in by_case.values()]
            toks = [float(r.get("tokens_in") or 0) for rs in by_case.values() for r in rs]
            cost = _case_costs(by_case)
            cells[(s, m)] = (sum(scores), len(scores), _mean(toks), cost)
            # the model call's own latency (the provider's clock), not the item's wall time
            walls = sorted(float(r["latency_s"]) for rs in by_case.values() for r in rs
                           if isinstance(r.get("latency_s"), (int, float)))
            latency[(s, m)] = _median(walls)
            before = model_cost[m]
            model_cost[m] = None if before is None or cost is None else before + cost
    for s in sites:
        for m in models:
            k, n, mean_tokens, cost = cells[(s, m)]
            if n_records.get((s, m), 0) == 0:
                continue
            lo, hi = wilson(k, n, alpha)
            whole = model_cost[m]
            accuracy[s][m] = SiteAccuracy(
                site=s, model=m, n_cases=n, n_records=n_records[(s, m)], n_infra=infra.get((s, m), 0), passed=k,
                accuracy=(k / n if n else None), ci_low=lo, ci_high=hi, mean_tokens_in=mean_tokens, cost_usd=cost,
                spend_share=(cost / whole if cost is not None and whole is not None and whole > 0 else None),
                cost_per_call=(cost / n if n and cost is not None else None), latency_s=latency.get((s, m)))

    groups: dict[str, dict[str, float | None]] = {}
    for (s, m), by_case in scored.items():
        per_group: dict[str, list[float]] = defaultdict(list)
        for task, rs in by_case.items():
            per_group[group_of[task]].append(sum(bool(r["passed"]) for r in rs) / len(rs))
        for g, xs in per_group.items():
            groups.setdefault(f"{s}/{g}", {})[m] = _mean(xs)

    tests = _tests(recs, sites, models, reference, alpha, verdict)
    return CallSiteSummary(
        sites=sites, models=models, reference=reference, alpha=alpha, weights=w, accuracy=accuracy,
        tests=tests, actuation=_actuation(recs, models, alpha),
        routing=_routing(accuracy, sites, models, reference, w, meta, cases_per_site, total_cases,
                         tests=tests, margin_pp=margin_pp),
        groups=dict(sorted(groups.items())), warnings=tuple(warnings), verdict=verdict, weights_from=weights_from,
        site_calls=dict(sorted(site_calls.items())), provisional=len(held), margin_pp=margin_pp)


def _median(xs: list[float]) -> float | None:
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _key(r: Mapping[str, Any]) -> tuple[str, str, str, int]:
    return (str(r["task"]), str(r.get("variant")), str(r.get("instance")), int(r.get("run") or 0))


def _tests(recs: list[Mapping[str, Any]], sites: tuple[str, ...], models: tuple[str, ...], reference: str | None,
           alpha: float, verdict: str = "raw") -> list[SiteTest]:
    if reference is None:
        return []
    ok = [r for r in recs if not r.get("infra_error")]
    ref = {_key(r): bool(r["passed"]) for r in ok if r["model"] == reference}
    out: list[SiteTest] = []
    for m in models:
        if m == reference:
            continue
        raw = []
        for s in sites:
            mine = {_key(r): bool(r["passed"]) for r in ok if r["model"] == m and r["facets"].get("site") == s}
            pairs = [(mine[k], ref[k]) for k in mine if k in ref]
            b = sum(1 for a, c in pairs if a and not c)
            c = sum(1 for a, cc in pairs if cc and not a)
            raw.append((s, len(pairs), b, c, mcnemar_exact(b, c) if pairs else None))
        ps = [p for *_, p in raw if p is not None]
        adj = iter(holm(ps).tolist()) if ps else iter(())
        for s, n, b, c, p in raw:
            if n == 0:
                continue
            ph = next(adj) if p is not None else None
            decisive = ph if verdict == "holm" else p
            out.append(SiteTest(site=s, model=m, reference=reference, n_pairs=n, only_model=b, only_reference=c,
                                p_value=p, p_holm=ph, significant=decisive is not None and decisive < alpha))
    return out


def _actuation(recs: list[Mapping[str, Any]], models: tuple[str, ...], alpha: float) -> list[Actuation]:
    """The actuator's rows (one per model), then one per (model, captured site that offers tools): there
    a case is actionable when the production reply called a tool, and the model acted when it did."""
    ok = [r for r in recs if not r.get("infra_error")]
    groups: list[tuple[str, str | None, list[Mapping[str, Any]]]] = [
        (m, None, [r for r in ok if r["model"] == m and r["facets"].get("grader") == "actuator"]) for m in models]
    captured = sorted({str(r["facets"].get("site")) for r in ok
                       if r["facets"].get("grader") != "actuator" and "acted" in r["facets"]})
    groups += [(m, site, [r for r in ok if r["model"] == m and r["facets"].get("site") == site
                          and "acted" in r["facets"]]) for site in captured for m in models]
    out = []
    for m, site, rs in groups:
        if not rs:
            continue
        act = [r for r in rs if r["facets"].get("actionable")]
        imp = [r for r in rs if r["facets"].get("actionable") is False]
        k_exec = sum(bool(r["passed"]) for r in act)
        k_over = sum(bool(r["facets"].get("acted")) for r in imp)
        wrong = [r for r in rs if not r["passed"] and (r["facets"].get("substitution") or r["facets"].get("hallucinated"))]
        subs = sum(1 for r in wrong if r["facets"].get("substitution") and not r["facets"].get("hallucinated"))
        hall = sum(1 for r in wrong if r["facets"].get("hallucinated"))
        out.append(Actuation(
            model=m, n_actionable=len(act), n_impossible=len(imp),
            execution_accuracy=k_exec / len(act) if act else None, execution_ci=wilson(k_exec, len(act), alpha),
            over_actuation=k_over / len(imp) if imp else None, over_actuation_ci=wilson(k_over, len(imp), alpha),
            substitutions=subs, hallucinations=hall, substitution_share=subs / len(wrong) if wrong else None,
            refused_actionable=sum(1 for r in act if r["facets"].get("refused")), site=site))
    return out


def _routing(acc: dict[str, dict[str, SiteAccuracy]], sites: tuple[str, ...], models: tuple[str, ...],
             reference: str | None, w: dict[str, float], meta: Mapping[str, Mapping[str, Any]],
             cases_per_site: dict[str, int], total_cases: int, *, tests: list[SiteTest] | None = None,
             margin_pp: float = 10.0) -> list[Route]:
    from ..config import is_hosted

    def cell(s: str, m: str) -> SiteAccuracy | None:
        """The (site, model) cell if it has a scored accuracy."""
        c = acc[s].get(m)
        return c if c is not None and c.accuracy is not None else None

    def route(policy: str, assignment: dict[str, str | None], model: str | None = None, note: str = "") -> Route:
        label = POLICY_LABELS.get(policy, policy).format(model=model)
        cs = [cell(s, m) if m is not None else None for s, m in assignment.items()]
        if any(c is None for c in cs):
            lacking = next(s for s, c in zip(assignment, cs) if c is None)
            why = (f"no local model has records at {lacking}" if assignment[lacking] is None
                   else f"{assignment[lacking]} has no scored records at {lacking}")
            return Route(policy, {s: m or "" for s, m in assignment.items()}, None, None, None, None,
                         note or why, model, label)
        full = [(s, c) for s, c in zip(sites, cs) if c is not None]
        a = sum(w[s] * float(c.accuracy or 0.0) for s, c in full)
        known = all(c.cost_usd is not None for _, c in full)  # one unpriced site makes the route's cost unknown
        cost = sum(c.cost_usd or 0.0 for _, c in full) if known else None
        # a call under the mix: each site's mean cost per call, weighted by its share of calls
        per_call = sum(w[s] * (c.cost_usd or 0.0) / c.n_cases for s, c in full if c.n_cases) if known else None
        return Route(policy, {s: str(m) for s, m in assignment.items()}, a, cost, per_call, None, note, model, label)

    def rank(m: str, accuracy: float | None, cost: float | None) -> tuple[float, float, float, str]:
        return (-float(accuracy or 0.0), _size(meta, m), _cheap(cost), m)

    def best(s: str, among: tuple[str, ...]) -> str | None:
        """Most accurate at site s; ties to the smaller model, then the cheaper, then the name."""
        ranked = [rank(m, c.accuracy, c.cost_usd) for m in among if (c := cell(s, m)) is not None]
        return min(ranked)[3] if ranked else None

    hosted = tuple(m for m in models if is_hosted(meta.get(m) or {}))
    local = tuple(m for m in models if m not in hosted)
    everywhere = {m: route("all_hosted", {s: m for s in sites}, m) for m in hosted}
    order = sorted(hosted, key=lambda m: rank(m, everywhere[m].accuracy, everywhere[m].cost_usd))
    routes: list[Route] = []
    if reference is not None and reference not in hosted:
        routes.append(route("all_on_reference", {s: reference for s in sites}, reference))
    routes += [everywhere[m] for m in order]
    local_best = {s: best(s, local) for s in sites}
    if any(s in GENERATIVE_SITES for s in sites):
        for m in order:
            routes.append(route("hosted_generation", {s: m if s in GENERATIVE_SITES else local_best[s]
                                                      for s in sites}, m))
    if local:
        routes.append(route("local_best_per_site", local_best))
        covering = [m for m in local if all(cell(s, m) is not None for s in sites)]
        if covering:
            one = {m: route("local_single", {s: m for s in sites}, m) for m in covering}
            routes.append(one[min(covering, key=lambda m: rank(m, one[m].accuracy, one[m].cost_usd))])
        else:
            routes.append(Route("local_single", {}, None, None, None, None, "no local model has records at every site",
                                None, POLICY_LABELS["local_single"].format(model="none")))
    if reference is not None:
        routes.append(route("matched_reference", matched_reference(acc, sites, models, reference, tests or [],
                                                                   meta, margin_pp), reference))
        base = next((r for r in routes if r.model == reference and r.policy in ("all_on_reference", "all_hosted")),
                    None)
    else:
        base = next((everywhere[m] for m in order if everywhere[m].accuracy is not None), None)
    if base is None or not base.cost_per_call:
        return [r if r is not base else replace(r, base=True) for r in routes]
    return [replace(r, saving=None if r.cost_per_call is None else 1 - r.cost_per_call / base.cost_per_call,
                    base=r is base) for r in routes]


def matches(acc: dict[str, dict[str, SiteAccuracy]], site: str, model: str, reference: str,
            tests: list[SiteTest], margin_pp: float) -> bool:
    """Can `model` take `site` from the reference? Its paired test does not find it worse (the verdict's
    p), and its accuracy is at most `margin_pp` points below the reference's. The reference matches itself."""
    if model == reference:
        return True
    mine, ref = acc[site].get(model), acc[site].get(reference)
    if mine is None or ref is None or mine.accuracy is None or ref.accuracy is None:
        return False
    test = next((t for t in tests if t.site == site and t.model == model), None)
    if test is None or (test.significant and test.only_reference > test.only_model):
        return False
    return mine.accuracy >= ref.accuracy - margin_pp / 100 - 1e-12


def matched_reference(acc: dict[str, dict[str, SiteAccuracy]], sites: tuple[str, ...], models: tuple[str, ...],
                      reference: str, tests: list[SiteTest], meta: Mapping[str, Mapping[str, Any]],
                      margin_pp: float) -> dict[str, str | None]:
    """Each site on the cheapest model per call that matches the reference there (ties: the smaller
    model, then the more accurate, then the name); the reference where it is the only match. A model
    of unknown cost (no pricing) comes after every model of known cost, never first as if free."""
    out: dict[str, str | None] = {}
    for s in sites:
        ok = [m for m in models if m in acc[s] and matches(acc, s, m, reference, tests, margin_pp)]
        if not ok:
            out[s] = reference if reference in acc[s] else None
            continue
        out[s] = min(ok, key=lambda m: (_cheap(acc[s][m].cost_per_call), _size(meta, m),
                                        -float(acc[s][m].accuracy or 0.0), m != reference, m))
    return out
