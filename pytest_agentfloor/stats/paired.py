"""Paired comparison of each model against a reference model.

Pairing: inner join of scored runs on (task, variant, instance, run). Runs present on one side
only (including runs whose counterpart was an excluded infra error) are reported as
``n_unpaired_model`` / ``n_unpaired_ref`` and otherwise ignored.

Effect: ``delta_pp = 100 * (TCR_model - TCR_ref)`` over the pairs, i.e. the mean paired
difference ``d = pass_model - pass_ref`` in {-1, 0, +1}, in percentage points.

Bootstrap of delta: the pairs are clustered by the same resampling unit as TCR (default the
(variant, instance, run) tuple, so all tasks' pairs of one tuple move together; ``"task"`` clusters
pairs by task; ``"run"`` resamples individual pairs) and the pooled mean of ``d`` is recomputed
per replicate, exactly as in :mod:`.bootstrap`.

Decisions at margin ``m`` (pp) and level ``alpha`` (default 0.05):

* non-inferiority: the one-sided ``1 - alpha`` lower bound (5th percentile) is ``> -m``;
* TOST equivalence: the ``1 - 2*alpha`` (90 %) interval lies inside ``(-m, +m)``.

Bootstrap p-values (test inversion of those percentile bounds):
``p_lower = #{delta* <= -m} / B`` for H0: delta <= -m, ``p_upper = #{delta* >= +m} / B`` for
H0: delta >= +m; ``p_noninferiority = p_lower`` and ``p_equivalence = max(p_lower, p_upper)``
(the TOST p-value). With the order-statistic bounds of :mod:`.bootstrap`, "bound clears the
margin" and "p < alpha" are the same event, so Holm-adjusting these p-values is coherent with the
unadjusted interval decisions. Reported p-values are floored at ``1/B`` (the Monte Carlo
resolution); ties at exactly ``-m``/``+m`` count against the claim.

Interval method (see :mod:`.intervals`): ``"guarded"`` (default) reports the hull of the
bootstrap interval and Tango's paired score interval at the same level, and uses
``max(bootstrap p, score p)`` for each one-sided test, so no decision rests on a bootstrap
distribution that collapsed because every unit agreed; ``"paper"`` uses the bootstrap alone.

Decision bound (``decision``): ``"two-sided"`` (default, the reading of the AgentFloor Table 1
caption) certifies non-inferiority when the lower end of the two-sided ``1 - alpha`` (95 %) CI is
above ``-m`` and equivalence when that CI lies inside ``(-m, +m)``, i.e. each one-sided test at
``alpha / 2``; ``"one-sided"`` uses the ``1 - 2 alpha`` (90 %) CI, the textbook one-sided 95 %
bound and TOST. Holm adjusts within a family at the same per-test level.

Three outcomes per claim (``noninferiority_verdict``, ``equivalence_verdict``): ``"yes"`` when it
is certified, ``"no"`` only when it is refuted (the decision interval excludes it: for
non-inferiority its upper end is at or below ``-m``; for equivalence it lies wholly outside
``(-m, +m)``), and ``"insufficient evidence"`` otherwise: the interval holds both outcomes.
``n_min_pairs`` is the fewest pairs with which even a table without a discordant pair could clear
the margin (:func:`.intervals.min_pairs_to_certify`); below it a claim can only be refuted.
Refutations are read unadjusted (Holm adjusts the certifications).

Exact McNemar: ``b`` = pairs where the model passes and the reference fails, ``c`` the reverse;
``p = binomtest(b, b + c, 0.5).pvalue`` (two-sided), ``1.0`` when ``b + c = 0``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.stats import binomtest

from .bootstrap import ClusterSums, bootstrap_sums, cluster_sums, order_bounds, ratio_replicates
from .intervals import min_pairs_to_certify, pairs_needed, tango, tango_pvalues, z_of
from .multiplicity import holm
from .records import OVERALL, Cluster, RunTable, expand_scopes, scopes_of

_TIE_TOL = 1e-9


@functools.lru_cache(maxsize=4096)
def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    if b + c == 0:
        return 1.0
    return float(binomtest(int(b), int(b + c), 0.5).pvalue)


@dataclass(frozen=True, slots=True)
class PairedTest:
    """One model vs the reference on one scope. Rates are fractions, deltas and margins are pp."""

    model: str
    reference: str
    scope: str
    n_pairs: int
    n_unpaired_model: int
    n_unpaired_ref: int
    n_units: int
    tcr_model: float | None
    tcr_ref: float | None
    delta_pp: float | None
    ci95_low_pp: float | None
    ci95_high_pp: float | None
    ci90_low_pp: float | None
    ci90_high_pp: float | None
    margin_pp: float
    p_noninferiority: float | None
    p_equivalence: float | None
    noninferior: bool
    equivalent: bool
    mcnemar_b: int
    mcnemar_c: int
    p_mcnemar: float
    holm_family: str | None = None
    p_noninferiority_holm: float | None = None
    p_equivalence_holm: float | None = None
    p_mcnemar_holm: float | None = None
    noninferior_holm: bool = False
    equivalent_holm: bool = False
    interval_method: str = "guarded"
    decision: str = "two-sided"
    n_min_pairs: int = 1
    boot_ci95_low_pp: float | None = None
    boot_ci95_high_pp: float | None = None
    noninferiority_verdict: str = "no"
    equivalence_verdict: str = "no"


INSUFFICIENT = "insufficient evidence"


def decision_tail(alpha: float, decision: str) -> float:
    """Per one-sided test level: ``alpha / 2`` for the two-sided reading, ``alpha`` for one-sided."""
    if decision not in ("two-sided", "one-sided"):
        raise ValueError(f"decision must be 'two-sided' or 'one-sided', got {decision!r}")
    return alpha / 2 if decision == "two-sided" else alpha


def check_margin(margin_pp: float) -> None:
    """A margin is a difference of two pass rates in percentage points, so it lies in [0, 100]."""
    if not 0 <= margin_pp <= 100:
        raise ValueError(f"margin_pp must be between 0 and 100 percentage points, got {margin_pp:g}")


def claim_verdict(holds: bool, refuted: bool) -> str:
    """``yes`` (certified), ``no`` (refuted: the decision interval excludes the claim), else
    ``insufficient evidence`` (the interval holds both outcomes, e.g. too few pairs)."""
    if holds:
        return "yes"
    return "no" if refuted else INSUFFICIENT


def pairs_to_decide(test: PairedTest, margin_pp: float, tail: float, decision: str) -> int | None:
    """About how many pairs would certify or refute the claim if the observed rates held.

    The larger of two figures: Tango's interval for the expected table (:func:`pairs_needed`), and
    the cluster bootstrap's observed half-width shrunk as 1/sqrt(n) (it carries the clustering of
    runs within a (variant, instance, run) unit, which Tango's pairs-as-independent figure does not).
    """
    n, delta = test.n_pairs, (test.delta_pp or 0.0)
    rb, rc = test.mcnemar_b / n, test.mcnemar_c / n
    score = pairs_needed(rb, rc, margin_pp, tail) or pairs_needed(rb, rc, margin_pp, tail, refute=True)
    if score is None or test.boot_ci95_low_pp is None or test.boot_ci95_high_pp is None:
        return score
    scale = 1.0 if decision == "two-sided" else z_of(tail) / z_of(tail / 2)
    if delta > -margin_pp:  # certify: delta - half * sqrt(n / N) > -m
        half, room = (delta - test.boot_ci95_low_pp) * scale, delta + margin_pp
    else:  # refute: delta + half * sqrt(n / N) <= -m
        half, room = (test.boot_ci95_high_pp - delta) * scale, -margin_pp - delta
    boot = math.floor(n * (half / room) ** 2) + 1 if room > 0 else None
    return max(score, boot) if boot is not None else score


@dataclass(frozen=True, slots=True)
class PairedSection:
    """All paired tests against one reference, Holm-adjusted within two families.

    Family ``"model_tier"``: every (non-reference model, tier) test with at least one pair.
    Family ``"model_overall"``: every model's all-tier test. Each of the three p-value kinds
    (non-inferiority, equivalence, McNemar) is adjusted separately within its family.
    """

    reference: str | None
    available: bool
    reason: str | None
    margin_pp: float
    alpha: float
    cluster: str
    n_boot: int
    interval_method: str
    decision: str
    n_min_pairs: int
    family_sizes: dict[str, int]
    tests: dict[str, dict[str, PairedTest]]


def _paired_cells(cs: ClusterSums, b: np.ndarray, c: np.ndarray, pass_m: np.ndarray, pass_r: np.ndarray, *,
                  margin_pp: float, n_boot: int, seed: int, alpha: float,
                  interval_method: str = "guarded") -> dict[str, np.ndarray]:
    """Vectorised point estimates, bounds and p-values for every cell of ``cs``."""
    sum_d, n = cs.totals
    s_num, s_den = bootstrap_sums(cs, n_boot, seed)
    reps = np.sort(ratio_replicates(s_num, s_den, 100.0), axis=0)
    lo95, hi95 = order_bounds(reps, alpha / 2)
    lo90, hi90 = order_bounds(reps, alpha)
    tol = _TIE_TOL * s_den
    p_lower = np.mean(100.0 * s_num + margin_pp * s_den <= tol, axis=0)
    p_upper = np.mean(100.0 * s_num - margin_pp * s_den >= -tol, axis=0)
    boot95 = (lo95.copy(), hi95.copy())
    if interval_method != "paper" and n.size:
        n_i = np.rint(n)
        t95 = tango(b, c, n_i, alpha / 2)
        t90 = tango(b, c, n_i, alpha)
        lo95, hi95 = np.fmin(lo95, 100.0 * t95[0]), np.fmax(hi95, 100.0 * t95[1])
        lo90, hi90 = np.fmin(lo90, 100.0 * t90[0]), np.fmax(hi90, 100.0 * t90[1])
        s_lo, s_hi = tango_pvalues(b, c, n_i, margin_pp / 100.0)
        p_lower, p_upper = np.maximum(p_lower, s_lo), np.maximum(p_upper, s_hi)
    safe = np.where(n > 0, n, 1.0)  # empty cells divide by 1, so no 0/0 and no RuntimeWarning
    return dict(
        n=n, delta=np.where(n > 0, 100.0 * sum_d / safe, np.nan),
        tcr_m=np.where(n > 0, pass_m / safe, np.nan), tcr_r=np.where(n > 0, pass_r / safe, np.nan),
        lo95=lo95, hi95=hi95, lo90=lo90, hi90=hi90, p_lower=p_lower, p_upper=p_upper,
        blo95=boot95[0], bhi95=boot95[1],
        b=b, c=c, n_units=cs.n_units,
    )


def _opt(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _make_test(r: dict[str, np.ndarray], i: int, *, model: str, reference: str, scope: str, margin_pp: float,
               alpha: float, n_boot: int, unpaired_m: int, unpaired_r: int, interval_method: str = "guarded",
               decision: str = "two-sided") -> PairedTest:
    n = int(round(r["n"][i]))
    b, c = int(round(r["b"][i])), int(round(r["c"][i]))
    has = n > 0
    floor = 1.0 / n_boot
    pl, pu = float(r["p_lower"][i]), float(r["p_upper"][i])
    tail = decision_tail(alpha, decision)
    n_min = min_pairs_to_certify(margin_pp, tail, interval_method)
    ni = bool(has and pl < tail)
    eq = bool(has and max(pl, pu) < tail)
    # the decision interval: the 95 % CI for the two-sided reading, the 90 % CI for the one-sided one
    lo, hi = (r["lo95"][i], r["hi95"][i]) if decision == "two-sided" else (r["lo90"][i], r["hi90"][i])
    ni_refuted = bool(has and hi <= -margin_pp + _TIE_TOL)
    eq_refuted = bool(has and (hi <= -margin_pp + _TIE_TOL or lo >= margin_pp - _TIE_TOL))
    return PairedTest(
        model=model, reference=reference, scope=scope, n_pairs=n, n_unpaired_model=unpaired_m,
        n_unpaired_ref=unpaired_r, n_units=int(r["n_units"][i]),
        tcr_model=_opt(r["tcr_m"][i]) if has else None, tcr_ref=_opt(r["tcr_r"][i]) if has else None,
        delta_pp=_opt(r["delta"][i]) if has else None,
        ci95_low_pp=_opt(r["lo95"][i]) if has else None, ci95_high_pp=_opt(r["hi95"][i]) if has else None,
        ci90_low_pp=_opt(r["lo90"][i]) if has else None, ci90_high_pp=_opt(r["hi90"][i]) if has else None,
        margin_pp=float(margin_pp),
        p_noninferiority=max(pl, floor) if has else None,
        p_equivalence=max(pl, pu, floor) if has else None,
        noninferior=ni, equivalent=eq,
        mcnemar_b=b, mcnemar_c=c, p_mcnemar=mcnemar_exact(b, c),
        interval_method=interval_method, decision=decision, n_min_pairs=n_min,
        boot_ci95_low_pp=_opt(r["blo95"][i]) if has else None, boot_ci95_high_pp=_opt(r["bhi95"][i]) if has else None,
        noninferiority_verdict=claim_verdict(ni, ni_refuted), equivalence_verdict=claim_verdict(eq, eq_refuted),
    )


def paired_compare(pass_model: np.ndarray, pass_ref: np.ndarray, unit: np.ndarray | None = None, *,
                   margin_pp: float = 10.0, n_boot: int = 10_000, seed: int = 42, alpha: float = 0.05,
                   model: str = "model", reference: str = "reference", scope: str = OVERALL,
                   interval_method: str = "guarded", decision: str = "two-sided") -> PairedTest:
    """Paired test on already-aligned pass arrays; ``unit`` clusters pairs (default: each pair alone)."""
    check_margin(margin_pp)
    pm = np.asarray(pass_model, dtype=bool).ravel()
    pr = np.asarray(pass_ref, dtype=bool).ravel()
    if pm.shape != pr.shape:
        raise ValueError("pass_model and pass_ref must be aligned pairs of equal length")
    u = np.arange(pm.size) if unit is None else np.asarray(unit).ravel()
    if u.shape != pm.shape:
        raise ValueError("unit must have one entry per pair")
    _, u_codes = np.unique(u, return_inverse=True) if u.size else (None, np.empty(0, dtype=np.int64))
    cell = np.zeros(pm.size, dtype=np.int64)
    cs = cluster_sums(cell, u_codes.ravel(), pm.astype(float) - pr.astype(float), None, 1)
    r = _paired_cells(cs, np.array([np.sum(pm & ~pr)], float), np.array([np.sum(~pm & pr)], float),
                      np.array([pm.sum()], float), np.array([pr.sum()], float),
                      margin_pp=margin_pp, n_boot=n_boot, seed=seed, alpha=alpha, interval_method=interval_method)
    return _make_test(r, 0, model=model, reference=reference, scope=scope, margin_pp=margin_pp, alpha=alpha,
                      n_boot=n_boot, unpaired_m=0, unpaired_r=0, interval_method=interval_method,
                      decision=decision)


def _nan_if_none(p: float | None) -> float:
    return math.nan if p is None else p


def apply_holm(tests: list[PairedTest], family: str, alpha: float) -> list[PairedTest]:
    """Holm-adjust the three p-value kinds across ``tests`` (tests without pairs are left out).

    The claims are compared with each test's own decision level (see :func:`decision_tail`);
    McNemar's two-sided p-values with ``alpha``.
    """
    idx = [i for i, t in enumerate(tests) if t.n_pairs > 0]
    out = list(tests)
    if not idx:
        return out
    adj_ni = holm([_nan_if_none(tests[i].p_noninferiority) for i in idx])  # a test with pairs has each p
    adj_eq = holm([_nan_if_none(tests[i].p_equivalence) for i in idx])
    adj_mc = holm([tests[i].p_mcnemar for i in idx])
    for j, i in enumerate(idx):
        out[i] = replace(
            tests[i], holm_family=family,
            p_noninferiority_holm=float(adj_ni[j]), p_equivalence_holm=float(adj_eq[j]),
            p_mcnemar_holm=float(adj_mc[j]),
            noninferior_holm=bool(tests[i].noninferior and adj_ni[j] < decision_tail(alpha, tests[i].decision)),
            equivalent_holm=bool(tests[i].equivalent and adj_eq[j] < decision_tail(alpha, tests[i].decision)),
        )
    return out


def compare_to_reference(table: RunTable, reference: str | None, *, margin_pp: float, n_boot: int, seed: int,
                         cluster: Cluster, infra_as_failure: bool, alpha: float = 0.05,
                         interval_method: str = "guarded", decision: str = "two-sided") -> PairedSection:
    """Paired tests of every non-reference model against ``reference`` on each tier and overall."""
    check_margin(margin_pp)
    base: dict[str, Any] = dict(reference=reference, margin_pp=float(margin_pp), alpha=float(alpha), cluster=cluster, n_boot=n_boot,
                interval_method=interval_method, decision=decision,
                n_min_pairs=min_pairs_to_certify(margin_pp, decision_tail(alpha, decision), interval_method))
    if reference is None:
        return PairedSection(available=False, reason="no reference model given", family_sizes={}, tests={}, **base)
    if reference not in table.model_names:
        return PairedSection(available=False, reason=f"reference model {reference!r} has no records",
                             family_sizes={}, tests={}, **base)

    scopes = scopes_of(table)
    n_s = len(scopes)
    mask, passes = table.scored(infra_as_failure)
    key, units = table.task_key(), table.unit_code(cluster)
    ri = table.model_names.index(reference)
    ref_rows = np.flatnonzero(mask & (table.model == ri))
    others = [mi for mi in range(len(table.model_names)) if mi != ri]

    rows_m, rows_r, slots = [], [], []
    unpaired_m = np.zeros((len(others), n_s), dtype=np.int64)
    unpaired_r = np.zeros((len(others), n_s), dtype=np.int64)
    for slot, mi in enumerate(others):
        m_rows = np.flatnonzero(mask & (table.model == mi))
        _, im, ir = np.intersect1d(key[m_rows], key[ref_rows], assume_unique=True, return_indices=True)
        rows_m.append(m_rows[im])
        rows_r.append(ref_rows[ir])
        slots.append(np.full(im.size, slot, dtype=np.int64))
        lone_m = np.ones(m_rows.size, dtype=bool)
        lone_m[im] = False
        lone_r = np.ones(ref_rows.size, dtype=bool)
        lone_r[ir] = False
        unpaired_m[slot] = np.bincount(expand_scopes(table, m_rows[lone_m])[1], minlength=n_s)
        unpaired_r[slot] = np.bincount(expand_scopes(table, ref_rows[lone_r])[1], minlength=n_s)

    rm = np.concatenate(rows_m) if rows_m else np.empty(0, dtype=np.int64)
    rr = np.concatenate(rows_r) if rows_r else np.empty(0, dtype=np.int64)
    sl = np.concatenate(slots) if slots else np.empty(0, dtype=np.int64)
    rm2, scope2 = expand_scopes(table, rm)
    rr2, sl2 = np.concatenate([rr, rr]), np.concatenate([sl, sl])
    cell = sl2 * n_s + scope2
    n_cells = len(others) * n_s
    pm, pr = passes[rm2], passes[rr2]
    cs = cluster_sums(cell, units[rm2], pm.astype(float) - pr.astype(float), None, n_cells)
    r = _paired_cells(
        cs, np.bincount(cell, pm & ~pr, minlength=n_cells), np.bincount(cell, ~pm & pr, minlength=n_cells),
        np.bincount(cell, pm, minlength=n_cells), np.bincount(cell, pr, minlength=n_cells),
        margin_pp=margin_pp, n_boot=n_boot, seed=seed, alpha=alpha, interval_method=interval_method,
    )

    flat: list[PairedTest] = []
    for slot, mi in enumerate(others):
        for si, sc in enumerate(scopes):
            flat.append(_make_test(r, slot * n_s + si, model=table.model_names[mi], reference=reference, scope=sc,
                                   margin_pp=margin_pp, alpha=alpha, n_boot=n_boot,
                                   unpaired_m=int(unpaired_m[slot, si]), unpaired_r=int(unpaired_r[slot, si]),
                                   interval_method=interval_method, decision=decision))
    tier_idx = [i for i, t in enumerate(flat) if t.scope != OVERALL]
    over_idx = [i for i, t in enumerate(flat) if t.scope == OVERALL]
    for fam, idx in (("model_tier", tier_idx), ("model_overall", over_idx)):
        for i, t in zip(idx, apply_holm([flat[i] for i in idx], fam, alpha)):
            flat[i] = t
    tests: dict[str, dict[str, PairedTest]] = {}
    for t in flat:
        tests.setdefault(t.model, {})[t.scope] = t
    sizes = {
        "model_tier": sum(1 for i in tier_idx if flat[i].n_pairs > 0),
        "model_overall": sum(1 for i in over_idx if flat[i].n_pairs > 0),
    }
    return PairedSection(available=True, reason=None, family_sizes=sizes, tests=tests, **base)
