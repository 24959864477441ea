"""Mutation survivors of stats/bootstrap.py and stats/reliability.py, killed by hand-worked cases.

Each test names the mutants it kills (issue 20). Expected values are worked out in the comments,
never computed by the function under test.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from pytest_agentfloor.stats import build_table, compute_reliability, pass_at_k, pass_hat_k, ratio_ci
from pytest_agentfloor.stats.bootstrap import cluster_sums

# --------------------------------------------------------------------------------------------
# bootstrap.cluster_sums: codes and values arrive in whatever dtype the caller had
# --------------------------------------------------------------------------------------------


def test_cluster_sums_accepts_float_codes() -> None:
    """x_cluster_sums__mutmut_3, _5, _40, _42: cell and unit codes are made int64.

    Codes built with ``np.zeros(n)`` or read from a float column are floats; without the int64
    conversion the combined key, and so ``ClusterSums.cell``, stays float and ``n_units``
    (np.bincount) refuses it.
    """
    # one cell (all 0.0), units 0, 1, 1, 2; passes 1, 0, 1, 1
    cs = cluster_sums(np.zeros(4), np.array([0.0, 1.0, 1.0, 2.0]), np.array([1.0, 0.0, 1.0, 1.0]), None, 1)
    assert cs.n_units.tolist() == [3]          # units 0, 1, 2
    assert cs.cell.tolist() == [0, 0, 0]
    assert cs.num.tolist() == [1.0, 1.0, 1.0]  # unit 1 holds 0 + 1
    assert cs.den.tolist() == [1.0, 2.0, 1.0]  # one weight per observation
    num_tot, den_tot = cs.totals
    assert num_tot.tolist() == [3.0] and den_tot.tolist() == [4.0]


def test_cluster_sums_accepts_exact_fractions() -> None:
    """x_cluster_sums__mutmut_8, _10, _17, _19: values (8, 10) and weights (17, 19) are made float64.

    A caller holding exact shares as ``fractions.Fraction`` gets an object array; np.bincount
    only takes float weights, so the float64 conversion is what makes these inputs work.
    """
    cell = [0, 0, 1, 1, 1]
    unit = [0, 0, 0, 1, 1]
    num = [Fraction(1, 2), Fraction(1, 4), Fraction(3, 4), Fraction(0), Fraction(1, 2)]
    den = [Fraction(1), Fraction(1, 2), Fraction(1), Fraction(1, 4), Fraction(1, 4)]
    cs = cluster_sums(cell, unit, num, den, 2)
    # cell 0 unit 0: 1/2 + 1/4 = 0.75 over 1 + 1/2 = 1.5; cell 1 unit 0: 0.75 over 1;
    # cell 1 unit 1: 0 + 1/2 = 0.5 over 1/4 + 1/4 = 0.5 (all dyadic, so exact in binary)
    assert cs.cell.tolist() == [0, 1, 1]
    assert cs.num.tolist() == [0.75, 0.75, 0.5]
    assert cs.den.tolist() == [1.5, 1.0, 0.5]
    # weights omitted: one per observation
    cs1 = cluster_sums(cell, unit, num, None, 2)
    assert cs1.num.tolist() == [0.75, 0.75, 0.5] and cs1.den.tolist() == [2.0, 1.0, 2.0]


# --------------------------------------------------------------------------------------------
# bootstrap.ratio_ci: the point estimate is summed in double precision
# --------------------------------------------------------------------------------------------


def test_ratio_ci_sums_float32_input_in_double() -> None:
    """x_ratio_ci__mutmut_4, _6, _13, _15: values (4, 6) and weights (13, 15) are made float64.

    float32 has a 24-bit significand: 2**24 + 1 rounds back to 2**24, so a float32 sum of
    [2**24, 1, 1] is 2**24 while the true sum is 2**24 + 2 = 16777218.
    """
    big = np.array([2.0**24, 1.0, 1.0], dtype=np.float32)
    # pooled mean: 16777218 / 3 = 5592406 exactly (float32 arithmetic gives 5592405.5)
    assert ratio_ci(big, n_boot=20).estimate == 5592406.0
    # as weights: 3 / 16777218 (float32 arithmetic gives 3 / 16777216)
    est = ratio_ci(np.array([0.0, 0.0, 3.0]), big, n_boot=20).estimate
    assert est == 3 / 16777218


# --------------------------------------------------------------------------------------------
# reliability
# --------------------------------------------------------------------------------------------


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


def _rec(model: str, task: str, run: int, passed: bool, infra: bool = False) -> dict:
    return {"model": model, "task": task, "tier": "B", "variant": "v0", "instance": "i0", "run": run,
            "passed": passed, "infra_error": infra}


def test_reliability_models_with_different_repeat_counts() -> None:
    """x_compute_reliability__mutmut_104, _111, _118: per-k sums are sized to every cell.

    Cells are (model, scope) with scopes (B, overall); model "b" is last. At k = 2, 3 only
    model "a" has items, so a per-k bincount without minlength is shorter than the cell count.
    """
    recs = [_rec("a", "B1", r, r == 0) for r in range(3)]          # a/B1: n=3, c=1
    recs += [_rec("a", "B2", r, r < 2) for r in range(3)]          # a/B2: n=3, c=2
    recs += [_rec("b", "B1", 0, True), _rec("b", "B2", 0, False)]  # b: one run per item
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
    recs = [_rec("a", "B1", 0, True), _rec("a", "B1", 1, False)]
    recs += [_rec("b", "B1", r, False, infra=True) for r in range(2)]
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
    only_infra = [_rec("a", "B1", r, False, infra=True) for r in range(3)]
    empty = compute_reliability(build_table(only_infra), infra_as_failure=False)["a"]
    assert {s: (c.n_items, c.max_runs, c.points) for s, c in empty.items()} == {"B": (0, 0, ()), "overall": (0, 0, ())}
