"""Repairs versus configuration switches against hand-worked populations and an independent bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_agentfloor.pressure.repairs.quantities import NO_REPAIR
from pytest_agentfloor.pressure.repairs.switches import CellRun, compare, counts

B = 2_000


def population(families: int = 8) -> list[CellRun]:
    """Units: 2 stressed cells per family. Incumbent 'inc' fails every cell; with the router it passes
    all; 'big' passes half the cells and costs more than the router; 'cheap' passes one cell in four
    (on even families) and costs less. 'inc' with the guide passes nothing more yet spends more."""
    runs = []
    for f in range(families):
        for c in range(2):
            u, cl = f"f{f}.c{c}", f"f{f}"
            runs += [CellRun("inc", NO_REPAIR, u, cl, 0, 1000, 10, 0.010),
                     CellRun("inc", "router", u, cl, 1, 900, 9, 0.009),
                     CellRun("inc", "guide", u, cl, 0, 1100, 11, 0.011),
                     CellRun("big", NO_REPAIR, u, cl, int(c == 0), 800, 8, 0.050),
                     CellRun("cheap", NO_REPAIR, u, cl, int(c == 0 and f % 2 == 0), 500, 5, 0.001)]
    return runs


def test_router_beats_every_switch_on_success_but_not_on_cost() -> None:
    res = {(r.incumbent, r.repair): r for r in compare(population(), n_boot=B)}
    router = res[("inc", "router")]
    assert [v.switch for v in router.versus] == ["big", "cheap"]
    big, cheap = router.versus
    assert big.success_pp == pytest.approx(50.0) and cheap.success_pp == pytest.approx(75.0)
    assert router.success_superior and not router.cost_superior  # 'cheap' costs less
    assert big.below and not cheap.below
    assert router.nondominated


def test_a_dominated_repair_by_hand() -> None:
    guide = {(r.incumbent, r.repair): r for r in compare(population(), n_boot=B)}[("inc", "guide")]
    big, cheap = guide.versus
    assert not big.dominates  # 'big' succeeds more with fewer tokens and less time, but costs more
    assert big.cost_diff == pytest.approx(0.011 - 0.050)
    assert cheap.dominates  # 'cheap' is better on all four
    assert not guide.nondominated and not guide.success_superior


def test_dominance_needs_every_metric() -> None:
    runs = [CellRun("inc", "router", "u", "f", 1, 100, 1, 1.0), CellRun("other", NO_REPAIR, "u", "f", 1, 100, 1, 1.0),
            CellRun("third", NO_REPAIR, "u", "f", 1, 90, 2, 1.0)]
    (r,) = compare(runs, n_boot=B)
    assert [v.dominates for v in r.versus] == [False, False]  # a tie is not dominance; 90 tokens but 2 s
    assert r.nondominated


def test_counts_as_the_paper_reports_them() -> None:
    res = compare(population(), n_boot=B)
    c = counts(res)
    assert c["router"] == {"success_superior": 1, "nondominated": 1, "cost_superior": 0, "of": 1}
    assert c["guide"] == {"success_superior": 0, "nondominated": 0, "cost_superior": 0, "of": 1}


def test_success_interval_matches_an_independent_cluster_bootstrap() -> None:
    runs = []
    rng = np.random.default_rng(5)
    for f in range(7):
        for c in range(3):
            runs += [CellRun("inc", "router", f"f{f}.{c}", f"f{f}", int(rng.random() < .7)),
                     CellRun("sw", NO_REPAIR, f"f{f}.{c}", f"f{f}", int(rng.random() < .5))]
    (r,) = compare(runs, n_boot=B, seed=9)
    diffs: dict[str, list[float]] = {}
    for f in range(7):
        for c in range(3):
            a = next(x.success for x in runs if x.unit == f"f{f}.{c}" and x.arm == "router")
            b = next(x.success for x in runs if x.unit == f"f{f}.{c}" and x.arm == NO_REPAIR)
            diffs.setdefault(f"f{f}", []).append(100.0 * (a - b))
    names = sorted(diffs)
    idx = np.random.default_rng(9).integers(0, 7, size=(B, 7))
    reps = sorted(sum(v for i in row for v in diffs[names[i]]) / (3 * 7) for row in idx)
    assert r.versus[0].success_lo == pytest.approx(reps[49]) and r.versus[0].success_hi == pytest.approx(reps[B - 50])


@pytest.mark.parametrize(("families", "claimed"), [(5, False), (6, True)])
def test_too_few_clusters_never_certify(families: int, claimed: bool) -> None:
    """Unanimous families give a zero-width interval; the sign-flip guard needs 2^-C < 0.025."""
    router = compare(population(families), n_boot=B)[1]  # sorted: guide, router
    assert router.repair == "router" and router.success_superior is claimed


def test_no_switch_no_claim() -> None:
    (r,) = compare([CellRun("inc", "router", "u", "f", 1)], n_boot=B)
    assert r.versus == () and not r.success_superior and not r.nondominated and not r.cost_superior


def test_an_unknown_cost_is_never_read_as_zero() -> None:
    """An unpriced switch (NaN cost): no cost interval, no cost claim, dominance without cost."""
    nan = float("nan")
    runs = []
    for f in range(8):
        u = f"f{f}"
        runs += [CellRun("inc", "router", u, u, 0, 100, 1, 0.01), CellRun("free", NO_REPAIR, u, u, 1, 90, 1, nan)]
    (r,) = compare(runs, n_boot=B)
    (v,) = r.versus
    assert not v.cost_known and v.cost_diff is None and v.cost_lo is None and not v.below
    assert v.dominates and not r.nondominated and not r.cost_superior  # better success, fewer tokens, same time
