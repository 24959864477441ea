"""Pressure statistics against hand-worked values on constructed records (and scipy where it applies)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from pytest_agentfloor.stats.pressure import (
    CONTRASTS, cluster_bootstrap, contrast_weights, contrasts, failure_records, lanes, sign_flip_p,
    truncation,
)
import math

ALL_CELLS = [(v, w, d) for v in (8, 32, 128) for w in ("low", "high") for d in ("raw", "compact", "typed", "linked")]


def rec(model: str, family: str, intent: str, cell: tuple[int, str, str], passed: bool, *, lane: str = "fixed",
        truncated: bool = False, run: int = 0, tokens: int = 100, exposures: int = 10) -> dict:
    v, w, d = cell
    return {"kind": "pressure", "model": model, "task": family, "run": run, "passed": passed,
            "terminal_flag": None if passed else ("truncation" if truncated else "wrong_conclusion"),
            "first_unmet": None if passed else "S", "termination": "truncated" if truncated else "submitted",
            "calls": 0 if truncated else 3, "tokens_in": tokens, "tokens_out": 0,
            "facets": {"family": family, "intent": intent, "V": v, "W": w, "D": d, "lane": lane,
                       "cell": f"V{v}-{w}-{d}", "exposures": exposures}}


def test_contrast_weights_are_seed_002_appendix_d() -> None:
    v = contrast_weights("V")
    assert v[(128, "low", "raw")] == 0.25 and v[(8, "high", "linked")] == -0.25
    vxw = contrast_weights("VxW")
    assert vxw[(128, "high", "raw")] == 0.5 and vxw[(128, "low", "raw")] == -0.5 and vxw[(8, "low", "linked")] == 0.5
    assert contrast_weights("compact") == {(8, "low", "compact"): 1.0, (8, "low", "raw"): -1.0}
    for name in CONTRASTS:
        assert sum(contrast_weights(name).values()) == 0


def test_contrasts_on_one_hand_worked_unit() -> None:
    # success 1 everywhere except (128, high, linked) and (8, low, compact)
    fails = {(128, "high", "linked"), (8, "low", "compact")}
    recs = [rec("m", "f", "email", c, c not in fails) for c in ALL_CELLS]
    got = {r["contrast"]: r["pp"] for r in contrasts(recs, "fixed", n_boot=200)}
    # V: the four paired differences 128 - 8 are 0, 0, 0, -1 -> -25 pp; likewise W and linked
    assert got["V"] == got["W"] == got["linked"] == -25.0
    # each interaction: the DiD is -1 at D=linked (resp. W=high / V=128) and 0 at the other level -> -50 pp
    assert got["VxW"] == got["VxD"] == got["WxD"] == -50.0
    assert got["compact"] == -100.0 and got["typed"] == 0.0


def test_bootstrap_interval_matches_scipy_when_each_cluster_holds_one_unit() -> None:
    values = np.array([-100.0, -75.0, -50.0, -50.0, -25.0, 0.0, 0.0, 25.0, -100.0, -50.0, 0.0, -25.0])
    est, lo, hi, p = cluster_bootstrap(values, [f"c{i}" for i in range(len(values))], n_boot=10_000)
    ref = sps.bootstrap((values,), np.mean, n_resamples=10_000, method="percentile", confidence_level=0.95,
                        random_state=np.random.default_rng(7)).confidence_interval
    assert est == pytest.approx(values.mean())
    assert lo == pytest.approx(ref.low, abs=3.0) and hi == pytest.approx(ref.high, abs=3.0)
    assert p < 0.01


def test_cluster_bootstrap_resamples_whole_clusters() -> None:
    # two clusters whose units agree inside: any replicate is one of three values
    values = np.array([-40.0, -40.0, -40.0, 20.0])
    est, lo, hi, p = cluster_bootstrap(values, ["a", "a", "a", "b"], n_boot=2_000)
    assert est == pytest.approx(-25.0)
    # a replicate draws cluster a k times of 2: (k*(-120) + (2-k)*20) / (3k + 2-k), k = 0, 1, 2
    assert lo == -40.0 and hi == 20.0 and p < 1


def test_degenerate_contrast_has_the_floor_p_value() -> None:
    est, lo, hi, p = cluster_bootstrap(np.full(6, -100.0), list("abcdef"), n_boot=10_000)
    assert (est, lo, hi, p) == (-100.0, -100.0, -100.0, 1e-4)


def test_sign_flip_by_hand() -> None:
    # intent means 10, 20, 30, -5: observed sum 55; of the 16 flips, |sum| >= 55 for +-65 and +-55 -> 4/16
    assert sign_flip_p([10, 20, 30, -5]) == 0.25
    assert sign_flip_p([1, 1, 1, 1]) == 2 / 16
    assert sign_flip_p([0, 0]) == 1.0
    # against a brute-force count written independently
    x = [3.0, -1.0, 4.0, 1.0, -5.0, 9.0]
    n = sum(abs(sum(s * v for s, v in zip(signs, x))) >= abs(sum(x)) - 1e-12
            for signs in itertools.product((1, -1), repeat=len(x)))
    assert sign_flip_p(x) == n / 64


def test_holm_over_the_eight_and_clusters_reported() -> None:
    recs = []
    for i, intent in enumerate(["accounting", "email", "files", "calendar"]):
        for j in range(3):
            fam = f"{intent}-{j}"
            for c in ALL_CELLS:
                recs.append(rec("m", fam, intent, c, not (c[0] == 128 and (i + j) % 3 != 0)))
    rows = {r["contrast"]: r for r in contrasts(recs, "fixed", n_boot=2_000)}
    v = rows["V"]
    assert v["units"] == 12 and v["family_clusters"] == 12 and v["intent_clusters"] == 4 and v["model_clusters"] == 1
    ps = [rows[c]["family_p"] for c in CONTRASTS]
    order = np.argsort(ps, kind="stable")
    expect = np.maximum.accumulate(np.minimum(1, (8 - np.arange(8)) * np.array(ps)[order]))
    got = np.array([rows[c]["family_p_holm"] for c in CONTRASTS])[order]
    assert np.allclose(got, expect)
    # one configuration: the model bootstrap cannot vary
    assert v["model_lo"] == v["model_hi"] == v["pp"]


def test_truncation_decomposition_and_bounds_by_hand() -> None:
    # five matched pairs (V=8, V=128) as (success, truncated):
    pairs = [((1, 0), (0, 1)),  # lost, V=128 truncated
             ((1, 0), (0, 0)),  # lost, not truncated
             ((0, 0), (1, 0)),  # gained
             ((1, 0), (1, 0)),  # both pass
             ((0, 1), (0, 0))]  # V=8 truncated failure
    recs = []
    for n, (lo, hi) in enumerate(pairs):
        recs.append(rec("m", f"f{n}", "email", (8, "low", "raw"), bool(lo[0]), truncated=bool(lo[1])))
        recs.append(rec("m", f"f{n}", "email", (128, "low", "raw"), bool(hi[0]), truncated=bool(hi[1])))
    t = truncation(recs, "fixed")
    assert t["pairs"] == 5 and t["effect_pp"] == pytest.approx(-20.0)
    assert (t["lost"], t["gained"], t["lost_truncated_at_V128"]) == (2, 1, 1)
    assert t["pp_lost"] == pytest.approx(40.0) and t["pp_lost_in_truncated"] == pytest.approx(20.0)
    assert t["neither_truncated"] == 3 and t["effect_neither_truncated_pp"] == pytest.approx(0.0)
    # lower: truncated at 128 stays failed, truncated at 8 would have passed: (-1 -1 +1 +0 -1)/5
    # upper: truncated at 128 would have passed, truncated at 8 stays failed: (0 -1 +1 +0 +0)/5
    assert t["bounds_pp"] == [pytest.approx(-40.0), pytest.approx(0.0)]
    assert t["per_V"][8]["share"] == t["per_V"][128]["share"] == 0.2
    assert t["per_V"][128]["before_first_call"] == 1
    assert t["truncated_by_arm"] == {"V": {"8": 1, "128": 1}, "W": {"low": 2, "high": 0},
                                     "linked": {"raw": 2, "linked": 0}}


def test_routed_versus_fixed_by_hand() -> None:
    recs = []
    for n in range(4):
        cell = (128, "low", "raw")
        recs.append(rec("m", f"f{n}", "email", cell, n < 1, lane="fixed", tokens=5000, exposures=128 * 4))
        recs.append(rec("m", f"f{n}", "email", cell, n < 3, lane="routed", tokens=2000, exposures=128 + 4 * 3))
    out = lanes(recs, n_boot=1000)
    assert out["pairs"] == 4 and out["routed_minus_fixed_pp"] == pytest.approx(50.0)
    assert out["fixed_extra_tokens"] == 3000 and out["fixed_extra_exposures"] == pytest.approx(512 - 140)


def test_failure_records_per_level() -> None:
    recs = [rec("m", "f", "email", (128, "low", "raw"), False, truncated=True),
            rec("m", "f", "email", (128, "high", "raw"), False),
            rec("m", "f", "email", (8, "low", "raw"), True)]
    rows = failure_records(recs)
    v128 = [r for r in rows if r["axis"] == "V" and r["level"] == "V128"]
    assert {(r["obligation"], r["flag"], r["failures"], r["episodes"]) for r in v128} == {
        ("S", "truncation", 1, 2), ("S", "wrong_conclusion", 1, 2)}
    assert not [r for r in rows if r["level"] == "V8"]
    assert {r["level"] for r in rows if r["axis"] == "D"} == {"raw"}


# --- edges of the pressure summary (issue 20 mutation survivors) -----------------------------------

def test_summarise_primary_lane_and_success_shares() -> None:
    from pytest_agentfloor.stats.pressure import summarise

    assert summarise([{"kind": "ladder", "passed": True}]) is None
    assert summarise([{"kind": "pressure", "facets": "not a mapping"}]) is None
    cell = (8, "low", "raw")
    recs = [rec("m", "f", "email", cell, True, lane="fixed"), rec("m", "f", "email", cell, False, lane="fixed", run=1),
            rec("m", "f", "email", cell, True, lane="fixed", run=2), rec("m", "f", "email", cell, False, lane="routed"),
            {"kind": "ladder", "passed": True, "facets": {"lane": "fixed"}}]
    s = summarise(recs, n_boot=50)
    assert s["primary_lane"] == "routed" and s["episodes"] == 4
    assert s["success"] == {"fixed": pytest.approx(2 / 3), "routed": 0.0}
    assert set(s["contrasts"]) == set(s["truncation"]) == {"fixed", "routed"}
    assert s["lanes"]["pairs"] == 1 and s["lanes"]["routed_minus_fixed_pp"] == -100.0
    only_fixed = summarise(recs[:3], n_boot=50)
    assert only_fixed["primary_lane"] == "fixed" and only_fixed["lanes"] is None


def test_contrast_rows_without_complete_units() -> None:
    # one unit with only the checkpoint cells: compact and typed are defined, the factorial ones are not
    recs = [rec("m", "f", "email", (8, "low", d), d != "compact") for d in ("raw", "compact", "typed")]
    rows = {r["contrast"]: r for r in contrasts(recs, "fixed", n_boot=50)}
    assert rows["V"] == {"contrast": "V", "lane": "fixed", "units": 0}
    c = rows["compact"]
    assert c["units"] == 1 and c["pp"] == -100.0 and c["intent_means"] == {"email": -100.0}
    # one family: every replicate equals the estimate, p is floored at 1/B = 1/50
    assert c["signflip_p"] == 1.0 and c["family_p"] == 0.02 and c["family_clusters"] == 1
    assert rows["typed"]["pp"] == 0.0 and rows["typed"]["family_p"] == 1.0  # an estimate of 0 has p = 1
    assert c["family_p_holm"] == pytest.approx(0.04) and rows["typed"]["family_p_holm"] == 1.0  # Holm of two
    assert c["signflip_p_holm"] == 1.0 and c["intent_p_holm"] == pytest.approx(0.04) and "pp_holm" not in c
    assert contrasts(recs, "routed", n_boot=50)[0] == {"contrast": "V", "lane": "routed", "units": 0}


def test_unit_success_is_the_mean_over_runs() -> None:
    from pytest_agentfloor.stats.pressure import unit_table

    recs = [rec("m", "f", "email", (8, "low", "raw"), p, run=i) for i, p in enumerate([True, False, True, True])]
    units = unit_table(recs, "fixed")
    assert units == {("m", "f"): {"intent": "email", "cells": {(8, "low", "raw"): 0.75}}}
    assert unit_table(recs, "routed") == {}


def test_truncation_edges() -> None:
    cell8, cell128 = (8, "low", "raw"), (128, "low", "raw")
    assert truncation([rec("m", "f", "email", cell8, True)], "routed") is None
    lone = truncation([rec("m", "f", "email", cell8, False, truncated=True)], "fixed")
    assert lone["pairs"] == 0 and "effect_pp" not in lone and lone["per_V"][8]["truncated"] == 1
    # a record marked only by its termination is truncated too; runs pair by their index
    a = rec("m", "f", "email", cell128, False, run=1)
    a["terminal_flag"], a["termination"] = None, "truncated"
    recs = [rec("m", "f", "email", cell8, True, run=0), rec("m", "f", "email", cell8, True, run=1), a]
    t = truncation(recs, "fixed")
    assert t["pairs"] == 1 and t["lost"] == 1 and t["lost_truncated_at_V128"] == 1
    assert t["per_V"][128] == {"episodes": 1, "truncated": 1, "share": 1.0, "before_first_call": 0}
    assert t["neither_truncated"] == 0 and t["effect_neither_truncated_pp"] is None


def test_failure_records_order_and_infra() -> None:
    recs = [rec("m", "f", "email", (128, "high", "linked"), False),
            rec("m", "f", "email", (32, "low", "typed"), False),
            rec("m", "f", "email", (8, "high", "compact"), False)]
    recs[0]["first_unmet"], recs[0]["infra_error"] = None, True
    recs[1]["first_unmet"], recs[1]["terminal_flag"] = None, None
    rows = failure_records(recs)
    assert [r["level"] for r in rows if r["axis"] == "V"] == ["V8", "V32", "V128"]
    assert [r["level"] for r in rows if r["axis"] == "W"] == ["low", "high", "high"]
    assert [r["level"] for r in rows if r["axis"] == "D"] == ["compact", "typed", "linked"]
    assert [r["axis"] for r in rows][:3] == ["D", "D", "D"]  # axes sort by name
    v = {r["level"]: r for r in rows if r["axis"] == "V"}
    assert (v["V128"]["obligation"], v["V32"]["obligation"], v["V32"]["flag"]) == ("infra", "-", "-")
    w_high = [(r["obligation"], r["failures"], r["episodes"]) for r in rows if r["level"] == "high"]
    assert sorted(w_high) == [("S", 1, 2), ("infra", 1, 2)]


def test_lanes_without_exposures() -> None:
    cell = (8, "low", "raw")
    fx, ro = rec("m", "f", "email", cell, False, lane="fixed", tokens=300), rec("m", "f", "email", cell, True,
                                                                                 lane="routed", tokens=100)
    fx["facets"]["exposures"] = None
    out = lanes([fx, ro], n_boot=50)
    assert out["pairs"] == 1 and out["fixed_extra_tokens"] == 200.0 and out["fixed_extra_exposures"] is None
    assert (out["lo"], out["hi"], out["p"]) == (100.0, 100.0, 0.02)  # one cluster: every replicate 100, p floored


def test_failure_records_count_repeats_and_put_bigger_groups_first() -> None:
    cell = (8, "low", "raw")
    recs = [rec("m", f"f{i}", "email", cell, False) for i in range(3)]  # (S, wrong_conclusion) three times
    odd = rec("m", "g", "email", cell, False, truncated=True)
    odd["first_unmet"] = "A"
    recs.append(odd)
    mid = rec("m", "h", "email", cell, True)
    mid["facets"]["W"] = "medium"  # a level the report does not know sorts after the known ones
    other = rec("m", "h2", "email", cell, False)
    other["facets"]["W"] = "medium"
    rows = failure_records(recs + [mid, other])
    w = [(r["level"], r["obligation"], r["flag"], r["failures"], r["episodes"]) for r in rows if r["axis"] == "W"]
    assert w == [("low", "S", "wrong_conclusion", 3, 4), ("low", "A", "truncation", 1, 4),
                 ("medium", "S", "wrong_conclusion", 1, 2)]


def test_truncation_second_hand_worked_case() -> None:
    def at(fam: str, d: str, v: int, ok: bool, *, run: int = 0, flag: bool = False, term: bool = False,
           calls: int = 3) -> dict:
        r = rec("m", fam, "email", (v, "low", d), ok, run=run)
        r["terminal_flag"] = "truncation" if flag else (None if ok else "wrong_conclusion")
        r["termination"] = "truncated" if term else "submitted"
        r["calls"] = calls
        return r

    recs = [at("f1", "raw", 8, True), at("f1", "raw", 128, False, flag=True),             # lost, cut (flag only)
            at("f2", "raw", 8, True), at("f2", "raw", 128, False, term=True, calls=0),    # lost, cut (termination only)
            at("f3", "linked", 8, False), at("f3", "linked", 128, True),                 # gained
            at("f3", "linked", 8, False, run=1), at("f3", "linked", 128, True, run=1),   # gained, second run
            at("f4", "raw", 8, False, flag=True, term=True, calls=0), at("f4", "raw", 128, False),
            at("f5", "compact", 8, True, calls=0), at("f5", "compact", 128, False)]     # not an endpoint cell
    t = truncation(recs, "fixed")
    assert t["lane"] == "fixed" and t["pairs"] == 5 and (t["lost"], t["gained"]) == (2, 2)
    assert t["lost_truncated_at_V128"] == 2 and t["pp_lost"] == 40.0 and t["pp_lost_in_truncated"] == 40.0
    assert t["effect_pp"] == 0.0
    assert t["neither_truncated"] == 2 and t["effect_neither_truncated_pp"] == 100.0
    # lower: (0-1) + (0-1) + (1-0) + (1-0) + (0-1) = -1; upper: (1-1) + (1-1) + 1 + 1 + (0-0) = 2; over 5 pairs
    assert t["bounds_pp"] == [pytest.approx(-20.0), pytest.approx(40.0)]
    assert t["per_V"][8] == {"episodes": 6, "truncated": 1, "share": pytest.approx(1 / 6), "before_first_call": 1}
    assert t["per_V"][128] == {"episodes": 6, "truncated": 2, "share": pytest.approx(1 / 3), "before_first_call": 1}
    assert t["truncated_by_arm"] == {"V": {"8": 1, "128": 2}, "W": {"low": 3, "high": 0},
                                     "linked": {"raw": 3, "linked": 0}}
    gains = truncation([r for r in recs if r["task"] == "f3"], "fixed")
    assert gains["effect_pp"] == 100.0 and gains["bounds_pp"] == [100.0, 100.0]


def test_lanes_pair_runs_and_a_missing_run_is_run_0() -> None:
    cell = (8, "low", "raw")
    fixed = [rec("m", "f", "email", cell, False, lane="fixed", run=r) for r in (0, 1, 2)]
    routed = [rec("m", "f", "email", cell, r < 2, lane="routed", run=r) for r in (0, 1)]
    del fixed[0]["run"]  # an older record without a run index pairs as run 0
    out = lanes(fixed + routed, n_boot=50)
    assert out["pairs"] == 2 and out["routed_minus_fixed_pp"] == 100.0


def test_lanes_cluster_by_family_and_count_both_token_kinds() -> None:
    cell = (8, "low", "raw")
    recs = []
    for fam, routed_ok in (("f1", True), ("f2", False)):
        for c in (cell, (8, "high", "raw")):
            fx = rec("m", fam, "email", c, False, lane="fixed")
            ro = rec("m", fam, "email", c, routed_ok, lane="routed")
            fx["tokens_in"], fx["tokens_out"], ro["tokens_in"], ro["tokens_out"] = 300, 50, 100, 20
            recs += [fx, ro]
    out = lanes(recs, n_boot=400, seed=5)
    # two family clusters with differences 100 and 0: replicates are 0, 50 or 100 pp
    assert out["routed_minus_fixed_pp"] == 50.0 and (out["lo"], out["hi"]) == (0.0, 100.0)
    assert out["fixed_extra_tokens"] == 230.0  # (300 + 50) - (100 + 20)
    assert lanes(recs, n_boot=400, seed=5) == out and lanes(recs, n_boot=400, seed=6)["p"] != out["p"]
    bare = [{k: v for k, v in r.items() if not k.startswith("tokens")} for r in recs]
    assert lanes(bare, n_boot=50)["fixed_extra_tokens"] == 0.0


def test_unit_table_keeps_models_apart_and_skips_other_lanes() -> None:
    from pytest_agentfloor.stats.pressure import unit_table

    cell = (8, "low", "raw")
    recs = [rec("a", "f", "email", cell, True, lane="routed"), rec("a", "f", "email", cell, False),
            rec("b", "f", "files", cell, True)]
    assert unit_table(recs, "fixed") == {("a", "f"): {"intent": "email", "cells": {cell: 0.0}},
                                         ("b", "f"): {"intent": "files", "cells": {cell: 1.0}}}


def test_contrast_intervals_follow_the_seed() -> None:
    rng = np.random.default_rng(11)
    recs = [rec("m", f"{intent}-{fam}", intent, c, bool(rng.random() < 0.6))
            for intent in ("email", "files", "calendar") for fam in range(3) for c in ALL_CELLS]
    a = contrasts(recs, "fixed", n_boot=300, seed=1)
    assert contrasts(recs, "fixed", n_boot=300, seed=1) == a
    assert contrasts(recs, "fixed", n_boot=300, seed=2) != a
    assert [r["pp"] for r in contrasts(recs, "fixed", n_boot=300, seed=2)] == [r["pp"] for r in a]


def test_cluster_bootstrap_centred_p_by_enumeration() -> None:
    # three one-unit clusters 1, -1, 2: the mean is 2/3; of the 27 equally likely draws the share with
    # |mean* - 2/3| >= 2/3 (ties included) is the p value
    vals = [1.0, -1.0, 2.0]
    means = [sum(d) / 3 for d in itertools.product(vals, repeat=3)]
    exact = sum(abs(m - 2 / 3) >= 2 / 3 - 1e-12 for m in means) / 27
    est, lo, hi, p = cluster_bootstrap(np.array(vals), ["a", "b", "c"], n_boot=10_000, seed=3)
    assert est == pytest.approx(2 / 3) and p == pytest.approx(exact, abs=0.02)
    qs = sorted(means)
    assert qs[0] <= lo <= est <= hi <= qs[-1]
    assert cluster_bootstrap(np.array(vals), ["a", "b", "c"], n_boot=10_000, seed=3) == (est, lo, hi, p)
    assert cluster_bootstrap(np.array(vals), ["a", "b", "c"], n_boot=10_000, seed=4)[3] != p
    # an estimate of exactly 1 with no spread: the floor, not 1
    assert cluster_bootstrap(np.ones(3), ["a", "b", "c"], n_boot=100) == (1.0, 1.0, 1.0, 0.01)


def test_cluster_bootstrap_bounds_are_the_documented_order_statistics() -> None:
    from pytest_agentfloor.stats.bootstrap import resample_weights

    values = np.array([5.0, -20.0, 40.0, 10.0, -5.0, 0.0, 15.0])
    clusters = ["a", "a", "b", "c", "c", "d", "e"]
    w = resample_weights(5, 400, 9)  # clusters a..e in sorted order, the documented draw
    sums, counts = np.array([-15.0, 40.0, 5.0, 0.0, 15.0]), np.array([2.0, 1.0, 2.0, 1.0, 1.0])
    reps = np.sort((w @ sums) / (w @ counts))
    for level, k in ((0.95, 10), (0.8, 40)):  # k = ceil((1 - level) / 2 * 400)
        est, lo, hi, _ = cluster_bootstrap(values, clusters, n_boot=400, seed=9, level=level)
        assert est == pytest.approx(45 / 7)
        assert (lo, hi) == (reps[k - 1], reps[400 - k])


def test_sign_flip_of_nothing_is_one() -> None:
    assert sign_flip_p([]) == 1.0
    assert sign_flip_p([-3.0]) == 1.0


def test_summarise_wires_each_lane_through() -> None:
    from pytest_agentfloor.stats.pressure import summarise

    rng = np.random.default_rng(2)
    recs = [rec("m", f"{i}-{j}", i, c, bool(rng.random() < 0.5), lane=lane)
            for lane in ("fixed", "routed") for i in ("email", "files") for j in range(2) for c in ALL_CELLS]
    recs.append(rec("m", "solo", "email", (8, "low", "raw"), True, lane="solo"))
    s = summarise(recs, n_boot=120, seed=8)
    for lane in ("fixed", "routed"):
        assert s["contrasts"][lane] == contrasts(recs, lane, n_boot=120, seed=8)
        assert s["truncation"][lane] == truncation(recs, lane)
    assert s["success"]["solo"] == 1.0  # one passing episode: 1/1
    assert s["lanes"] == lanes(recs, n_boot=120, seed=8)
    assert s["failure_records"] == failure_records(recs)


def test_truncation_pairs_a_record_without_run_index_as_run_0() -> None:
    a = rec("m", "f", "email", (8, "low", "raw"), True)
    b = rec("m", "f", "email", (128, "low", "raw"), False, run=0)
    del a["run"]
    assert truncation([a, b], "fixed")["pairs"] == 1


# -- records, TCR and pressure statistics at their edges (the mutation run's survivors) ------------
# Issue 20 survivors of records.py, tcr.py and pressure.py: behaviour no earlier test pinned down.
#
# Expected values are hand-worked (in comments), from scipy, or from the documented bootstrap draw
# recomputed here with plain numpy indexing; never from the function under test.


def test_cluster_bootstrap_lower_bound_is_the_kth_smallest_replicate() -> None:
    """x_cluster_bootstrap__mutmut_51: the lower bound is replicate k (not k - 1) when replicates are all distinct."""
    values = np.array([math.sqrt(p) for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43)]) - 4.0
    clusters = ["c00", "c00", "c01", "c02", "c03", "c04", "c05", "c05", "c06", "c07", "c08", "c09", "c10", "c11"]
    n_boot, seed = 400, 3
    # the documented draw: row b of default_rng(seed).integers(0, U, (B, U)) indexes the sorted clusters
    names = sorted(set(clusters))
    sums = np.array([values[[c == n for c in clusters]].sum() for n in names])
    sizes = np.array([clusters.count(n) for n in names], dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    reps = np.sort(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1))
    k = 10  # ceil(0.025 * 400)
    assert reps[k - 2] < reps[k - 1] < reps[k] and reps[n_boot - k - 1] < reps[n_boot - k]  # neighbours differ
    est, lo, hi, p = cluster_bootstrap(values, clusters, n_boot=n_boot, seed=seed)
    assert est == pytest.approx(values.mean())
    assert lo == pytest.approx(reps[k - 1], abs=1e-12) and hi == pytest.approx(reps[n_boot - k], abs=1e-12)
    assert p == pytest.approx(max(1 / n_boot, float(np.mean(np.abs(reps - est) >= abs(est)))))


def test_failure_record_levels_in_design_order_then_unknown_by_name() -> None:
    """x__order__mutmut_5, _6, _10, _18, _19, _20, _21, _22, _23, _26, _30, _31, _32, _33 (the old rank table, now
    NAMED_LEVELS): V by number, W low then high, D raw, compact, typed, linked, any other level after them by name."""
    def fail(v: object, w: str, d: str, family: str) -> dict:
        return {"kind": "pressure", "model": "m", "passed": False, "first_unmet": "S", "terminal_flag": "budget",
                "facets": {"family": family, "intent": "email", "V": v, "W": w, "D": d, "lane": "fixed"}}

    # "a" sorts before every known name, so a known level mistaken for an unknown one would move
    # (and "b" comes first in the records, so unknown levels are seen sorted, not kept in record order)
    recs = [fail(16, "b", "b", "f6"), fail("x", "a", "linked", "f1"), fail(128, "high", "a", "f2"),
            fail(16, "low", "typed", "f3"), fail(8, "high", "compact", "f4"), fail(128, "low", "raw", "f5")]
    rows = failure_records(recs)
    levels = {axis: [r["level"] for r in rows if r["axis"] == axis] for axis in ("V", "W", "D")}
    assert levels == {"V": ["V8", "V16", "V128", "Vx"], "W": ["low", "high", "a", "b"],
                      "D": ["raw", "compact", "typed", "linked", "a", "b"]}
    assert [r["failures"] for r in rows if r["axis"] == "V"] == [1, 2, 2, 1]
