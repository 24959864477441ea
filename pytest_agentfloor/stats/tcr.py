"""Task completion rate (TCR) per (model, tier) and per model overall, with bootstrap CIs.

Infra-error runs are the endpoint's fault, not the model's: by default they are left out of
TCR and counted in ``n_infra``; ``infra_as_failure=True`` scores them as failed runs instead.
See :mod:`.bootstrap` for the resampling construction; the unit is chosen by ``cluster``:

* ``"unit"`` (default, ``None``): the (variant, instance, run) tuple. Within a tier cell a unit
  holds that tuple's run of every task of the tier; in the overall cell, of every task. This is
  the AgentFloor (variant, run_idx) unit extended by the instance variant.
* ``"task"``: the task (task-cluster bootstrap; overall resamples all tasks, unstratified).
* ``"run"``: every run on its own (iid Bernoulli bootstrap).

Interval method (see :mod:`.intervals`): ``"guarded"`` (default) reports the hull of the
percentile bootstrap interval and the Wilson score interval of ``n_passed / n_runs`` at the same
level; ``"paper"`` reports the plain percentile bootstrap. Both raw intervals are kept.

Reliability of the endpoint: ``infra_share`` is the share of a cell's runs that ended in an
infrastructure error; above ``infra_threshold`` the cell is ``unreliable`` (an endpoint that
mostly failed cannot buy a good TCR by having its failures excluded). Both readings of TCR are
kept: infra errors excluded, and counted as failures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bootstrap import bootstrap_sums, cluster_sums, order_bounds, ratio_replicates
from .intervals import wilson
from .records import Cluster, RunTable, expand_scopes, scopes_of


@dataclass(frozen=True, slots=True)
class TcrEstimate:
    """TCR of one (model, scope) cell; ``tcr``/CI are fractions in [0, 1], ``None`` if no scored run."""

    model: str
    scope: str
    n_runs: int
    n_passed: int
    n_infra: int
    n_units: int
    tcr: float | None
    ci_low: float | None
    ci_high: float | None
    boot_low: float | None = None
    boot_high: float | None = None
    wilson_low: float | None = None
    wilson_high: float | None = None
    interval_method: str = "guarded"
    infra_share: float | None = None
    unreliable: bool = False
    tcr_infra_excluded: float | None = None
    tcr_infra_as_failure: float | None = None


DEFAULT_INFRA_THRESHOLD = 0.05


def compute_tcr(table: RunTable, *, n_boot: int, seed: int, cluster: Cluster, infra_as_failure: bool,
                alpha: float = 0.05, interval_method: str = "guarded",
                infra_threshold: float = DEFAULT_INFRA_THRESHOLD) -> dict[str, dict[str, TcrEstimate]]:
    """TCR with a two-sided ``1 - alpha`` CI (see module doc) for every model x (tiers present + overall)."""
    scopes = scopes_of(table)
    n_scopes, n_models = len(scopes), len(table.model_names)
    n_cells = n_scopes * n_models
    mask, passes = table.scored(infra_as_failure)

    rows, scope = expand_scopes(table, np.flatnonzero(mask))
    cell = table.model[rows] * n_scopes + scope
    cs = cluster_sums(cell, table.unit_code(cluster)[rows], passes[rows].astype(np.float64), None, n_cells)
    n_pass, n_runs = (np.rint(t).astype(np.int64) for t in cs.totals)
    n_units = cs.n_units

    irows, iscope = expand_scopes(table, np.flatnonzero(table.infra))
    n_infra = np.bincount(table.model[irows] * n_scopes + iscope, minlength=n_cells)

    s_num, s_den = bootstrap_sums(cs, n_boot, seed)
    reps = np.sort(ratio_replicates(s_num, s_den), axis=0)
    b_low, b_high = order_bounds(reps, alpha / 2)
    w_low, w_high = wilson(n_pass, n_runs, alpha / 2)
    if interval_method == "paper":
        low, high = b_low, b_high
    else:
        low, high = np.fmin(b_low, w_low), np.fmax(b_high, w_high)

    out: dict[str, dict[str, TcrEstimate]] = {}
    for mi, name in enumerate(table.model_names):
        out[name] = {}
        for si, sc in enumerate(scopes):
            c = mi * n_scopes + si
            has = n_runs[c] > 0
            n_real = n_runs[c] - (n_infra[c] if infra_as_failure else 0)  # runs that reached a verdict
            n_all = n_real + n_infra[c]
            share = float(n_infra[c] / n_all) if n_all else None
            out[name][sc] = TcrEstimate(
                model=name, scope=sc, n_runs=int(n_runs[c]), n_passed=int(n_pass[c]), n_infra=int(n_infra[c]),
                n_units=int(n_units[c]),
                tcr=float(n_pass[c] / n_runs[c]) if has else None,
                ci_low=float(low[c]) if has else None,
                ci_high=float(high[c]) if has else None,
                boot_low=float(b_low[c]) if has else None, boot_high=float(b_high[c]) if has else None,
                wilson_low=float(w_low[c]) if has else None, wilson_high=float(w_high[c]) if has else None,
                interval_method=interval_method, infra_share=share,
                unreliable=bool(share is not None and share > infra_threshold + 1e-12),
                tcr_infra_excluded=float(n_pass[c] / n_real) if n_real else None,
                tcr_infra_as_failure=float(n_pass[c] / n_all) if n_all else None,
            )
    return out
