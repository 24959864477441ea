"""Deployment recipes: the smallest model that reliably serves a tier.

For each tier and reliability target tau (percent), the recipe is the first model in size order
whose 95 % bootstrap CI lower bound on TCR is ``>= tau``: the interval has to rule out a true TCR
below the target, a point estimate above it is not enough. Size order is ``params_b`` ascending;
models without ``params_b`` (e.g. hosted APIs) come after all sized ones; ties break by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .cost import CostStats
from .tcr import TcrEstimate

DEFAULT_TARGETS_PCT: tuple[int, ...] = (60, 70, 80, 90)
_TOL = 1e-9


def size_order(params_b: Mapping[str, float | None], models: Iterable[str] | None = None) -> list[str]:
    """Models sorted smallest first; unknown sizes last, by name."""
    names = list(params_b) if models is None else list(models)
    return sorted(names, key=lambda m: (params_b.get(m) is None, params_b.get(m) or 0.0, m))


@dataclass(frozen=True, slots=True)
class Recipe:
    """Smallest qualifying model for (tier, target); all model fields ``None`` when none qualifies."""

    tier: str
    target_pct: float
    model: str | None
    params_b: float | None
    tcr: float | None
    ci_low: float | None
    ci_high: float | None
    cost_per_pass: float | None
    wall_per_pass: float | None
    qualifying: tuple[str, ...]


def clears(estimate: TcrEstimate | None, target_pct: float) -> bool:
    """True iff the CI lower bound (a fraction) is at least ``target_pct`` percent."""
    return bool(estimate is not None and estimate.ci_low is not None and 100.0 * estimate.ci_low >= target_pct - _TOL)


def deployment_recipes(tcr: Mapping[str, Mapping[str, TcrEstimate]], params_b: Mapping[str, float | None],
                       tiers: Iterable[str], *, targets_pct: Iterable[float] = DEFAULT_TARGETS_PCT,
                       cost: Mapping[str, Mapping[str, CostStats]] | None = None) -> dict[str, dict[str, Recipe]]:
    """``{tier: {str(target): Recipe}}`` over the models in ``tcr``."""
    order = size_order(params_b, tcr.keys())
    out: dict[str, dict[str, Recipe]] = {}
    for tier in tiers:
        out[tier] = {}
        for tau in targets_pct:
            ok = tuple(m for m in order if clears(tcr[m].get(tier), tau))
            best = ok[0] if ok else None
            est = tcr[best][tier] if best else None
            cs = cost[best][tier] if (best and cost is not None) else None
            out[tier][_target_key(tau)] = Recipe(
                tier=tier, target_pct=float(tau), model=best, params_b=params_b.get(best) if best else None,
                tcr=est.tcr if est else None, ci_low=est.ci_low if est else None, ci_high=est.ci_high if est else None,
                cost_per_pass=cs.cost_per_pass if cs else None, wall_per_pass=cs.wall_per_pass if cs else None,
                qualifying=ok,
            )
    return out


def _target_key(tau: float) -> str:
    return str(int(tau)) if float(tau).is_integer() else repr(float(tau))
