"""Cost, latency and tokens per run and per passed task, and the cost/TCR Pareto set.

The denominators follow TCR: per-run figures average over the *scored* runs of a cell (infra
errors excluded unless ``infra_as_failure``), and per-pass figures divide the scored runs' total
by their passes, so ``cost_per_pass == cost_per_run / tcr`` holds exactly. What infra-error runs
cost is reported separately (``infra_cost_usd``) rather than silently charged to the model.
Missing numeric values (NaN) are left out of sums and means; a cell without any known value
has ``None`` (shown as ``unknown``), never 0.

Two cost figures per run, side by side (AgentFloor, "Corpus and pricing"), both charged on the
time the model was busy serving the run (``busy_s``: the server's own processing time where it
reports one, else request latency; ``latency_s`` for records written before ``busy_s`` existed),
never the item's wall clock, so ``-n`` does not change them:

* ``self-hosted``: the model's own hourly rate (``pricing.hourly_usd``), or
  :data:`DEFAULT_SELF_HOSTED_HOURLY` for a model with a known size and no price;
* ``cloud GPU``: an hourly rate tiered by ``params_b`` (:func:`cloud_hourly`).

A model priced per token (an API model) costs its token bill in both columns. A model with
neither a size nor a price has unknown cost. The Pareto front and recipes use ``self-hosted``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .records import RunTable, expand_scopes, scopes_of

DEFAULT_SELF_HOSTED_HOURLY = 0.50
#: (largest params_b of the tier, $/h); sizes between tiers go to the next tier up
CLOUD_GPU_TIERS: tuple[tuple[float, float], ...] = ((4.0, 0.50), (14.0, 1.50), (float("inf"), 2.50))
COST_BASES: tuple[str, ...] = ("self-hosted", "cloud GPU")


def cloud_hourly(params_b: float | None) -> float | None:
    """Cloud GPU $/h for a model size: ≤ 4 B $0.50, 7-14 B $1.50, ≥ 20 B $2.50 (gaps round up)."""
    if params_b is None:
        return None
    return next(rate for top, rate in CLOUD_GPU_TIERS if params_b <= top)


TOKEN_PRICES: tuple[str, ...] = ("input_per_mtok", "output_per_mtok")


def _pricing(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A model's pricing table (JSON values, from models.toml's public view); anything else (absent, None, not a table) prices nothing."""
    pricing = (meta or {}).get("pricing")
    return pricing if isinstance(pricing, Mapping) else {}


def has_cost_basis(meta: Mapping[str, Any] | None) -> bool:
    """Whether a model's metadata gives any way to cost a run: a token price, an hourly rate or a size."""
    pricing = _pricing(meta)
    return (meta or {}).get("params_b") is not None or any(
        pricing.get(k) is not None for k in (*TOKEN_PRICES, "hourly_usd"))


def run_costs(table: RunTable, meta: Mapping[str, Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Per-run cost in USD under each basis (NaN = unknown), from busy time, tokens and model metadata."""
    out = {b: np.full(table.n, np.nan) for b in COST_BASES}
    for mi, name in enumerate(table.model_names):
        m = meta.get(name) or {}
        pricing = _pricing(m)
        pb = m.get("params_b")
        sel = table.model == mi
        per_tok = [pricing.get(k) for k in TOKEN_PRICES]
        if any(p is not None for p in per_tok):
            bill = (float(per_tok[0] or 0.0) * table.tokens_in[sel] + float(per_tok[1] or 0.0) * table.tokens_out[sel]) / 1e6
            for b in COST_BASES:
                out[b][sel] = bill
            continue
        busy = table.busy_s[sel]
        busy_h = np.where(np.isnan(busy), table.latency_s[sel], busy) / 3600.0
        hourly = pricing.get("hourly_usd")
        self_rate = float(hourly) if hourly is not None else (DEFAULT_SELF_HOSTED_HOURLY if pb is not None else None)
        cloud = cloud_hourly(None if pb is None else float(pb))
        if self_rate is not None:
            out["self-hosted"][sel] = self_rate * busy_h
        if cloud is not None:
            out["cloud GPU"][sel] = cloud * busy_h
    return out


@dataclass(frozen=True, slots=True)
class CostStats:
    """Cost/latency/token summary of one (model, scope) cell; per-pass figures are ``None`` with 0 passes."""

    model: str
    scope: str
    n_runs: int
    n_passed: int
    n_infra: int
    tcr: float | None
    total_cost_usd: float | None
    cost_per_run: float | None
    cost_per_pass: float | None
    infra_cost_usd: float | None
    mean_wall_s: float | None
    wall_per_pass: float | None
    mean_latency_s: float | None
    latency_per_pass: float | None
    tokens_in_total: int
    tokens_out_total: int
    mean_tokens_in: float | None
    mean_tokens_out: float | None
    cloud_cost_per_run: float | None = None
    cloud_cost_per_pass: float | None = None
    cost_basis: str = "self-hosted"


def _sum_count(cell: np.ndarray, x: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    ok = ~np.isnan(x)
    return np.bincount(cell[ok], x[ok], minlength=n_cells), np.bincount(cell[ok], minlength=n_cells)


def compute_cost(table: RunTable, *, infra_as_failure: bool,
                 costs: Mapping[str, np.ndarray] | None = None) -> dict[str, dict[str, CostStats]]:
    """Cost statistics for every model x (tiers present + overall).

    ``costs``: per-run costs by basis (:func:`run_costs`); without it, the recorded ``cost_usd``
    is the self-hosted figure and the cloud figure is unknown.
    """
    cols = {"cost_usd": table.cost_usd, "cloud_usd": np.full(table.n, np.nan)}
    if costs is not None:
        cols = {"cost_usd": costs["self-hosted"], "cloud_usd": costs["cloud GPU"]}
    scopes = scopes_of(table)
    n_s = len(scopes)
    n_cells = n_s * len(table.model_names)
    mask, passes = table.scored(infra_as_failure)
    rows, scope = expand_scopes(table, np.flatnonzero(mask))
    cell = table.model[rows] * n_s + scope
    n_runs = np.bincount(cell, minlength=n_cells)
    n_pass = np.bincount(cell, passes[rows], minlength=n_cells).astype(np.int64)
    col = {**{k: getattr(table, k) for k in ("wall_s", "latency_s", "tokens_in", "tokens_out")}, **cols}
    sums = {k: _sum_count(cell, col[k][rows], n_cells)
            for k in ("cost_usd", "cloud_usd", "wall_s", "latency_s", "tokens_in", "tokens_out")}
    irows, iscope = expand_scopes(table, np.flatnonzero(table.infra))
    icell = table.model[irows] * n_s + iscope
    n_infra = np.bincount(icell, minlength=n_cells)
    infra_cost, infra_known = _sum_count(icell, cols["cost_usd"][irows], n_cells)

    def mean(k: str, i: int) -> float | None:
        s, n = sums[k]
        return float(s[i] / n[i]) if n[i] else None

    def per_pass(k: str, i: int) -> float | None:
        # mean over runs with a known value / TCR (= total / passes when every value is known)
        s, n = sums[k]
        return float(s[i] / n[i] * n_runs[i] / n_pass[i]) if n_pass[i] and n[i] else None

    def total(k: str, i: int) -> float | None:
        s, n = sums[k]
        return float(s[i]) if n[i] else None

    out: dict[str, dict[str, CostStats]] = {}
    for mi, name in enumerate(table.model_names):
        out[name] = {}
        for si, sc in enumerate(scopes):
            i = mi * n_s + si
            out[name][sc] = CostStats(
                model=name, scope=sc, n_runs=int(n_runs[i]), n_passed=int(n_pass[i]), n_infra=int(n_infra[i]),
                tcr=float(n_pass[i] / n_runs[i]) if n_runs[i] else None,
                total_cost_usd=total("cost_usd", i),
                cost_per_run=mean("cost_usd", i), cost_per_pass=per_pass("cost_usd", i),
                infra_cost_usd=float(infra_cost[i]) if infra_known[i] else None,
                mean_wall_s=mean("wall_s", i), wall_per_pass=per_pass("wall_s", i),
                mean_latency_s=mean("latency_s", i), latency_per_pass=per_pass("latency_s", i),
                tokens_in_total=int(round(sums["tokens_in"][0][i])),
                tokens_out_total=int(round(sums["tokens_out"][0][i])),
                mean_tokens_in=mean("tokens_in", i), mean_tokens_out=mean("tokens_out", i),
                cloud_cost_per_run=mean("cloud_usd", i), cloud_cost_per_pass=per_pass("cloud_usd", i),
            )
    return out


def pareto_front(points: Mapping[str, tuple[float | None, float | None]]) -> list[str]:
    """Models not dominated on (cost per run: lower is better, TCR: higher is better).

    ``b`` dominates ``a`` iff ``cost_b <= cost_a`` and ``tcr_b >= tcr_a`` with at least one strict;
    identical points do not dominate each other. Points with a ``None`` coordinate are skipped.
    Returned in ascending cost, then descending TCR, then name.
    """
    names = sorted(n for n, (c, t) in points.items() if c is not None and t is not None)
    if not names:
        return []
    cost = np.array([points[n][0] for n in names], dtype=np.float64)
    tcr = np.array([points[n][1] for n in names], dtype=np.float64)
    le = cost[:, None] <= cost[None, :]  # [b, a]: b no costlier than a
    ge = tcr[:, None] >= tcr[None, :]
    strict = (cost[:, None] < cost[None, :]) | (tcr[:, None] > tcr[None, :])
    dominated = np.any(le & ge & strict, axis=0)
    keep = [i for i in range(len(names)) if not dominated[i]]
    keep.sort(key=lambda i: (cost[i], -tcr[i], names[i]))
    return [names[i] for i in keep]
