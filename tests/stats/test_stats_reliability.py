"""pass@k and pass^k: hand-worked values, brute-force enumeration, and per-cell averaging."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pytest_agentfloor.stats import build_table, compute_reliability, pass_at_k, pass_hat_k


def test_hand_worked_n5_c2() -> None:
    # pass@k = 1 - C(3,k)/C(5,k); pass^k = C(2,k)/C(5,k)
    assert [pass_at_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.7, 0.9, 1.0, 1.0])
    assert [pass_hat_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.1, 0.0, 0.0, 0.0])


def test_extremes_and_k_beyond_n() -> None:
    assert pass_at_k(4, 0, 2) == 0.0 and pass_hat_k(4, 4, 3) == 1.0 and pass_at_k(4, 4, 1) == 1.0
    assert math.isnan(pass_at_k(3, 1, 4)) and math.isnan(pass_hat_k(3, 1, 4))
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


@pytest.mark.parametrize("n", range(1, 7))
def test_against_subset_enumeration(n: int) -> None:
    for c in range(n + 1):
        runs = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(runs, k))
            assert pass_at_k(n, c, k) == pytest.approx(np.mean([any(s) for s in subsets]), abs=1e-12)
            assert pass_hat_k(n, c, k) == pytest.approx(np.mean([all(s) for s in subsets]), abs=1e-12)
            assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)


def test_vectorised_over_items() -> None:
    n, c = np.array([5, 3, 2]), np.array([2, 3, 0])
    np.testing.assert_allclose(pass_at_k(n, c, 2), [0.7, 1.0, 0.0])
    np.testing.assert_allclose(pass_hat_k(n, c, 2), [0.1, 1.0, 0.0])


def _rec(task: str, variant: str, run: int, passed: bool, infra: bool = False) -> dict:
    return {"model": "m", "task": task, "tier": "B", "variant": variant, "instance": "i0", "run": run,
            "passed": passed, "infra_error": infra}


def test_cell_average_with_uneven_repeats() -> None:
    # item 1: 3 runs, 1 pass; item 2: 1 run, passed; item 3: 2 scored runs + one infra error (excluded).
    recs = [_rec("B1", "v0", 0, True), _rec("B1", "v0", 1, False), _rec("B1", "v0", 2, False),
            _rec("B1", "v1", 0, True),
            _rec("B2", "v0", 0, True), _rec("B2", "v0", 1, True), _rec("B2", "v0", 2, False, infra=True)]
    curve = compute_reliability(build_table(recs), infra_as_failure=False)["m"]["B"]
    assert curve.n_items == 3 and curve.max_runs == 3
    k1, k2, k3 = curve.points
    assert (k1.n_items, k2.n_items, k3.n_items) == (3, 2, 1)
    assert k1.pass_at_k == pytest.approx((1 / 3 + 1 + 1) / 3)
    assert k2.pass_at_k == pytest.approx((2 / 3 + 1) / 2)  # item1: 1 - C(2,2)/C(3,2)
    assert k2.pass_hat_k == pytest.approx((0 + 1) / 2)
    assert k3.pass_at_k == 1.0 and k3.pass_hat_k == 0.0
    over = compute_reliability(build_table(recs), infra_as_failure=False)["m"]["overall"]
    assert over.points == curve.points
    # Counting the infra error as a failure changes item 3 to 2/3.
    infra_fail = compute_reliability(build_table(recs), infra_as_failure=True)["m"]["B"]
    assert infra_fail.points[0].pass_at_k == pytest.approx((1 / 3 + 1 + 2 / 3) / 3)


# -- bootstrap and reliability at their edges (the mutation run's survivors) -----------------------
# Mutation survivors of stats/bootstrap.py and stats/reliability.py, killed by hand-worked cases.
#
# Each test names the mutants it kills (issue 20). Expected values are worked out in the comments,
# never computed by the function under test.


@pytest.mark.parametrize(("n", "c", "k"), [(3, 0, 2), (4, 1, 3), (5, 0, 4), (6, 2, 4)])
def test_pass_hat_k_impossible_is_plain_zero(n: int, c: int, k: int) -> None:
    """x__ratio_curve__mutmut_6: the factors (c - i) are clipped at 0 before the product.

    With k > c no k runs can all pass: C(c, k) = 0, so pass^k = 0. Unclipped, the factor for
    i = c is 0 and later ones are negative, so the product is -0.0, which prints as "-0.0".
    """
    assert math.comb(c, k) == 0
    value = pass_hat_k(n, c, k)
    assert value == 0.0 and str(value) == "0.0"
    arr = pass_hat_k(np.array([n]), np.array([c]), k)
    assert not np.signbit(arr).any()
    assert pass_at_k(n, n, k) == 1.0  # the same clip on the n - c side (a = 0)


def _rec_relboot(model: str, task: str, run: int, passed: bool, infra: bool = False) -> dict:
    return {"model": model, "task": task, "tier": "B", "variant": "v0", "instance": "i0", "run": run,
            "passed": passed, "infra_error": infra}


def test_reliability_models_with_different_repeat_counts() -> None:
    """x_compute_reliability__mutmut_104, _111, _118: per-k sums are sized to every cell.

    Cells are (model, scope) with scopes (B, overall); model "b" is last. At k = 2, 3 only
    model "a" has items, so a per-k bincount without minlength is shorter than the cell count.
    """
    recs = [_rec_relboot("a", "B1", r, r == 0) for r in range(3)]          # a/B1: n=3, c=1
    recs += [_rec_relboot("a", "B2", r, r < 2) for r in range(3)]          # a/B2: n=3, c=2
    recs += [_rec_relboot("b", "B1", 0, True), _rec_relboot("b", "B2", 0, False)]  # b: one run per item
    out = compute_reliability(build_table(recs), infra_as_failure=False)
    for scope in ("B", "overall"):
        a, b = out["a"][scope], out["b"][scope]
        assert (a.n_items, a.max_runs, b.n_items, b.max_runs) == (2, 3, 2, 1)
        assert [p.n_items for p in a.points] == [2, 2, 2] and [p.n_items for p in b.points] == [2]
        # pass@k = 1 - C(n-c, k)/C(n, k): B1 (n=3, c=1): 1/3, 2/3, 1; B2 (c=2): 2/3, 1, 1
        assert [p.pass_at_k for p in a.points] == pytest.approx([(1 / 3 + 2 / 3) / 2, (2 / 3 + 1) / 2, 1.0])
        # pass^k = C(c, k)/C(n, k): B1: 1/3, 0, 0; B2: 2/3, 1/3, 0
        assert [p.pass_hat_k for p in a.points] == pytest.approx([0.5, (0 + 1 / 3) / 2, 0.0])
        assert [(p.k, p.pass_at_k, p.pass_hat_k) for p in b.points] == [(1, 0.5, 0.5)]


def test_reliability_model_without_scored_runs() -> None:
    """x_compute_reliability__mutmut_123 (and 104, 111, 118): a model whose every run is an infra
    error still gets its (empty) curves; the item counts are sized to every cell.

    Also the case where nothing at all is scored (k_max = 0), which the curve code handles
    without a special branch.
    """
    recs = [_rec_relboot("a", "B1", 0, True), _rec_relboot("a", "B1", 1, False)]
    recs += [_rec_relboot("b", "B1", r, False, infra=True) for r in range(2)]
    out = compute_reliability(build_table(recs), infra_as_failure=False)
    for scope in ("B", "overall"):
        a, b = out["a"][scope], out["b"][scope]
        assert (a.n_items, a.max_runs) == (1, 2)
        assert [(p.k, p.n_items, p.pass_at_k, p.pass_hat_k) for p in a.points] == [(1, 1, 0.5, 0.5), (2, 1, 1.0, 0.0)]
        assert (b.n_items, b.max_runs, b.points) == (0, 0, ())
    # infra errors counted as failures: b has one item, 2 runs, no pass
    b = compute_reliability(build_table(recs), infra_as_failure=True)["b"]["overall"]
    assert [(p.k, p.n_items, p.pass_at_k, p.pass_hat_k) for p in b.points] == [(1, 1, 0.0, 0.0), (2, 1, 0.0, 0.0)]
    # nothing scored anywhere
    only_infra = [_rec_relboot("a", "B1", r, False, infra=True) for r in range(3)]
    empty = compute_reliability(build_table(only_infra), infra_as_failure=False)["a"]
    assert {s: (c.n_items, c.max_runs, c.points) for s, c in empty.items()} == {"B": (0, 0, ()), "overall": (0, 0, ())}


# -- records, TCR and pressure statistics at their edges (the mutation run's survivors) ------------
# Issue 20 survivors of records.py, tcr.py and pressure.py: behaviour no earlier test pinned down.
#
# Expected values are hand-worked (in comments), from scipy, or from the documented bootstrap draw
# recomputed here with plain numpy indexing; never from the function under test.


def _rec_prestcr(model: str, task: str, tier: str, passed: bool, *, variant: str = "v0", instance: str = "i0",
         run: int = 0, **extra: object) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": variant, "instance": instance, "run": run,
            "passed": passed, **extra}


def test_pass_at_k_items_stay_apart_across_models() -> None:
    """xǁRunTableǁgroup_key__mutmut_2 (- instance), _4 (- variant): the item key must not collide once
    offset per model (reliability keys items by model * span + group_key)."""
    # one task, 2 variants x 2 instances, 2 runs each; model "a" passes everything, "b" nothing
    recs = [_rec_prestcr(m, "B1", "B", m == "a", variant=v, instance=i, run=r)
            for m in ("a", "b") for v in ("v0", "v1") for i in ("i0", "i1") for r in (0, 1)]
    rel = compute_reliability(build_table(recs), infra_as_failure=False)
    for model, expected in (("a", 1.0), ("b", 0.0)):
        curve = rel[model]["B"]
        assert (curve.n_items, curve.max_runs) == (4, 2)  # four items of two runs each
        assert [(p.k, p.n_items, p.pass_at_k, p.pass_hat_k) for p in curve.points] == [
            (1, 4, expected, expected), (2, 4, expected, expected)]
