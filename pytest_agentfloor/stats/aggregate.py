"""One entry point from run records to every statistic the reports need.

``aggregate`` is deterministic for a fixed seed and independent of record order: records are
canonically sorted (see :mod:`.records`), every random draw is a documented function of
``(seed, n_boot, number of units)`` (see :mod:`.bootstrap`), and the JSON form rounds floats to
6 decimals with sorted keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .breakdown import FailureBreakdown, compute_breakdown
from .cost import CostStats, compute_cost, has_cost_basis, pareto_front, run_costs
from .diagnostics import Diagnostics, compute_diagnostics
from .instances import HEADLINE_INSTANCE, InstanceCell, instance_ablation, split_headline
from .intervals import DECISION_BOUNDS, INTERVAL_METHODS
from .judge import JudgeStats, compute_judge
from .paired import PairedSection, check_margin, compare_to_reference, decision_tail
from .records import OVERALL, build_table, normalise_cluster, scopes_of
from .recipes import DEFAULT_TARGETS_PCT, Recipe, deployment_recipes, size_order
from .reliability import ReliabilityCurve, compute_reliability
from .serialize import dumps, to_jsonable
from .tcr import DEFAULT_INFRA_THRESHOLD, TcrEstimate, compute_tcr

SCHEMA_VERSION = "1.1"

INTERVAL_TEXT = {
    "guarded": "hull of the percentile bootstrap and a score interval (Wilson for a TCR, Tango for a paired Δ)",
    "paper": "plain percentile bootstrap, as in the AgentFloor paper",
}


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    params_b: float | None
    size_rank: int
    is_reference: bool
    n_records: int
    n_infra: int
    unreliable_scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Summary:
    """Everything computed from one corpus. Per-model sections are ``{model: {scope: ...}}`` with
    scope one of the tiers present in the data, plus ``"overall"``."""

    schema_version: str
    config: dict[str, Any]
    scopes: tuple[str, ...]
    model_order: tuple[str, ...]
    models: dict[str, ModelInfo]
    tcr: dict[str, dict[str, TcrEstimate]]
    paired: PairedSection
    reliability: dict[str, dict[str, ReliabilityCurve]]
    recipes: dict[str, dict[str, Recipe]]
    cost: dict[str, dict[str, CostStats]]
    pareto: dict[str, list[str]]
    breakdown: dict[str, dict[str, FailureBreakdown]]
    n_records: int
    warnings: tuple[str, ...]
    diagnostics: dict[str, dict[str, Diagnostics]] | None = None
    instance_ablation: tuple[InstanceCell, ...] = ()
    #: who decided the semantic checks (judge vs keyword stand-in), per model and overall
    judge: dict[str, JudgeStats] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain, stable dict: sorted keys, floats rounded to 6 decimals, ``None`` for undefined."""
        return to_jsonable(self)

    def dumps(self, *, indent: int | None = None) -> str:
        """Canonical JSON text of :meth:`to_json`."""
        return dumps(self, indent=indent)


def aggregate(
    records: Iterable[Mapping[str, Any]],
    models_meta: Mapping[str, Mapping[str, Any]] | None,
    *,
    reference: str | None = None,
    margin_pp: float = 10.0,
    n_boot: int = 10_000,
    seed: int = 42,
    infra_as_failure: bool = False,
    cluster: str | None = None,
    alpha: float = 0.05,
    targets_pct: Iterable[float] = DEFAULT_TARGETS_PCT,
    interval_method: str = "guarded",
    decision: str = "two-sided",
    infra_threshold: float = DEFAULT_INFRA_THRESHOLD,
    headline_instance: str | None = HEADLINE_INSTANCE,
) -> Summary:
    """Compute TCR + CIs, paired tests vs ``reference`` (Holm), pass@k/pass^k, recipes, cost, breakdowns.

    ``cluster``: ``None``/``"unit"`` resamples (variant, instance, run) tuples, ``"task"`` tasks,
    ``"run"`` single runs. ``alpha`` sets the two-sided CI level (1 - alpha), the one-sided
    non-inferiority level, the TOST interval (1 - 2 alpha) and the Holm family-wise level.

    ``interval_method``: ``"guarded"`` (default) or ``"paper"`` (see :mod:`.intervals`; ``paper``
    with no explicit ``cluster`` resamples runs, as the paper did). ``decision``: which CI bound
    certifies non-inferiority/equivalence (see :mod:`.paired`). ``infra_threshold``: infra-error
    share above which a (model, scope) cell is flagged unreliable and kept out of "best", the
    Pareto front and the recipes. ``headline_instance``: instance variants other than this one are
    reported in ``instance_ablation`` instead of the tiers (``None`` pools every instance).
    """
    if interval_method not in INTERVAL_METHODS:
        raise ValueError(f"interval method must be one of {', '.join(INTERVAL_METHODS)}, got {interval_method!r}")
    if decision not in DECISION_BOUNDS:
        raise ValueError(f"decision bound must be one of {', '.join(DECISION_BOUNDS)}, got {decision!r}")
    if not 0 <= infra_threshold <= 1:
        raise ValueError("infra threshold must be a share between 0 and 1")
    if cluster is None and interval_method == "paper":
        cluster = "run"
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    check_margin(margin_pp)
    cl = normalise_cluster(cluster)
    targets = tuple(sorted(float(t) for t in targets_pct))
    all_records = list(records)
    headline, set_aside = split_headline(all_records, headline_instance)
    ablation = tuple(instance_ablation(all_records, infra_as_failure=infra_as_failure, alpha=alpha)) if set_aside else ()
    table = build_table(headline)
    meta = dict(models_meta or {})
    warnings = list(table.warnings)
    if set_aside:
        warnings.append(f"instance variants other than {headline_instance} are reported in the instance ablation, "
                        "not pooled into the tiers")

    params: dict[str, float | None] = {}
    for m in table.model_names:
        p = (meta.get(m) or {}).get("params_b")
        params[m] = None if p is None else float(p)
    unused = sorted(set(meta) - set(table.model_names))
    if unused:
        warnings.append(f"models_meta entries without records: {', '.join(unused)}")
    if reference is not None and reference not in table.model_names:
        warnings.append(f"reference model {reference!r} has no records; paired tests skipped")

    scopes = scopes_of(table)
    tcr = compute_tcr(table, n_boot=n_boot, seed=seed, cluster=cl, infra_as_failure=infra_as_failure, alpha=alpha,
                      interval_method=interval_method, infra_threshold=infra_threshold)
    paired = compare_to_reference(table, reference, margin_pp=margin_pp, n_boot=n_boot, seed=seed, cluster=cl,
                                  infra_as_failure=infra_as_failure, alpha=alpha, interval_method=interval_method,
                                  decision=decision)
    reliability = compute_reliability(table, infra_as_failure=infra_as_failure)
    cost = compute_cost(table, infra_as_failure=infra_as_failure, costs=run_costs(table, meta))
    breakdown = compute_breakdown(table)
    diagnostics = compute_diagnostics(table, headline)
    reliable = {m: {sc: e for sc, e in by.items() if not e.unreliable} for m, by in tcr.items()}
    recipes = deployment_recipes(reliable, params, table.tiers_present, targets_pct=targets, cost=cost)
    pareto = {sc: pareto_front({m: (cost[m][sc].cost_per_run, cost[m][sc].tcr) for m in table.model_names
                                if not tcr[m][sc].unreliable})
              for sc in scopes}
    flagged = [(m, sc) for m in table.model_names for sc in scopes if tcr[m][sc].unreliable]
    if flagged:
        warnings.append("unreliable endpoint (infra errors above {:g}% of runs): {}; kept out of best, the Pareto "
                        "front and the recipes".format(100 * infra_threshold, ", ".join(
                            f"{m} on {'all tiers' if sc == OVERALL else 'tier ' + sc}" for m, sc in flagged)))
    unpriced = [m for m in table.model_names if cost[m][OVERALL].cost_per_run is None]
    no_basis = [m for m in unpriced if not has_cost_basis(meta.get(m))]
    if no_basis:
        warnings.append(f"no pricing and no size for {', '.join(no_basis)}: cost unknown, no place on the "
                        "cost Pareto front")
    no_data = [m for m in unpriced if m not in no_basis]
    if no_data:  # priced, but no run recorded what the price is charged on
        warnings.append(f"no busy time, latency or token counts recorded for {', '.join(no_data)}: cost unknown, "
                        "no place on the cost Pareto front")

    order = tuple(size_order(params, table.model_names))
    models = {}
    for mi, m in enumerate(table.model_names):
        sel = table.model == mi
        models[m] = ModelInfo(name=m, params_b=params[m], size_rank=order.index(m), is_reference=(m == reference),
                              n_records=int(sel.sum()), n_infra=int((sel & table.infra).sum()),
                              unreliable_scopes=tuple(sc for sc in scopes if tcr[m][sc].unreliable))

    config = {
        "reference": reference, "margin_pp": float(margin_pp), "n_boot": int(n_boot), "seed": int(seed),
        "infra_as_failure": bool(infra_as_failure), "cluster": cl, "alpha": float(alpha),
        "ci_level": 1.0 - alpha, "tost_ci_level": 1.0 - 2 * alpha, "targets_pct": list(targets),
        "resampling_unit": {"unit": "(variant, instance, run)", "task": "task", "run": "run"}[cl],
        "overall_scope": OVERALL,
        "interval_method": interval_method, "interval_text": INTERVAL_TEXT[interval_method],
        "decision_bound": decision, "decision_tail": decision_tail(alpha, decision),
        "n_min_pairs": paired.n_min_pairs, "infra_threshold": float(infra_threshold),
        "headline_instance": headline_instance, "instances_set_aside": set_aside,
        "cost_basis": "self-hosted",
    }
    return Summary(
        schema_version=SCHEMA_VERSION, config=config, scopes=scopes, model_order=order, models=models, tcr=tcr,
        paired=paired, reliability=reliability, recipes=recipes, cost=cost, pareto=pareto, breakdown=breakdown,
        n_records=len(all_records), warnings=tuple(sorted(warnings)), diagnostics=diagnostics, instance_ablation=ablation,
        judge=compute_judge(all_records),
    )
