"""The repair quantities of one layer and the activation rule (seed 002, section 4.3, appendix I).

Notation: m(a, z) is a paired unit's mean success (over its runs) at pressure level z (0 = not
stressed, 1 = stressed) under intervention a ("none", the layer's repair, or a repair for another
layer run on the same cells). Per unit, in percentage points:

* assigned loss      L = m(none, 0) - m(none, 1)
* stress gain        G = m(rep, 1) - m(none, 1)                       (Gamma)
* selectivity        S = [m(rep, 1) - m(none, 1)] - [m(rep, 0) - m(none, 0)]   (Sigma)
* wrong-layer adv.   D = S(rep) - max_k S(k), k over the other repairs       (Delta)

Each is the mean over the units that hold every arm it needs (so it is paired). The no-repair
means cancel in D: it is the repair's change from z=0 to z=1 minus the best other repair's, and
ranges over +-200 pp. Seed 002's generic-rescue example (p0, p1, r) = (0.8, 0.4, 0.5) gives
L = 40, G = 30, S = 20 pp with no layer-specific mechanism (:func:`generic_rescue`), which is why
activation asks for S > 0 and the controller additionally for D > 0.

Intervals: 95% percentile cluster bootstrap (stats.bootstrap's documented draw, 10,000 draws,
seed 42), resampling clusters (families by default) with their units; D re-takes the max over the
other repairs in every replicate, so choosing the best competitor is part of its uncertainty.

Tests. Each quantity is tested one-sided, H0: quantity <= 0. Two p values are computed and the
larger is used, so no decision rests on a bootstrap distribution that collapsed because every
cluster agreed or because there is one cluster:

* bootstrap p: share of replicates <= 0 (ties count against the claim), floored at 1/B; with the
  order-statistic bounds of stats.bootstrap, p < a exactly when the one-sided bound at a is > 0;
* exact sign-flip p over cluster sums: T = sum_c s_c S_c for every sign vector s, p = share with
  T >= T_obs (ties included); it cannot go below 2^-C with C clusters (Monte Carlo with B seeded
  draws, p = (1 + hits) / (1 + B), beyond 16 clusters).

Activation (intersection-union test, Berger 1982): a layer's p is the largest of its p(L), p(G),
p(S) (and p(D) where D is required); Holm over the layers of one family (the four layers R, V, W,
D; the controller with its wrong-layer control); the repair activates when its Holm-adjusted p is
below alpha. With C clusters no layer can activate at alpha unless 2^-C < alpha / (family size):
with four layers at 5%, that takes 7 clusters whatever the data.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, resample_weights, tail_rank
from ...stats.multiplicity import holm

NO_REPAIR = "none"
QUANTITIES: tuple[str, ...] = ("L", "gamma", "sigma", "delta")
EXACT_FLIP_CLUSTERS = 16
_TOL = 1e-9

N = TypeVar("N", float, Fraction)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scored episode: its paired unit (e.g. model and family), resampling cluster (e.g. the
    family), intervention arm, pressure level and success (1/0; an infra failure is a 0)."""

    unit: str
    cluster: str
    arm: str
    stressed: bool
    success: float


@dataclass(frozen=True, slots=True)
class Estimate:
    """One quantity in pp with its two-sided interval and guarded one-sided p (H0: <= 0).

    `lo`/`hi` are None with fewer than two clusters (one cluster cannot be resampled); `collapsed`
    says every cluster gave the same value, so the interval's zero width is not information."""

    pp: float | None
    lo: float | None
    hi: float | None
    p: float
    p_boot: float
    p_flip: float
    units: int
    clusters: int
    collapsed: bool


@dataclass(frozen=True, slots=True)
class LayerRepair:
    layer: str
    repair: str
    L: Estimate
    gamma: Estimate
    sigma: Estimate
    delta: Estimate | None
    best_other: str | None  # the other repair with the largest selectivity (point estimate)

    def quantity(self, name: str) -> Estimate | None:
        return {"L": self.L, "gamma": self.gamma, "sigma": self.sigma, "delta": self.delta}[name]


@dataclass(frozen=True, slots=True)
class Activation:
    layer: str
    p_iut: float
    p_holm: float
    active: bool
    tested: tuple[str, ...]


def generic_rescue(p0: N, p1: N, r: N) -> tuple[N, N, N]:
    """(L, G, S) in pp for a repair that rescues a share r of all failures whatever their layer:
    q_z = p_z + r (1 - p_z). Exact for exact inputs (Fraction)."""
    q0, q1 = p0 + r * (1 - p0), p1 + r * (1 - p1)
    return 100 * (p0 - p1), 100 * (q1 - p1), 100 * ((q1 - p1) - (q0 - p0))


_Cells = dict[str, dict[tuple[str, bool], float]]


def unit_means(outcomes: Iterable[Outcome]) -> tuple[_Cells, dict[str, str]]:
    """unit -> {(arm, stressed): mean success}, and unit -> cluster (a unit lies in one cluster)."""
    acc: dict[str, dict[tuple[str, bool], list[float]]] = defaultdict(lambda: defaultdict(list))
    cluster: dict[str, str] = {}
    for o in outcomes:
        if cluster.setdefault(o.unit, o.cluster) != o.cluster:
            raise ValueError(f"unit {o.unit!r} lies in two clusters ({cluster[o.unit]!r}, {o.cluster!r})")
        acc[o.unit][(o.arm, bool(o.stressed))].append(float(o.success))
    return {u: {k: sum(v) / len(v) for k, v in cells.items()} for u, cells in acc.items()}, cluster


def _flip_p(sums: np.ndarray, *, n_boot: int, seed: int) -> float:
    """One-sided sign-flip p of T = sum(sums) (module doc)."""
    c = sums.size
    obs = float(sums.sum())
    if c <= EXACT_FLIP_CLUSTERS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=c)))
        return float(np.mean(signs @ sums >= obs - _TOL))
    signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_boot, c))
    return float((1 + np.sum(signs @ sums >= obs - _TOL)) / (1 + n_boot))


def _summed(values: Mapping[str, float], cluster: Mapping[str, str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    names = sorted({cluster[u] for u in values})
    pos = {n: i for i, n in enumerate(names)}
    sums, counts = np.zeros(len(names)), np.zeros(len(names))
    for u, v in values.items():
        sums[pos[cluster[u]]] += v
        counts[pos[cluster[u]]] += 1
    return names, sums, counts


def _replicates(sums: np.ndarray, counts: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    w = resample_weights(sums.size, n_boot, seed)
    return (w @ sums) / (w @ counts)  # every drawn cluster holds >= 1 unit, so the denominator is > 0


def _estimate(est: float | None, reps: np.ndarray | None, flip_sums: np.ndarray, units: int, *,
              n_boot: int, seed: int, confidence: float) -> Estimate:
    clusters = int(flip_sums.size)
    if est is None or reps is None or units == 0:
        return Estimate(None, None, None, 1.0, 1.0, 1.0, 0, 0, False)
    p_boot = max(1.0 / n_boot, float(np.mean(reps <= _TOL)))
    p_flip = _flip_p(flip_sums, n_boot=n_boot, seed=seed)
    lo = hi = None
    if clusters >= 2:
        s = np.sort(reps)
        k = tail_rank(n_boot, (1 - confidence) / 2)
        lo, hi = float(s[k - 1]), float(s[n_boot - k])
    collapsed = bool(np.ptp(reps) <= _TOL)
    return Estimate(est, lo, hi, max(p_boot, p_flip), p_boot, p_flip, units, clusters, collapsed)


def _mean_estimate(values: Mapping[str, float], cluster: Mapping[str, str], *, n_boot: int, seed: int,
                   confidence: float) -> Estimate:
    if not values:
        return _estimate(None, None, np.zeros(0), 0, n_boot=n_boot, seed=seed, confidence=confidence)
    _, sums, counts = _summed(values, cluster)
    est = 100.0 * float(sums.sum()) / float(counts.sum())  # exact for counts: 100 * k / n
    reps = 100.0 * _replicates(sums, counts, n_boot, seed)
    return _estimate(est, reps, sums, len(values), n_boot=n_boot, seed=seed, confidence=confidence)


def _sel(c: Mapping[tuple[str, bool], float], arm: str) -> float:
    return (c[(arm, True)] - c[(NO_REPAIR, True)]) - (c[(arm, False)] - c[(NO_REPAIR, False)])


def _has(c: Mapping[tuple[str, bool], float], arms: Iterable[str]) -> bool:
    return all((a, z) in c for a in arms for z in (False, True))


def layer_repair(outcomes: Iterable[Outcome], *, layer: str, repair: str, others: Sequence[str] = (),
                 n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED, confidence: float = 0.95) -> LayerRepair:
    """L, G, S (and D when `others` are given) for one layer's repair, in pp (module doc)."""
    if repair == NO_REPAIR or repair in others:
        raise ValueError(f"repair {repair!r}: must differ from {NO_REPAIR!r} and from the other repairs")
    cells, cluster = unit_means(outcomes)
    four = {u: c for u, c in cells.items() if _has(c, (NO_REPAIR, repair))}
    kw: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "confidence": confidence}
    L = _mean_estimate({u: c[(NO_REPAIR, False)] - c[(NO_REPAIR, True)] for u, c in four.items()}, cluster, **kw)
    G = _mean_estimate({u: c[(repair, True)] - c[(NO_REPAIR, True)] for u, c in four.items()}, cluster, **kw)
    S = _mean_estimate({u: _sel(c, repair) for u, c in four.items()}, cluster, **kw)
    delta, best = None, None
    if others:
        full = {u: c for u, c in four.items() if _has(c, others)}
        if not full:
            delta = _estimate(None, None, np.zeros(0), 0, **kw)
        else:
            own = {u: _sel(c, repair) for u, c in full.items()}
            names, own_sums, counts = _summed(own, cluster)
            alt = {k: _summed({u: _sel(c, k) for u, c in full.items()}, cluster)[1] for k in others}
            best = max(others, key=lambda k: (float(alt[k].sum()), -others.index(k)))  # ties: the first named
            w = resample_weights(len(names), n_boot, seed)
            den = w @ counts
            reps = 100.0 * ((w @ own_sums) - np.max(np.stack([w @ alt[k] for k in others]), axis=0)) / den
            est = 100.0 * float(own_sums.sum() - alt[best].sum()) / float(counts.sum())
            delta = _estimate(est, reps, own_sums - alt[best], len(full), **kw)
    return LayerRepair(layer, repair, L, G, S, delta, best)


def activation(layers: Mapping[str, LayerRepair], *, alpha: float = 0.05,
               require_delta: Collection[str] = ()) -> dict[str, Activation]:
    """The intersection-union test per layer and Holm over the family `layers` (module doc)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha:g}")
    names = list(layers)
    missing = [n for n in require_delta if n not in layers]
    if missing:
        raise ValueError(f"require_delta names layers not in the family: {', '.join(missing)}")
    tested = {n: ("L", "gamma", "sigma") + (("delta",) if n in require_delta else ()) for n in names}
    p_iut = []
    for n in names:
        ests = [layers[n].quantity(q) for q in tested[n]]
        p_iut.append(max(1.0 if e is None else e.p for e in ests))
    adj = holm(p_iut) if names else np.zeros(0)
    return {n: Activation(n, p, float(a), bool(a < alpha), tested[n]) for n, p, a in zip(names, p_iut, adj)}


def as_dict(lr: LayerRepair, act: Activation | None = None) -> dict[str, Any]:
    """JSON-ready (summary.json) form of one layer's quantities and its activation."""
    out: dict[str, Any] = {"layer": lr.layer, "repair": lr.repair, "best_other": lr.best_other}
    for q in QUANTITIES:
        e = lr.quantity(q)
        out[q] = None if e is None else {k: getattr(e, k) for k in Estimate.__slots__}
    if act is not None:
        out.update({"p_iut": act.p_iut, "p_holm": act.p_holm, "active": act.active})
    return out
