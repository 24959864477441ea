"""Vectorised cluster bootstrap of ratio statistics (TCR, paired differences).

Construction (used for every interval in this package)
-------------------------------------------------------
A *cell* (e.g. one model on one tier) is a set of observations, each carrying a numerator
value (pass = 1/0, or a paired difference in {-1, 0, +1}) and a denominator weight (1). The
observations are grouped into resampling *units* (clusters); unit ``u`` contributes the sums
``num_u`` and ``den_u``. The point estimate is the pooled ratio ``sum(num) / sum(den)``, i.e. the
plain mean over observations. One bootstrap replicate draws ``U`` units with replacement (``U`` =
number of units in the cell) and recomputes the pooled ratio over the drawn units, counting a
unit once per draw. When every unit holds the same number of observations (the balanced design)
this equals the mean of the drawn unit means, so the unit's "value" is the mean pass over the
cell's observations in that unit; the pooled form also stays correct when infra exclusions make
units unequal.

Random numbers: for a cell with ``U`` units, replicate ``b`` uses row ``b`` of
``numpy.random.default_rng(seed).integers(0, U, size=(n_boot, U))`` (indices into the units in
ascending unit-id order). The draw therefore depends only on ``(seed, n_boot, U)``: cells of
equal size share one index matrix (computed once, applied to all of them by one matrix product),
and adding or removing a model never changes another model's interval.

Interval bounds are order statistics. With ``B`` replicates and tail probability ``a``,
``k = ceil(a * B)``; the lower bound is the ``k``-th smallest replicate and the upper bound the
``k``-th largest (the inverted-CDF percentile applied to each tail). This makes the decision
"lower bound > t" *exactly* equivalent to "fraction of replicates <= t is below a", which is how
the bootstrap p-values in :mod:`.paired` are defined, so intervals and p-values never disagree.
It differs from numpy's default linear interpolation by at most one order-statistic step.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DEFAULT_N_BOOT = 10_000
DEFAULT_SEED = 42
_MAX_CHUNK_ELEMS = 1 << 21  # bound on the index block (rows x units) generated at once


def _weight_chunks(n_units: int, n_boot: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, W)`` where ``W[b, u]`` counts draws of unit ``u`` in replicate ``first_row + b``.

    Large ``U`` is generated in row blocks from one generator, which yields the same stream as a
    single ``integers(size=(n_boot, U))`` call, so memory stays bounded without changing results.
    """
    rng = np.random.default_rng(seed)
    step = max(1, _MAX_CHUNK_ELEMS // n_units)
    for start in range(0, n_boot, step):
        rows = min(step, n_boot - start)
        idx = rng.integers(0, n_units, size=(rows, n_units))
        idx += (np.arange(rows, dtype=np.int64) * n_units)[:, None]
        counts = np.bincount(idx.ravel(), minlength=rows * n_units)
        yield start, counts.reshape(rows, n_units).astype(np.float64)


def resample_weights(n_units: int, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Multiplicity matrix ``(n_boot, n_units)`` of the documented index draw (for inspection/tests)."""
    if n_units < 1 or n_boot < 1:
        raise ValueError("n_units and n_boot must be >= 1")
    return np.concatenate([w for _, w in _weight_chunks(n_units, n_boot, seed)], axis=0)


@dataclass(frozen=True, eq=False)
class ClusterSums:
    """Per-(cell, unit) sums, rows sorted by cell then unit id (so units of a cell are contiguous)."""

    cell: np.ndarray
    num: np.ndarray
    den: np.ndarray
    n_cells: int

    @property
    def n_units(self) -> np.ndarray:
        return np.bincount(self.cell, minlength=self.n_cells)

    @property
    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Observed ``(sum num, sum den)`` per cell."""
        return (np.bincount(self.cell, self.num, minlength=self.n_cells),
                np.bincount(self.cell, self.den, minlength=self.n_cells))


def cluster_sums(cell: np.ndarray, unit: np.ndarray, num: np.ndarray, den: np.ndarray | None,
                 n_cells: int) -> ClusterSums:
    """Collapse observations to unit sums; ``unit`` ids need only be unique within a cell."""
    cell = np.asarray(cell, dtype=np.int64)
    num = np.asarray(num, dtype=np.float64)
    den = np.ones_like(num) if den is None else np.asarray(den, dtype=np.float64)
    if cell.size == 0:
        e = np.empty(0)
        return ClusterSums(np.empty(0, dtype=np.int64), e, e, n_cells)
    unit = np.asarray(unit, dtype=np.int64)
    span = int(unit.max()) + 1
    uniq, inv = np.unique(cell * span + unit, return_inverse=True)
    inv = inv.ravel()
    return ClusterSums(uniq // span, np.bincount(inv, num), np.bincount(inv, den), n_cells)


def bootstrap_sums(cs: ClusterSums, n_boot: int = DEFAULT_N_BOOT,
                   seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Resampled ``(sum num, sum den)``, each ``(n_boot, n_cells)``; empty cells stay 0.

    All cells with the same number of units are stacked into one ``(U, m)`` matrix and multiplied
    by the shared ``(n_boot, U)`` multiplicity matrix: one BLAS call per distinct ``U``.
    Integer-valued inputs give exact (order-independent) sums.
    """
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    s_num = np.zeros((n_boot, cs.n_cells))
    s_den = np.zeros((n_boot, cs.n_cells))
    n_units = cs.n_units
    offsets = np.concatenate([[0], np.cumsum(n_units)[:-1]]).astype(np.int64)
    for u in np.unique(n_units[n_units > 0]):
        u = int(u)
        cells = np.flatnonzero(n_units == u)
        rows = offsets[cells][None, :] + np.arange(u)[:, None]  # (U, m)
        m = cells.size
        stacked = np.concatenate([cs.num[rows], cs.den[rows]], axis=1)
        for start, w in _weight_chunks(u, n_boot, seed):
            out = w @ stacked
            stop = start + w.shape[0]
            s_num[start:stop, cells] = out[:, :m]
            s_den[start:stop, cells] = out[:, m:]
    return s_num, s_den


def tail_rank(n_boot: int, tail: float) -> int:
    """``k = ceil(tail * B)`` (at least 1): the order statistic used for a bound with that tail."""
    if not 0 < tail < 1:
        raise ValueError("tail probability must be in (0, 1)")
    return max(1, math.ceil(tail * n_boot - 1e-9))


def order_bounds(sorted_reps: np.ndarray, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper bounds (k-th smallest / k-th largest, see module doc) of replicates sorted on axis 0."""
    b = sorted_reps.shape[0]
    k = tail_rank(b, tail)
    return sorted_reps[k - 1], sorted_reps[b - k]


def ratio_replicates(s_num: np.ndarray, s_den: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``scale * s_num / s_den`` with NaN where the denominator is 0 (empty cells).

    Empty denominators are divided as 1.0 and then masked, so no 0/0 warning ever reaches the user.
    """
    return np.where(s_den > 0, scale * s_num / np.where(s_den > 0, s_den, 1.0), np.nan)


@dataclass(frozen=True, slots=True)
class RatioCI:
    """Point estimate and two-sided percentile interval of a pooled ratio."""

    estimate: float | None
    low: float | None
    high: float | None
    n_units: int


def ratio_ci(num_u: np.ndarray, den_u: np.ndarray | None = None, *, n_boot: int = DEFAULT_N_BOOT,
             seed: int = DEFAULT_SEED, confidence: float = 0.95) -> RatioCI:
    """Cluster-bootstrap CI of ``sum(num)/sum(den)`` for one cell given its unit sums."""
    num_u = np.asarray(num_u, dtype=np.float64).ravel()
    den_u = np.ones_like(num_u) if den_u is None else np.asarray(den_u, dtype=np.float64).ravel()
    if num_u.size == 0 or den_u.sum() <= 0:
        return RatioCI(None, None, None, int(num_u.size))
    cs = ClusterSums(np.zeros(num_u.size, dtype=np.int64), num_u, den_u, 1)
    s_num, s_den = bootstrap_sums(cs, n_boot, seed)
    reps = np.sort(ratio_replicates(s_num, s_den)[:, 0])
    lo, hi = order_bounds(reps, (1 - confidence) / 2)
    return RatioCI(float(num_u.sum() / den_u.sum()), float(lo), float(hi), int(num_u.size))


def mean_ci(values: np.ndarray, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
            confidence: float = 0.95) -> RatioCI:
    """Percentile bootstrap CI of a plain mean (every value its own unit)."""
    return ratio_ci(np.asarray(values, dtype=np.float64), None, n_boot=n_boot, seed=seed, confidence=confidence)
