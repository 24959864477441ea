"""Repeated-run reliability: pass@k and pass^k over items run several times.

An *item* is a (task, variant, instance) triple; its repeated runs (run index) are exchangeable
draws. With ``n`` scored runs of which ``c`` passed:

* pass@k = 1 - C(n - c, k) / C(n, k): chance that at least one of k runs drawn without
  replacement passes (the unbiased estimator of Chen et al., 2021);
* pass^k = C(c, k) / C(n, k): chance that all k drawn runs pass (tau-bench's reliability metric).

Both are averaged over the items of a (model, scope) cell, for k = 1 .. the largest ``n`` in the
cell; an item enters the average at k only if ``n >= k`` (``n_items`` reports how many did).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import RunTable, expand_scopes, scopes_of


def _ratio_curve(a: np.ndarray, n: np.ndarray, k_max: int) -> np.ndarray:
    """``C(a, k) / C(n, k)`` for k = 1..k_max as a ``(items, k_max)`` array; NaN where ``k > n``.

    Uses the product form ``prod_{i<k} (a - i) / (n - i)`` (cumulative product over i), exact
    enough for small counts and free of large binomials.
    """
    i = np.arange(k_max)
    num = np.clip(a[:, None] - i, 0, None).astype(np.float64)
    den = (n[:, None] - i).astype(np.float64)
    valid = den > 0
    out = np.cumprod(np.where(valid, num / np.where(valid, den, 1.0), 1.0), axis=1)
    return np.where(valid, out, np.nan)


def pass_at_k(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray | float:
    """Unbiased pass@k per item (``n`` runs, ``c`` passes); NaN if ``k > n``."""
    n_a, c_a = np.atleast_1d(n).astype(np.int64), np.atleast_1d(c).astype(np.int64)
    if k < 1 or (c_a > n_a).any() or (c_a < 0).any():
        raise ValueError("need k >= 1 and 0 <= c <= n")
    res = 1.0 - _ratio_curve(n_a - c_a, n_a, k)[:, k - 1]
    return float(res[0]) if np.ndim(n) == 0 and np.ndim(c) == 0 else res


def pass_hat_k(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray | float:
    """pass^k per item: probability that k runs drawn without replacement all pass; NaN if ``k > n``."""
    n_a, c_a = np.atleast_1d(n).astype(np.int64), np.atleast_1d(c).astype(np.int64)
    if k < 1 or (c_a > n_a).any() or (c_a < 0).any():
        raise ValueError("need k >= 1 and 0 <= c <= n")
    res = _ratio_curve(c_a, n_a, k)[:, k - 1]
    return float(res[0]) if np.ndim(n) == 0 and np.ndim(c) == 0 else res


@dataclass(frozen=True, slots=True)
class KPoint:
    k: int
    n_items: int
    pass_at_k: float
    pass_hat_k: float


@dataclass(frozen=True, slots=True)
class ReliabilityCurve:
    """pass@k and pass^k of one (model, scope) cell for k = 1..max_runs."""

    model: str
    scope: str
    n_items: int
    max_runs: int
    points: tuple[KPoint, ...]


def compute_reliability(table: RunTable, *, infra_as_failure: bool) -> dict[str, dict[str, ReliabilityCurve]]:
    """pass@k / pass^k curves per model x (tiers present + overall), over scored runs."""
    scopes = scopes_of(table)
    n_s, n_models = len(scopes), len(table.model_names)
    mask, passes = table.scored(infra_as_failure)
    rows = np.flatnonzero(mask)
    g = table.group_key()[rows]
    span = int(g.max()) + 1 if g.size else 1
    items, first, inv = np.unique(table.model[rows] * span + g, return_index=True, return_inverse=True)
    inv = inv.ravel()
    n = np.bincount(inv, minlength=items.size)
    c = np.bincount(inv, passes[rows], minlength=items.size).astype(np.int64)
    item_rows = rows[first]  # one representative run per item, for its model and tier
    rep_rows, scope = expand_scopes(table, item_rows)
    cell = table.model[rep_rows] * n_s + scope
    n2, c2 = np.concatenate([n, n]), np.concatenate([c, c])
    n_cells = n_s * n_models
    k_max_all = int(n.max()) if n.size else 0

    at = 1.0 - _ratio_curve(n2 - c2, n2, k_max_all)  # (items, 0) when nothing was scored
    hat = _ratio_curve(c2, n2, k_max_all)
    cnt = np.zeros((n_cells, k_max_all), dtype=np.int64)
    s_at = np.zeros((n_cells, k_max_all))
    s_hat = np.zeros((n_cells, k_max_all))
    for j in range(k_max_all):  # loop over k only (<= runs per item)
        ok = ~np.isnan(hat[:, j])
        cnt[:, j] = np.bincount(cell[ok], minlength=n_cells)
        s_at[:, j] = np.bincount(cell[ok], at[ok, j], minlength=n_cells)
        s_hat[:, j] = np.bincount(cell[ok], hat[ok, j], minlength=n_cells)
    cell_items = np.bincount(cell, minlength=n_cells)
    cell_kmax = np.zeros(n_cells, dtype=np.int64)
    if cell.size:
        np.maximum.at(cell_kmax, cell, n2)

    out: dict[str, dict[str, ReliabilityCurve]] = {}
    for mi, name in enumerate(table.model_names):
        out[name] = {}
        for si, sc in enumerate(scopes):
            ci = mi * n_s + si
            km = int(cell_kmax[ci])
            # every k <= km has at least the cell's longest-running item, so cnt[ci, j] >= 1
            pts = tuple(
                KPoint(k=j + 1, n_items=int(cnt[ci, j]), pass_at_k=float(s_at[ci, j] / cnt[ci, j]),
                       pass_hat_k=float(s_hat[ci, j] / cnt[ci, j]))
                for j in range(km)
            )
            out[name][sc] = ReliabilityCurve(model=name, scope=sc, n_items=int(cell_items[ci]), max_runs=km, points=pts)
    return out
