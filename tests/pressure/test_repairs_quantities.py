"""Repair quantities (L, Gamma, Sigma, Delta) and the activation rule against hand-worked values,
an independent re-computation of the documented bootstrap draw, and scipy's sign-flip test."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps

from pytest_agentfloor.pressure.repairs.quantities import (
    NO_REPAIR, Estimate, LayerRepair, Outcome, activation, generic_rescue, layer_repair,
)

B = 2_000  # smaller than the default 10,000: the draws are checked against an independent computation


def arms(unit: str, cluster: str, table: dict[tuple[str, bool], list[int]]) -> list[Outcome]:
    return [Outcome(unit, cluster, arm, z, s) for (arm, z), runs in table.items() for s in runs]


def rescue_population(n: int = 10, *, clusters: int | None = None) -> list[Outcome]:
    """p0 = .8, p1 = .4 without repair; a repair that rescues half of all failures: q0 = .9, q1 = .7."""
    out = []
    for i in range(n):
        k = i * 10 // n
        out += arms(f"u{i}", f"c{i % clusters if clusters else i}", {
            (NO_REPAIR, False): [int(k < 8)], (NO_REPAIR, True): [int(k < 4)],
            ("guide", False): [int(k < 9)], ("guide", True): [int(k < 7)]})
    return out


def test_generic_rescue_is_seed_002s_example_exactly() -> None:
    assert generic_rescue(Fraction("0.8"), Fraction("0.4"), Fraction("0.5")) == (40, 30, 20)


def test_the_same_example_from_paired_outcomes_is_exact() -> None:
    lr = layer_repair(rescue_population(), layer="D", repair="guide", n_boot=B)
    assert (lr.L.pp, lr.gamma.pp, lr.sigma.pp) == (40.0, 30.0, 20.0)
    assert lr.L.units == lr.L.clusters == 10 and lr.delta is None


def independent_interval(values_by_cluster: dict[str, list[float]], n_boot: int, seed: int) -> tuple[float, float]:
    """The documented draw, written out: rows of default_rng(seed).integers(0, C, (B, C)) over the
    clusters in sorted order, pooled mean of the drawn clusters' units, k-th order statistics."""
    names = sorted(values_by_cluster)
    idx = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    reps = []
    for row in idx:
        vals = [v for i in row for v in values_by_cluster[names[i]]]
        reps.append(100.0 * sum(vals) / len(vals))
    reps.sort()
    k = int(np.ceil(0.025 * n_boot))
    return reps[k - 1], reps[n_boot - k]


def test_interval_matches_an_independent_cluster_bootstrap() -> None:
    pop = rescue_population(20, clusters=5)  # 5 clusters of 4 units: whole clusters move together
    lr = layer_repair(pop, layer="D", repair="guide", n_boot=B, seed=7)
    by: dict[str, list[float]] = {}
    for i in range(20):
        k = i * 10 // 20
        by.setdefault(f"c{i % 5}", []).append(float(k < 8) - float(k < 4))  # L per unit
    lo, hi = independent_interval(by, B, 7)
    assert lr.L.lo == pytest.approx(lo) and lr.L.hi == pytest.approx(hi)
    assert lr.L.clusters == 5 and lr.L.units == 20


def test_sign_flip_p_matches_scipy() -> None:
    pop = []
    rng = np.random.default_rng(3)
    for i in range(9):  # 9 clusters, 2 units each, noisy outcomes
        for j in range(2):
            pop += arms(f"u{i}.{j}", f"c{i}", {(a, z): [int(rng.random() < pr)]
                                                for (a, z), pr in {(NO_REPAIR, False): .8, (NO_REPAIR, True): .5,
                                                                   ("guide", False): .8, ("guide", True): .7}.items()})
    lr = layer_repair(pop, layer="D", repair="guide", n_boot=B)
    cells: dict[str, dict[tuple[str, bool], float]] = {}
    for o in pop:
        cells.setdefault(o.unit, {})[(o.arm, o.stressed)] = o.success
    for name, f in (("L", lambda c: c[(NO_REPAIR, False)] - c[(NO_REPAIR, True)]),
                    ("gamma", lambda c: c[("guide", True)] - c[(NO_REPAIR, True)]),
                    ("sigma", lambda c: (c[("guide", True)] - c[(NO_REPAIR, True)])
                     - (c[("guide", False)] - c[(NO_REPAIR, False)]))):
        sums = np.array([sum(f(cells[f"u{i}.{j}"]) for j in range(2)) for i in range(9)])
        ref = sps.permutation_test((sums,), np.sum, permutation_type="samples", alternative="greater",
                                   n_resamples=np.inf).pvalue
        est = lr.quantity(name)
        assert est is not None and est.p_flip == pytest.approx(ref)
        assert est.p == max(est.p_boot, est.p_flip)


def test_delta_against_the_best_other_repair_by_hand() -> None:
    """Own selectivity 20 pp; 'prompt' 10 pp, 'router' 30 pp: Delta = 20 - 30 = -10, best = router."""
    pop = []
    for i in range(10):
        pop += arms(f"u{i}", f"c{i}", {
            (NO_REPAIR, False): [1], (NO_REPAIR, True): [0],
            ("guide", False): [1], ("guide", True): [int(i < 2)],      # S = 20
            ("prompt", False): [1], ("prompt", True): [int(i < 1)],   # S = 10
            ("router", False): [1], ("router", True): [int(i < 3)]})  # S = 30
    lr = layer_repair(pop, layer="D", repair="guide", others=("prompt", "router"), n_boot=B)
    assert lr.sigma.pp == 20.0 and lr.best_other == "router"
    assert lr.delta is not None and lr.delta.pp == pytest.approx(-10.0)
    assert lr.delta.p > 0.5  # a negative advantage is never evidence for one
    # re-taking the max per replicate is never kinder than fixing the competitor at 'router'
    one = layer_repair([o for o in pop if o.arm != "prompt"], layer="D", repair="guide", others=("router",), n_boot=B)
    assert one.delta is not None and one.delta.pp == lr.delta.pp
    lo, hi, one_lo, one_hi = lr.delta.lo, lr.delta.hi, one.delta.lo, one.delta.hi
    assert lo is not None and hi is not None and one_lo is not None and one_hi is not None
    assert lo <= one_lo + 1e-9 and hi <= one_hi + 1e-9


def test_delta_uses_only_units_that_hold_every_arm() -> None:
    pop = rescue_population()
    pop += arms("u0", "c0", {("router", False): [1], ("router", True): [1]})
    lr = layer_repair(pop, layer="D", repair="guide", others=("router",), n_boot=B)
    assert lr.L.units == 10 and lr.delta is not None and lr.delta.units == 1


def estimate(p: float, pp: float = 5.0) -> Estimate:
    return Estimate(pp, None, None, p, p, p, 10, 10, False)


def layer(name: str, pl: float, pg: float, ps: float, pd: float | None = None) -> LayerRepair:
    return LayerRepair(name, name, estimate(pl), estimate(pg), estimate(ps),
                       None if pd is None else estimate(pd), None)


def holm_stepdown(ps: list[float], alpha: float) -> list[bool]:
    """Holm's procedure as a decision loop (independent of multiplicity.holm's adjusted p)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    reject = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] < alpha / (len(ps) - rank):
            reject[i] = True
        else:
            break
    return reject


def test_activation_is_intersection_union_then_holm_by_hand() -> None:
    # IUT p per layer = the largest of its three: R .004, V .011, W .03, D .2
    fam = {"R": layer("R", .001, .004, .002), "V": layer("V", .011, .001, .005),
           "W": layer("W", .001, .03, .001), "D": layer("D", .2, .001, .001)}
    act = activation(fam)
    assert [act[k].p_iut for k in "RVWD"] == [.004, .011, .03, .2]
    # Holm by hand: .004*4 = .016; .011*3 = .033; .03*2 = .06; max(.06, .2) = .2
    assert [act[k].p_holm for k in "RVWD"] == pytest.approx([.016, .033, .06, .2])
    assert [act[k].active for k in "RVWD"] == [True, True, False, False]
    assert [act[k].active for k in "RVWD"] == holm_stepdown([.004, .011, .03, .2], .05)


def test_activation_decisions_agree_with_an_independent_stepdown() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        ps = rng.choice([.001, .004, .01, .0125, .02, .03, .05, .3], size=(4, 3))
        fam = {f"l{i}": layer(f"l{i}", *row) for i, row in enumerate(ps)}
        act = activation(fam)
        assert [a.active for a in act.values()] == holm_stepdown([float(max(r)) for r in ps], .05)


def test_the_controller_also_needs_delta() -> None:
    fam = {"controller": layer("controller", .001, .001, .001, .4), "canonical": layer("canonical", .5, .5, .5)}
    act = activation(fam, require_delta={"controller"})
    assert act["controller"].tested == ("L", "gamma", "sigma", "delta") and act["controller"].p_iut == .4
    assert not act["controller"].active
    with pytest.raises(ValueError, match="require_delta"):
        activation(fam, require_delta={"router"})


def test_all_equal_outcomes_give_no_effect_and_no_activation() -> None:
    pop = []
    for i in range(12):
        pop += arms(f"u{i}", f"c{i}", {(a, z): [1] for a in (NO_REPAIR, "guide") for z in (False, True)})
    lr = layer_repair(pop, layer="D", repair="guide", n_boot=B)
    for e in (lr.L, lr.gamma, lr.sigma):
        assert e.pp == 0.0 and e.p == 1.0 and e.collapsed
    assert not activation({"D": lr})["D"].active


def test_one_cluster_has_no_interval_and_cannot_activate() -> None:
    pop = arms("u0", "c0", {(NO_REPAIR, False): [1], (NO_REPAIR, True): [0],
                            ("guide", False): [1], ("guide", True): [1]})
    lr = layer_repair(pop, layer="D", repair="guide", n_boot=B)
    assert lr.L.pp == 100.0 and lr.L.lo is None and lr.L.hi is None
    assert lr.L.p_boot == 1 / B and lr.L.p_flip == 0.5 and lr.L.p == 0.5
    assert not activation({"D": lr})["D"].active


@pytest.mark.parametrize(("clusters", "family", "active"), [(4, 1, False), (5, 1, True), (6, 4, False), (7, 4, True)])
def test_unanimous_clusters_activate_only_when_their_number_allows(clusters: int, family: int, active: bool) -> None:
    """Every cluster shows L = G = S = 100: the sign-flip floor 2^-C decides, not the collapsed bootstrap."""
    pop = []
    for i in range(clusters):
        pop += arms(f"u{i}", f"c{i}", {(NO_REPAIR, False): [1], (NO_REPAIR, True): [0],
                                       ("guide", False): [1], ("guide", True): [1]})
    lr = layer_repair(pop, layer="D", repair="guide", n_boot=B)
    assert lr.sigma.collapsed and lr.sigma.p == 2.0 ** -clusters
    fam = {"D": lr, **{f"x{i}": layer(f"x{i}", .9, .9, .9) for i in range(family - 1)}}
    assert activation(fam)["D"].active is active


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="two clusters"):
        layer_repair([Outcome("u", "a", NO_REPAIR, False, 1), Outcome("u", "b", NO_REPAIR, True, 1)],
                     layer="D", repair="guide")
    with pytest.raises(ValueError, match="must differ"):
        layer_repair([], layer="D", repair=NO_REPAIR)
    with pytest.raises(ValueError, match="alpha"):
        activation({}, alpha=1.5)


def test_no_units_report_nothing() -> None:
    lr = layer_repair(arms("u0", "c0", {(NO_REPAIR, False): [1]}), layer="D", repair="guide", n_boot=B)
    assert lr.L.pp is None and lr.L.p == 1.0 and lr.L.units == 0
