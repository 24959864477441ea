"""Holm–Bonferroni step-down adjustment.

Holm controls the family-wise error rate under any dependence between the tests, which matters
here: all (model, tier) comparisons share the same reference runs (and the same resampling draws).
Note that ``scipy.stats.false_discovery_control`` is Benjamini–Hochberg/Yekutieli (FDR), not Holm.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values in the input order.

    With ``p_(1) <= ... <= p_(m)``, ``adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))``; reject
    ``H_(i)`` at family-wise level ``alpha`` iff ``adj_(i) < alpha`` (equivalently ``<=``, up to ties).
    Ties keep input order (stable sort), which does not change the adjusted values.
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    if p.size == 0:
        return p.copy()
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("p-values must be in [0, 1] and not NaN")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted
