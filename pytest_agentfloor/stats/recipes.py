"""Deployment recipes: the smallest model that reliably serves a tier.

For each tier and reliability target tau (percent), the recipe is the first model in size order
whose 95 % bootstrap CI lower bound on TCR is ``>= tau``: the interval has to rule out a true TCR
below the target, a point estimate above it is not enough. A cell without a model says why:
``refuted`` (every model's interval lies below tau) or ``insufficient evidence`` (some model's
interval straddles tau; :func:`runs_for_lower_bound` says how many runs would be needed). Size order is ``params_b`` ascending;
models without ``params_b`` (e.g. hosted APIs) come after all sized ones; ties break by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .cost import CostStats
from .intervals import wilson
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
    #: certified (a model's lower bound clears tau), refuted (every model's upper bound is below it)
    #: or insufficient evidence (some model's interval straddles tau: more runs would decide it)
    outcome: str = "refuted"
    undecided: tuple[str, ...] = ()


def clears(estimate: TcrEstimate | None, target_pct: float) -> bool:
    """True iff the CI lower bound (a fraction) is at least ``target_pct`` percent."""
    return bool(estimate is not None and estimate.ci_low is not None and 100.0 * estimate.ci_low >= target_pct - _TOL)


def _straddles(estimate: TcrEstimate | None, target_pct: float) -> bool:
    """The interval holds TCRs on both sides of the target (upper bound at or above it)."""
    return bool(estimate is not None and estimate.ci_high is not None and 100.0 * estimate.ci_high >= target_pct - _TOL)


def runs_for_lower_bound(tcr: float, target_pct: float, tail: float = 0.025, n_max: int = 100_000) -> int | None:
    """Fewest runs at which a TCR of ``tcr`` has a Wilson lower bound of at least ``target_pct``.

    A floor on what the guarded interval (never narrower than Wilson's) needs; None when the TCR
    itself is below the target (no number of runs certifies it) or beyond ``n_max``.
    """
    if 100.0 * tcr < target_pct + _TOL:
        return None

    def ok(n: int) -> bool:
        return bool(100.0 * wilson(tcr * n, n, tail)[0] >= target_pct - _TOL)

    hi = 1
    while not ok(hi):
        if hi >= n_max:
            return None
        hi = min(2 * hi, n_max)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


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
            open_ = tuple(m for m in order if m not in ok and _straddles(tcr[m].get(tier), tau))
            best = ok[0] if ok else None
            est = tcr[best][tier] if best else None
            cs = cost[best][tier] if (best and cost is not None) else None
            out[tier][_target_key(tau)] = Recipe(
                tier=tier, target_pct=float(tau), model=best, params_b=params_b.get(best) if best else None,
                tcr=est.tcr if est else None, ci_low=est.ci_low if est else None, ci_high=est.ci_high if est else None,
                cost_per_pass=cs.cost_per_pass if cs else None, wall_per_pass=cs.wall_per_pass if cs else None,
                qualifying=ok, outcome="certified" if ok else "insufficient evidence" if open_ else "refuted",
                undecided=open_,
            )
    return out


def _target_key(tau: float) -> str:
    return str(int(tau)) if float(tau).is_integer() else repr(float(tau))
