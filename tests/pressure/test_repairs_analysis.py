"""The repair section's statistics from run records, against hand-worked populations: the records'
arms and configurations, the repair table (seed 002's generic rescue reproduced through records),
the cap sweep's strata, check and margin, the frontier's endings, repeats, the policy and switches."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentfloor.pressure.repairs.records import arm_label, configuration, runs
from pytest_agentfloor.pressure.repairs.summary import summarise
from pytest_agentfloor.pressure.repairs.sweep import cap_sweep, stratum
from pytest_agentfloor.stats.pressure import summarise as capacity

B = 2_000


def rec(model: str, family: str, *, V: int | None = 8, W: str | None = "low", D: str | None = "raw",
        lane: str = "fixed", ok: bool = True, repairs: tuple[str, ...] = (), cap: int | None = None, run: int = 0,
        calls: int | None = None, termination: str | None = None, tokens: int = 1000, cost: float | None = None,
        truncated: bool = False, **facets: Any) -> dict[str, Any]:
    name = model + "".join(f"+{x}" for x in [*sorted(repairs), *([f"cap{cap}"] if cap else [])])
    f: dict[str, Any] = {"family": family, "intent": family[:1], "V": V, "W": W, "D": D, "lane": lane,
                         "cell": f"calls{calls}" if calls else f"V{V}-{W}-{D}", **facets}
    if calls:
        f["calls"] = calls
    if repairs:
        f["repairs"] = sorted(repairs)
    if cap:
        f["cap_scale"] = cap
    return {"kind": "pressure", "model": name, "run": run, "passed": ok, "facets": f, "tokens_in": tokens,
            "tokens_out": 0, "wall_s": 1.0, "cost_usd": cost, "calls": calls or 3, "turns": 3,
            "termination": termination or ("truncated" if truncated else "submitted" if ok else "final_answer"),
            "terminal_flag": None if ok else "truncation" if truncated else "wrong_conclusion"}


def test_arms_and_configurations_from_records() -> None:
    rs = runs([rec("m", "f", repairs=("router",), lane="routed"), rec("m", "f", cap=16),
               {**rec("m", "f"), "model": "m+router", "facets": {**rec("m", "f")["facets"], "repairs": ["router"]}},
               rec("other+thing", "f")])
    assert [arm_label(r.arm) for r in rs] == ["router+routed", "cap16", "router", "none"]
    assert [r.config for r in rs] == ["m", "m", "m", "other+thing"]  # a suffix that is not its own arm stays
    assert configuration({"model": "m+cap16"}, frozenset({"cap16"})) == "m"
    # a record without the arm in its facets reads its stored config (records written before)
    old = {**rec("m", "f"), "config": {"repairs": ["interface_guide"], "cap_scale": 4}}
    assert arm_label(runs([old])[0].arm) == "interface_guide+cap4"


def generic_rescue(families: int = 8) -> list[dict[str, Any]]:
    """Seed 002's generic rescue (p0, p1, r) = (0.8, 0.4, 0.5) on the W layer: in every family ten
    units (five configurations x two encodings at V8), unit i succeeds unstressed if i < 8 and
    stressed if i < 4; the workflow prompt rescues half of the failures (i < 9 and i < 7); the
    interface guide, run on the same cells, changes nothing."""
    out = []
    for f in range(families):
        for i in range(10):
            model, d = f"c{i // 2}", ("raw", "compact")[i % 2]
            for w, none_ok, rep_ok in (("low", i < 8, i < 9), ("high", i < 4, i < 7)):
                out += [rec(model, f"f{f}", W=w, D=d, ok=none_ok),
                        rec(model, f"f{f}", W=w, D=d, ok=rep_ok, repairs=("workflow_prompt",)),
                        rec(model, f"f{f}", W=w, D=d, ok=none_ok, repairs=("interface_guide",))]
    return out


def test_the_generic_rescue_through_records_gives_40_30_20_and_the_control_gives_delta() -> None:
    s = summarise(generic_rescue(), n_boot=B)
    assert s is not None
    w = next(r for r in s["layers"] if r["layer"] == "W")
    assert (w["L"]["pp"], w["gamma"]["pp"], w["sigma"]["pp"]) == pytest.approx((40.0, 30.0, 20.0))
    assert w["delta"]["pp"] == pytest.approx(20.0) and w["best_other"] == "interface_guide"
    assert w["L"]["units"] == 8 * 10 and w["L"]["clusters"] == 8
    # every family agrees, so no interval has width: the guard keeps p at the sign flip's 2^-8
    assert w["sigma"]["collapsed"] and w["sigma"]["p"] == pytest.approx(1 / 256)
    assert w["active"] and w["p_iut"] == pytest.approx(1 / 256)
    d = next(r for r in s["layers"] if r["layer"] == "D")  # the guide on its own pressure: raw -> compact
    assert d["gamma"]["pp"] == pytest.approx(0.0) and not d["active"]
    assert [r["layer"] for r in s["layers"]] == ["W", "D"]  # Holm over the two capacity layers that ran
    assert w["p_holm"] == pytest.approx(2 / 256)


def test_too_few_families_never_activate() -> None:
    s = summarise(generic_rescue(families=3), n_boot=B)
    w = next(r for r in s["layers"] if r["layer"] == "W")
    assert w["sigma"]["pp"] == pytest.approx(20.0) and w["sigma"]["p"] == pytest.approx(1 / 8) and not w["active"]


def sweep_population(families: int, heavy_trunc: bool = True) -> list[dict[str, Any]]:
    """'heavy' truncates every V=128 episode at the frozen cap and none at x16; 'calm' never truncates;
    'mild' truncates one V=128 endpoint unit in ten families' worth and keeps it at the high cap."""
    out = []
    for f in range(families):
        for w in ("low", "high"):
            for d in ("raw", "linked"):
                for v in (8, 128):
                    out += [rec("heavy", f"f{f}", V=v, W=w, D=d, ok=v == 8, truncated=v == 128 and heavy_trunc),
                            rec("heavy", f"f{f}", V=v, W=w, D=d, cap=16),
                            rec("calm", f"f{f}", V=v, W=w, D=d), rec("calm", f"f{f}", V=v, W=w, D=d, cap=16)]
                    bad = v == 128 and f == 0 and w == "low" and d == "raw"  # 1 of 4 x families V128 episodes
                    out += [rec("mild", f"f{f}", V=v, W=w, D=d, ok=not bad, truncated=bad),
                            rec("mild", f"f{f}", V=v, W=w, D=d, ok=not bad, truncated=bad, cap=16)]
    return out


def test_cap_sweep_strata_check_and_margin_by_hand() -> None:
    s = cap_sweep(runs(sweep_population(6)), n_boot=B)
    rows = {r["config"]: r for r in s["rows"]}
    h = rows["heavy"]
    assert (h["stratum"], h["truncated_low"], h["truncated_high"], h["check"], h["scale"]) == ("B", 1.0, 0.0, True, 16)
    assert (h["low"]["pp"], h["high"]["pp"], h["interaction"]["pp"]) == (-100.0, 0.0, 100.0)
    assert h["interaction"]["clears_margin"]  # six unanimous families: sign flip 1/64 < 2.5%
    assert rows["calm"]["stratum"] == "N" and rows["calm"]["interaction"]["pp"] == 0
    m = rows["mild"]  # 1 of 24 V=128 episodes truncated at both caps: 4.2%, between N and M
    assert m["truncated_low"] == pytest.approx(1 / 24) and m["stratum"] == "-" and m["check"]
    assert [st["stratum"] for st in s["strata"]] == ["B", "N"] and s["strata"][0]["configs"] == 1
    assert not cap_sweep(runs(sweep_population(5)), n_boot=B)["rows"][0]["interaction"]["clears_margin"]
    assert [stratum(x) for x in (0.0, 0.01, 0.05, 0.199, 0.2)] == ["N", "-", "M", "M", "B"]


def test_a_failed_manipulation_check_keeps_a_configuration_out_of_pooled_b() -> None:
    pop = [r for r in sweep_population(6) if not (r["model"] == "heavy+cap16" and r["facets"]["V"] == 128)]
    for f in range(6):  # the high cap still truncates every V=128 episode
        for w in ("low", "high"):
            for d in ("raw", "linked"):
                pop.append(rec("heavy", f"f{f}", V=128, W=w, D=d, ok=False, truncated=True, cap=16))
    s = cap_sweep(runs(pop), n_boot=B)
    h = next(r for r in s["rows"] if r["config"] == "heavy")
    assert h["stratum"] == "B" and not h["check"] and h["interaction"]["pp"] == 0
    assert "B" not in [st["stratum"] for st in s["strata"]]


def test_frontier_endings_medians_and_change_from_two_calls() -> None:
    pop = []
    for f in range(4):
        for k in (2, 6, 14, 30):
            ok = k < 30 and not (k == 14 and f == 0)
            end = None if ok else "token_budget" if k == 30 else "call_limit"
            pop.append(rec("x", f"f{f}", V=8, W=None, calls=k, ok=ok, termination=end, tokens=1000 * k))
            pop.append({**rec("x", f"f{f}", V=8, W=None, calls=k, repairs=("controller",), controller_calls=k - 2),
                        "turns": 2})
    fr = summarise(pop, n_boot=B)["frontier"]
    rows = {(r["arm"], r["calls"]): r for r in fr["rows"]}
    assert rows[("none", 30)]["endings"]["token_budget"] == 4 and rows[("none", 30)]["success"] == 0
    assert rows[("none", 14)]["endings"] == {**{e: 0 for e in fr["endings"]}, "passed": 3, "call_limit": 1}
    assert rows[("none", 30)]["change_from_2"]["pp"] == -100 and rows[("none", 14)]["change_from_2"]["pp"] == -25
    assert rows[("none", 30)]["median_tokens"] == 30_000
    c = rows[("controller", 30)]
    assert c["success"] == 1 and c["median_requests"] == 2 and c["median_controller_calls"] == 28
    assert "change_from_2" not in rows[("none", 2)]
    layer = next(r for r in summarise(pop, n_boot=B)["layers"] if r["repair"] == "controller")
    assert (layer["L"]["pp"], layer["gamma"]["pp"], layer["sigma"]["pp"]) == (100.0, 100.0, 100.0)
    assert layer["delta"] is None and layer["p_iut"] == 1 and not layer["active"]  # no wrong-layer control ran
    pop += [{**r, "model": "x+canonical_delivery", "facets": {**r["facets"], "repairs": ["canonical_delivery"]}}
            for r in pop if r["model"] == "x"]  # the control: canonical delivery changes nothing on raw records
    layers = {r["repair"]: r for r in summarise(pop, n_boot=B)["layers"]}
    c, control = layers["controller"], layers["canonical_delivery"]
    assert c["delta"]["pp"] == 100.0 and c["best_other"] == "canonical_delivery"
    assert (control["L"]["pp"], control["gamma"]["pp"], control["sigma"]["pp"]) == (100.0, 0.0, 0.0)
    assert c["p_iut"] == pytest.approx(1 / 16) and not c["active"]  # four families: 2^-4 > 5% / 2


def test_repeats_policy_and_switches_by_hand() -> None:
    pop = []
    for f in range(6):
        for run in range(3):
            flaky = f == 0 and run == 1  # one group of 18 disagrees
            pop += [rec("inc", f"f{f}", V=128, ok=False, run=run, cost=0.02),
                    rec("inc", f"f{f}", V=128, ok=not flaky, run=run, repairs=("router",), cost=0.01),
                    rec("alt", f"f{f}", V=128, ok=f % 2 == 0, run=run, cost=0.05)]
    s = summarise(pop, n_boot=B)
    rep = {r["arm"]: r for r in s["repeats"]["rows"]}
    assert rep["router"]["groups"] == 6 and rep["router"]["disagreement"] == pytest.approx(1 / 6)
    assert rep["router"]["pass_at_1"] == pytest.approx(17 / 18) and rep["router"]["all_runs"] == pytest.approx(5 / 6)
    assert rep["none"]["groups"] == 12 and rep["none"]["disagreement"] == 0
    gain = next(g for g in s["repeats"]["gains"] if g["repair"] == "router")
    assert gain["pp"] == pytest.approx(100 * 17 / 18)
    pol = {r["action"]: r for r in s["policy"] if r["incumbent"] == "inc"}
    assert pol["retry"]["recovered"] == 0 and pol["router"]["recovered"] == 6  # the flaky run is run 1
    assert pol["switch to alt"]["recovered"] == 3 and pol["router"]["blocks"] == 6
    alt = {r["action"]: r for r in s["policy"] if r["incumbent"] == "alt"}
    assert list(alt) == ["retry", "switch to inc"] and alt["switch to inc"]["recovered"] == 0
    # probe charged: every inc probe fails (0.02) and the router costs 0.01 -> 1000 x 0.03
    assert pol["router"]["usd_per_1000_with_probe"] == pytest.approx(30.0)
    sw = s["switches"]
    row = next(r for r in sw["rows"] if (r["incumbent"], r["repair"]) == ("inc", "router"))
    (v,) = row["versus"]
    assert v["switch"] == "alt" and v["success_pp"] == pytest.approx(100 * (17 / 18 - 1 / 2))
    # 'alt' passes the even families, where the repair gains nothing (f0: it loses a third): lower bound 0
    assert v["success_lo"] == 0 and not row["success_superior"]
    assert v["cost_diff"] == pytest.approx(0.01 - 0.05) and row["cost_superior"] and row["nondominated"]
    assert sw["counts"]["router"] == {"success_superior": 0, "nondominated": 1, "cost_superior": 1, "of": 1}


def test_the_capacity_section_reads_the_frozen_harness_only() -> None:
    pop = sweep_population(3)
    s = capacity(pop, n_boot=B)
    assert s["arm_records_left_out"] == len([r for r in pop if r["facets"].get("cap_scale")])
    v = next(c for c in s["contrasts"]["fixed"] if c["contrast"] == "V")
    assert v["units"] == 3 * 3  # (model, family) units of the three plain configurations
    assert summarise([rec("m", "f")]) is None  # nothing but the plain harness: no repair section


def test_each_configuration_gets_its_own_quantities_beside_the_pooled_row() -> None:
    w = next(r for r in summarise(generic_rescue(), n_boot=B)["layers"] if r["layer"] == "W")
    assert sorted(w["by_config"]) == [f"c{k}" for k in range(5)]
    c0 = w["by_config"]["c0"]  # units i = 0, 1: succeed unstressed and stressed, with or without the repair
    assert c0["units"] == 16 and (c0["L"]["pp"], c0["gamma"]["pp"], c0["sigma"]["pp"]) == (0.0, 0.0, 0.0)
    c4 = w["by_config"]["c4"]  # units 8, 9: fail unstressed (8 rescued by the repair), fail stressed
    assert (c4["L"]["pp"], c4["gamma"]["pp"], c4["sigma"]["pp"]) == (0.0, 0.0, -50.0)
