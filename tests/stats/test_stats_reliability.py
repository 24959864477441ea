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
