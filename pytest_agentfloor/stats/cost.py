"""Cost, latency and tokens per run and per passed task, and the cost/TCR Pareto set.

The denominators follow TCR: per-run figures average over the *scored* runs of a cell (infra
errors excluded unless ``infra_as_failure``), and per-pass figures divide the scored runs' total
by their passes, so ``cost_per_pass == cost_per_run / tcr`` holds exactly. What infra-error runs
cost is reported separately (``infra_cost_usd``) rather than silently charged to the model.
Missing numeric values (NaN) are left out of sums and means.

``cost_usd`` comes from each record: tokens times the per-token prices plus ``hourly_usd`` times
the time the model was busy serving the run (``busy_s``: the server's own processing time where
it reports one, else request latency), never the item's wall clock, so ``-n`` does not change it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .records import RunTable, expand_scopes, scopes_of


@dataclass(frozen=True, slots=True)
class CostStats:
    """Cost/latency/token summary of one (model, scope) cell; per-pass figures are ``None`` with 0 passes."""

    model: str
    scope: str
    n_runs: int
    n_passed: int
    n_infra: int
    tcr: float | None
    total_cost_usd: float
    cost_per_run: float | None
    cost_per_pass: float | None
    infra_cost_usd: float
    mean_wall_s: float | None
    wall_per_pass: float | None
    mean_latency_s: float | None
    latency_per_pass: float | None
    tokens_in_total: int
    tokens_out_total: int
    mean_tokens_in: float | None
    mean_tokens_out: float | None


def _sum_count(cell: np.ndarray, x: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    ok = ~np.isnan(x)
    return np.bincount(cell[ok], x[ok], minlength=n_cells), np.bincount(cell[ok], minlength=n_cells)


def compute_cost(table: RunTable, *, infra_as_failure: bool) -> dict[str, dict[str, CostStats]]:
    """Cost statistics for every model x (tiers present + overall)."""
    scopes = scopes_of(table)
    n_s = len(scopes)
    n_cells = n_s * len(table.model_names)
    mask, passes = table.scored(infra_as_failure)
    rows, scope = expand_scopes(table, np.flatnonzero(mask))
    cell = table.model[rows] * n_s + scope
    n_runs = np.bincount(cell, minlength=n_cells)
    n_pass = np.bincount(cell, passes[rows], minlength=n_cells).astype(np.int64)
    sums = {k: _sum_count(cell, getattr(table, k)[rows], n_cells)
            for k in ("cost_usd", "wall_s", "latency_s", "tokens_in", "tokens_out")}
    irows, iscope = expand_scopes(table, np.flatnonzero(table.infra))
    icell = table.model[irows] * n_s + iscope
    n_infra = np.bincount(icell, minlength=n_cells)
    infra_cost = _sum_count(icell, table.cost_usd[irows], n_cells)[0]

    def mean(k: str, i: int) -> float | None:
        s, n = sums[k]
        return float(s[i] / n[i]) if n[i] else None

    def per_pass(k: str, i: int) -> float | None:
        return float(sums[k][0][i] / n_pass[i]) if n_pass[i] else None

    out: dict[str, dict[str, CostStats]] = {}
    for mi, name in enumerate(table.model_names):
        out[name] = {}
        for si, sc in enumerate(scopes):
            i = mi * n_s + si
            out[name][sc] = CostStats(
                model=name, scope=sc, n_runs=int(n_runs[i]), n_passed=int(n_pass[i]), n_infra=int(n_infra[i]),
                tcr=float(n_pass[i] / n_runs[i]) if n_runs[i] else None,
                total_cost_usd=float(sums["cost_usd"][0][i]),
                cost_per_run=mean("cost_usd", i), cost_per_pass=per_pass("cost_usd", i),
                infra_cost_usd=float(infra_cost[i]),
                mean_wall_s=mean("wall_s", i), wall_per_pass=per_pass("wall_s", i),
                mean_latency_s=mean("latency_s", i), latency_per_pass=per_pass("latency_s", i),
                tokens_in_total=int(round(sums["tokens_in"][0][i])),
                tokens_out_total=int(round(sums["tokens_out"][0][i])),
                mean_tokens_in=mean("tokens_in", i), mean_tokens_out=mean("tokens_out", i),
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
