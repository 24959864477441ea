"""Repairs versus configuration switches (seed 002): fix the harness, or change the model?

For each incumbent configuration i and each repair a run on it, every other configuration j
(the switch: another served model and route, harness unchanged, no repair) is compared with
(i, a) on the same stressed cells, paired on the units both hold (a unit is one stressed cell of
one family; clusters are families):

* success-superior: the 95% paired cluster-bootstrap interval of success(i, a) - success(j) lies
  above zero for every switch j;
* cost-superior: the interval of cost(i, a) - cost(j) lies below zero for every switch j;
* Pareto-nondominated: no switch is at least as good on success, tokens, wall time and cost and
  strictly better on one (point estimates: means over the paired units).

A cost that is unknown (a configuration without pricing: NaN) is never read as $0: the cost
interval is then None, no cost claim is made, and dominance is judged on success, tokens and wall
time (`cost_known` says which).

A claim needs at least one switch. Guard (ours, as in `quantities`): an interval certifies only
when the exact sign-flip test over cluster sums could reject at the interval's tail, so fewer than
six clusters (2^-C >= 0.025) never certify superiority, however unanimous they are.
Counts per repair are the paper's: (success-superior, nondominated, cost-superior) of the
incumbents that ran the repair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ...stats.pressure import cluster_bootstrap
from .quantities import NO_REPAIR, _flip_p

METRICS: tuple[str, ...] = ("success", "tokens", "wall_s", "cost")


@dataclass(frozen=True, slots=True)
class CellRun:
    """One episode on a stressed cell: configuration, arm (NO_REPAIR or a repair), unit, cluster."""

    config: str
    arm: str
    unit: str
    cluster: str
    success: float
    tokens: float = 0.0
    wall_s: float = 0.0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Versus:
    switch: str
    units: int
    clusters: int
    success_pp: float
    success_lo: float
    success_hi: float
    cost_diff: float | None  # None: a cost on either side is unknown
    cost_lo: float | None
    cost_hi: float | None
    dominates: bool  # the switch dominates the repair on the four metrics (point estimates)
    above: bool  # the success interval lies above zero (and the guard allows a claim)
    below: bool  # the cost interval lies below zero (and the guard allows a claim)
    cost_known: bool = True  # False: dominance was judged without cost


@dataclass(frozen=True, slots=True)
class RepairVsSwitches:
    incumbent: str
    repair: str
    versus: tuple[Versus, ...]
    success_superior: bool
    cost_superior: bool
    nondominated: bool


def _means(rows: Iterable[CellRun]) -> dict[str, tuple[str, np.ndarray]]:
    acc: dict[str, list[CellRun]] = defaultdict(list)
    for r in rows:
        acc[r.unit].append(r)
    return {u: (rs[0].cluster, np.array([[getattr(r, m) for m in METRICS] for r in rs]).mean(axis=0))
            for u, rs in acc.items()}


def _certifies(diffs: np.ndarray, clusters: list[str], tail: float, n_boot: int, seed: int, sign: float) -> bool:
    names = sorted(set(clusters))
    sums = np.array([sum(sign * d for d, c in zip(diffs, clusters) if c == n) for n in names])
    return len(names) >= 2 and _flip_p(sums, n_boot=n_boot, seed=seed) < tail


def compare(runs: Iterable[CellRun], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
            confidence: float = 0.95) -> list[RepairVsSwitches]:
    """Every (incumbent, repair) against every switch (module doc), incumbents and repairs sorted."""
    by: dict[tuple[str, str], list[CellRun]] = defaultdict(list)
    for r in runs:
        by[(r.config, r.arm)].append(r)
    means = {k: _means(v) for k, v in by.items()}
    configs = sorted({c for c, a in by if a == NO_REPAIR})
    tail = (1 - confidence) / 2
    out = []
    for inc, arm in sorted(k for k in by if k[1] != NO_REPAIR):
        mine = means[(inc, arm)]
        vs = []
        for sw in configs:
            if sw == inc:
                continue
            theirs = means[(sw, NO_REPAIR)]
            units = sorted(set(mine) & set(theirs))
            if not units:
                continue
            cl = [mine[u][0] for u in units]
            a = np.array([mine[u][1] for u in units])
            b = np.array([theirs[u][1] for u in units])
            ds, dc = 100.0 * (a[:, 0] - b[:, 0]), a[:, 3] - b[:, 3]
            s_est, s_lo, s_hi, _ = cluster_bootstrap(ds, cl, n_boot=n_boot, seed=seed, level=confidence)
            ok_s = _certifies(ds, cl, tail, n_boot, seed, 1.0)
            cost_known = not np.isnan(dc).any()
            c_est = c_lo = c_hi = None
            below = False
            if cost_known:
                c_est, c_lo, c_hi, _ = cluster_bootstrap(dc, cl, n_boot=n_boot, seed=seed, level=confidence)
                below = _certifies(dc, cl, tail, n_boot, seed, -1.0) and c_hi < 0
            ma, mb = a.mean(axis=0), b.mean(axis=0)
            better = [mb[0] - ma[0]] + [ma[k] - mb[k] for k in ((1, 2, 3) if cost_known else (1, 2))]
            dominates = all(x >= -1e-12 for x in better) and any(x > 1e-12 for x in better)  # >= 0: as good
            vs.append(Versus(sw, len(units), len(set(cl)), s_est, s_lo, s_hi, c_est, c_lo, c_hi, dominates,
                             above=ok_s and s_lo > 0, below=below, cost_known=cost_known))
        out.append(RepairVsSwitches(inc, arm, tuple(vs), success_superior=bool(vs) and all(v.above for v in vs),
                                    cost_superior=bool(vs) and all(v.below for v in vs),
                                    nondominated=bool(vs) and not any(v.dominates for v in vs)))
    return out


def counts(results: Sequence[RepairVsSwitches]) -> dict[str, dict[str, int]]:
    """Per repair: success-superior, nondominated and cost-superior incumbents, of how many."""
    out: dict[str, dict[str, int]] = {}
    for r in results:
        c = out.setdefault(r.repair, {"success_superior": 0, "nondominated": 0, "cost_superior": 0, "of": 0})
        c["of"] += 1
        c["success_superior"] += r.success_superior
        c["nondominated"] += r.nondominated
        c["cost_superior"] += r.cost_superior
    return out
