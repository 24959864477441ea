"""The CI gate: pairing with the incumbent's runs, verdict lines and the exit status."""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.gate import GateError, evaluate, parse_floor

REPO = Path(__file__).resolve().parents[1]
# two runs per item: 50 pairs per tier, above the 35 the guarded interval needs to certify -10 pp
SELECT = ["--instances", "i0", "--agentfloor-runs", "2", "-p", "no:cacheprovider"]


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    for tier in ("tier_B", "tier_C"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    pytester.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-report-dir", "baseline")
    return pytester


def test_equal_candidate_passes_the_gate(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-baseline", "baseline/runs.jsonl")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*agentfloor gate: oracle vs oracle (runs.jsonl)*",
                                 "gate: intersection-union test (Berger 1982)*no multiplicity correction*a tier needs at least 35 pairs*",
                                 "gate: compared the selection cases, --instances i0, --agentfloor-runs 2; 100 of the "
                                 "baseline's 100 run(s) in the gated tiers paired",
                                 # 50 concordant pairs: Tango's ±z²/(n+z²) = ±7.1 pp, not the bootstrap's [0, 0]
                                 "gate tier B: PASS: Δ +0.0 pp ?95% CI -7.1, +7.1?, n=50 pairs*",
                                 "gate tier C: PASS: *", "*agentfloor gate: PASSED*"])


def test_worse_candidate_fails_the_gate_with_a_reason(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "fault-partial", *SELECT, "--agentfloor-baseline", "baseline/runs.jsonl",
                             "--gate-tiers", "tier_C")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate tier C: FAIL: Δ -100.0 pp*refuted: the whole interval ?-100.0, *? pp lies below "
                                 "-10 pp*", "*agentfloor gate: FAILED (C)*", "gate: FAILED: failed tier(s) C (exit status 1)"])
    assert "gate tier B" not in result.stdout.str()


def test_item_failures_within_the_margin_do_not_fail_the_gate(bench: pytest.Pytester) -> None:
    bench.makeconftest("""
        from pytest_agentfloor.grading import Verdict

        def pytest_agentfloor_check_obligation(code, case, trajectory):
            if code == "Q" and case.id == "B1" and case.variant == "v0":
                return Verdict("Q", False, "x", "y")
    """)
    result = bench.runpytest("cases/tier_B", "--model", "oracle", *SELECT, "--agentfloor-baseline", "baseline/runs.jsonl",
                             "--gate-margin", "50")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 2  # both runs of B1[v0]
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["gate tier B: PASS: Δ -*", "*agentfloor gate: PASSED*"])


def test_floor_and_unpaired_runs_are_reported(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_B", "--model", "oracle", "--instances", "i0", "--agentfloor-runs", "3",
                             "--agentfloor-baseline", "baseline/runs.jsonl", "--gate-floor", "tier_B>=0.95",
                             "--gate-floor", "tier_E>=0.5")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["gate: unpaired runs: * candidate run(s) without a baseline counterpart, "
                                 "* baseline run(s) not re-run",
                                 "gate: floors for tiers not gated here were ignored: ?'E'?"])
    result = bench.runpytest("cases/tier_B", "--model", "fault-wrong_tool", *SELECT,
                             "--agentfloor-baseline", "baseline/runs.jsonl", "--gate-floor", "B>=90%", "--gate-margin", "100")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate tier B: FAIL: *TCR 0.0% is below the floor 90.0%*"])


def test_gate_usage_errors(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--agentfloor-baseline", "nope.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-baseline nope.jsonl: no such file*"])
    result = bench.runpytest("cases", "--agentfloor-baseline", "baseline/runs.jsonl", "--gate-floor", "B=0.9")
    result.stderr.fnmatch_lines(["*--gate-floor 'B=0.9': expected TIER>=VALUE*"])
    result = bench.runpytest("cases", "--gate-tiers", "A")
    result.stderr.fnmatch_lines(["*--gate-tiers needs --agentfloor-baseline PATH or --gate-floor*"])


def test_two_candidates_cannot_be_gated_at_once(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_B", "--model", "oracle,fault-repeat", *SELECT,
                             "--agentfloor-baseline", "baseline/runs.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*gate: cannot evaluate: the gate compares one candidate model*"])


def _runs(model: str, passes: list[bool], tier: str = "B") -> list[dict]:
    return [{"model": model, "task": f"{tier}{i % 5}", "tier": tier, "variant": f"v{i // 5}", "instance": "i0",
             "run": 0, "passed": p, "infra_error": False} for i, p in enumerate(passes)]


def test_evaluate_pairs_and_decides_like_the_paired_test() -> None:
    base = _runs("inc", [True] * 40)
    cand = _runs("new", [True] * 39 + [False])
    # one loss in 40 pairs: Tango's 95% lower bound is -12.9 pp, so it clears a 15 pp margin, not 10
    assert not evaluate(cand, base, margin_pp=10).passed
    result = evaluate(cand, base, margin_pp=15)
    (v,) = result.verdicts
    assert v.passed and v.test.n_pairs == 40 and v.test.delta_pp == pytest.approx(-2.5)
    assert (v.test.mcnemar_b, v.test.mcnemar_c) == (0, 1)
    # ten losses spread over the eight (variant, instance, run) units: the interval lies below -10 pp
    worse = evaluate(_runs("new", [i % 4 != 0 for i in range(40)]), base, margin_pp=10)
    (w,) = worse.verdicts
    assert w.status == "FAIL" and w.outcome == "refuted" and worse.exit_status == 1
    assert w.upper_pp < -10 and w.reasons[0].startswith("refuted: the whole interval [")
    # the same ten losses in two units: the cluster bootstrap cannot rule out either side
    lumped = evaluate(_runs("new", [True] * 30 + [False] * 10), base, margin_pp=10)
    (u,) = lumped.verdicts
    assert u.status == "INSUFFICIENT EVIDENCE" and u.outcome == "insufficient evidence"
    assert u.lower_pp < -10 < u.upper_pp and "straddles -10 pp" in u.reasons[0]
    assert u.pairs_to_decide > 40 and f"about {u.pairs_to_decide} pairs would decide it" in u.reasons[0]
    infra = _runs("new", [True] * 40)
    infra[0]["infra_error"] = True
    got = evaluate(infra, base)
    assert got.verdicts[0].status == "NO VERDICT" and "cannot be certified" in got.verdicts[0].reasons[-1]
    assert got.exit_status == 75 and "no verdict on tier(s) B" in got.reason()
    # what ran refutes the tier: the model is worse whatever the endpoint did
    bad = _runs("new", [False] * 40)
    bad[0]["infra_error"] = True
    assert evaluate(bad, base).verdicts[0].status == "FAIL" and evaluate(bad, base).exit_status == 1


def test_a_clearly_worse_model_is_refuted_not_too_few() -> None:
    """The issue's case: Δ -100 pp on 25 pairs is below the 35 a pass needs, but it is a FAIL that says so."""
    result = evaluate(_runs("new", [False] * 25), _runs("inc", [True] * 25))
    (v,) = result.verdicts
    assert v.status == "FAIL" and v.outcome == "refuted" and v.test.n_pairs == 25 < result.n_min
    assert v.test.delta_pp == -100 and v.upper_pp < -10 and "refuted" in v.reasons[0]
    assert result.reason() == "failed tier(s) B"


def test_parse_floor() -> None:
    assert parse_floor("tier_A>=0.90") == ("A", 0.9)
    assert parse_floor("A0>=85%") == ("A0", 0.85)
    assert parse_floor("B >= 70") == ("B", 0.7)
    for bad in ("tier_Q>=0.5", "A>0.5", "A>=150%"):
        with pytest.raises(GateError):
            parse_floor(bad)


def test_session_reports_rebuild_byte_identically_and_gate_from_summary(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "oracle,fault-partial", "--agentfloor-reference", "oracle", *SELECT)
    result.stdout.fnmatch_lines(["*paired comparison against oracle*", "*agentfloor reports: *summary.json*"])
    rebuilt = bench.run(sys.executable, "-m", "pytest_agentfloor", "report", "reports/runs.jsonl", "--out", "rebuilt",
                        "--reference", "oracle")
    assert rebuilt.ret == 0, rebuilt.stderr.str()
    for name in ("summary.json", "tcr.csv", "report.md", "report.html"):
        assert (bench.path / "reports" / name).read_bytes() == (bench.path / "rebuilt" / name).read_bytes(), name
    bench.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-report-dir", "base2")
    gated = bench.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-baseline", "base2/summary.json")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["*agentfloor gate: oracle vs oracle (summary.json)*", "*agentfloor gate: PASSED*"])


def test_unknown_reference_is_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "oracle", "--agentfloor-reference", "gpt-9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-reference: 'gpt-9' is not among the selected models (oracle); add it with --model*"])


@pytest.mark.parametrize("n", [1, 5, 25])
def test_few_pairs_are_insufficient_evidence_never_a_pass(n: int) -> None:
    """Identical perfect runs: the plain bootstrap would certify from one pair; the gate must not."""
    result = evaluate(_runs("new", [True] * n), _runs("inc", [True] * n))
    (v,) = result.verdicts
    assert v.status == "INSUFFICIENT EVIDENCE" and not v.passed and not result.passed
    assert v.test.boot_ci95_low_pp == 0  # what the bootstrap alone says
    assert result.n_min == 35 and f"{n} pair(s); at least 35" in v.reasons[0]
    assert "insufficient evidence on tier(s) B" in result.reason()
    # the option can only raise the minimum
    assert evaluate(_runs("new", [True] * 40), _runs("inc", [True] * 40), min_pairs=10).n_min == 35
    assert evaluate(_runs("new", [True] * 40), _runs("inc", [True] * 40), min_pairs=50).verdicts[0].status == \
        "INSUFFICIENT EVIDENCE"
    # one-sided reading: z = 1.645 -> 25 pairs
    assert evaluate(_runs("new", [True] * 25), _runs("inc", [True] * 25), decision="one-sided").passed


def test_partial_candidate_and_protocol_mismatch_block_the_gate() -> None:
    base = _runs("inc", [True] * 40)
    part = evaluate(_runs("new", [True] * 38), base)
    assert not part.passed and part.verdicts[0].status == "PASS"
    assert "partial run: 2 baseline run(s) of the gated tiers were not run" in part.reason()
    told = evaluate(_runs("new", [True] * 40), base, partial=["the session stopped early (stopping after 1 failures)"])
    assert not told.passed and "stopping after 1 failures" in told.reason()
    agentfloor = [dict(r, protocol="agentfloor") for r in _runs("new", [True] * 40)]
    mixed = evaluate(agentfloor, base)  # baseline records carry no protocol: the legacy protocol
    assert not mixed.passed and "protocols differ: candidate ran agentfloor, baseline legacy" in mixed.reason()
    same = evaluate(agentfloor, [dict(r, protocol="agentfloor") for r in base])
    assert same.passed


def test_single_node_id_and_stop_on_first_failure_fail_the_gate(bench: pytest.Pytester) -> None:
    one = bench.runpytest("cases/tier_B/B1.toml::B1[v0-i0-r0-oracle]", "--model", "oracle", *SELECT,
                          "--agentfloor-baseline", "baseline/runs.jsonl", "--gate-tiers", "B")
    assert one.ret != pytest.ExitCode.OK
    one.stdout.fnmatch_lines(["gate: partial run: 49 baseline run(s) of the gated tiers were not run*",
                              "gate tier B: INSUFFICIENT EVIDENCE: *n=1 pairs*",
                              "gate: FAILED: partial run*insufficient evidence on tier(s) B*"])
    stop = bench.runpytest("cases/tier_C", "--model", "fault-partial", *SELECT, "-x",
                           "--agentfloor-baseline", "baseline/runs.jsonl", "--gate-tiers", "C")
    assert stop.ret != pytest.ExitCode.OK
    stop.stdout.fnmatch_lines(["gate: partial run: stopped early*"])


def test_the_gate_is_an_intersection_union_test_without_multiplicity_correction() -> None:
    """Identical perfect runs, 50 pairs in each of six tiers: each tier alone is certified (Tango's bound
    -7.1 pp clears -10 pp, p < 0.025), so the gate passes. Holm over six tiers would have failed them all."""
    from pytest_agentfloor.stats.multiplicity import holm

    base = [r for tier in ("A0", "A", "B", "C", "D", "E") for r in _runs("inc", [True] * 50, tier)]
    cand = [dict(r, model="new") for r in base]
    result = evaluate(cand, base)
    assert result.passed and result.exit_status == 0 and len(result.verdicts) == 6
    alone = evaluate(_runs("new", [True] * 50, "C"), _runs("inc", [True] * 50, "C")).verdicts[0].test
    for v in result.verdicts:
        assert v.status == "PASS" and v.outcome == "certified" and v.test.p_noninferiority < 0.025
        assert (v.test.p_noninferiority, v.test.ci95_low_pp) == (alone.p_noninferiority, alone.ci95_low_pp)
        assert v.test.holm_family is None  # no correction was applied
    assert min(holm([v.test.p_noninferiority for v in result.verdicts])) > 0.025
    assert result.header().startswith("gate: intersection-union test (Berger 1982): passes only if every gated "
                                      "tier is non-inferior, each tested on its own at the full level with no "
                                      "multiplicity correction")
    # Tango's score p at the margin, by hand: with b = c = 0 the restricted MLE of P(only the baseline passes)
    # under Δ = -m is q = m, so Var = n (2q + Δ(1 - Δ)) = n m (1 - m) and Z = n m / sqrt(n m (1 - m));
    # Z = z gives back the interval's end z²/(n + z²)
    from scipy.stats import norm

    n, m = 50, 0.10
    z = n * m / (n * m * (1 - m)) ** 0.5
    assert alone.p_noninferiority == pytest.approx(norm.sf(z), rel=1e-9)


def test_gate_json_carries_every_tier(tmp_path: Path) -> None:
    import json

    from pytest_agentfloor.gate import write_gate_json

    base = _runs("inc", [True] * 40) + _runs("inc", [True] * 40, "C")
    cand = _runs("new", [True] * 40) + _runs("new", [False] * 40, "C")
    result = evaluate(cand, base)
    write_gate_json(result, tmp_path / "gate.json")
    data = json.loads((tmp_path / "gate.json").read_text())
    assert data["passed"] is False and data["exit_status"] == 1 and data["reason"] == "failed tier(s) C"
    assert data["rule"]["test"].startswith("intersection-union (Berger 1982)") and data["rule"]["min_pairs"] == 35
    b, c = data["tiers"]
    assert (b["tier"], b["verdict"], b["outcome"], b["pairs"]) == ("B", "PASS", "certified", 40)
    assert (c["verdict"], c["outcome"], c["delta_pp"]) == ("FAIL", "refuted", -100.0)
    assert c["ci95_pp"][1] < -10 and c["reason"].startswith("refuted")
    write_gate_json(None, tmp_path / "gate.json", "the gate compares one candidate model")
    assert json.loads((tmp_path / "gate.json").read_text())["reason"].startswith("cannot evaluate")


def test_floors_without_a_baseline_on_the_point_or_the_lower_bound() -> None:
    from scipy.stats import binomtest

    runs = _runs("new", [True] * 38 + [False] * 2)  # 95% TCR, the failures in two units
    point = evaluate(runs, None, floors={"B": 0.9})
    (v,) = point.verdicts
    assert point.passed and v.status == "PASS" and v.tcr == pytest.approx(0.95)
    assert "floor 90% on the point estimate" in v.line(None, "point")
    lower = evaluate(runs, None, floors={"B": 0.9}, floor_bound="lower")
    (w,) = lower.verdicts
    # the guarded interval is never narrower than Wilson's (scipy's wilson interval, by another route)
    wil = binomtest(38, 40).proportion_ci(0.95, method="wilson")
    assert w.tcr_low <= wil.low + 1e-12 and w.tcr_high >= min(wil.high, 1.0) - 1e-12
    assert w.status == "INSUFFICIENT EVIDENCE" and "straddles 90.0%" in w.reasons[0] and lower.exit_status == 1
    assert "floor 90% on the lower 95% bound" in w.line(None, "lower")
    refuted = evaluate(_runs("new", [i % 2 == 0 for i in range(40)]), None, floors={"B": 0.9}, floor_bound="lower")
    assert refuted.verdicts[0].status == "FAIL" and refuted.verdicts[0].reasons[0].startswith("refuted")
    certified = evaluate(_runs("new", [True] * 80), None, floors={"B": 0.9}, floor_bound="lower")
    assert certified.passed  # Wilson's lower bound of 80/80 is 95.4%
    assert evaluate(runs, None, floors={"B": 0.99}).verdicts[0].status == "FAIL"
    assert point.header().startswith("gate: absolute floors only (no baseline)")


def _tango_lower_by_brentq(b: float, c: float, n: float, z: float) -> float:
    """Tango's lower bound solved by scipy's brentq on the score statistic (Tango 1998, eq. 3-5)."""
    from scipy.optimize import brentq

    def score(d0: float) -> float:
        a, bb, cc = 2 * n, -b - c + (2 * n - b + c) * d0, -c * d0 * (1 - d0)
        q = (math.sqrt(bb * bb - 4 * a * cc) - bb) / (2 * a)
        return (b - c - n * d0) / math.sqrt(n * (2 * q + d0 * (1 - d0))) - z

    return brentq(score, -1 + 1e-12, (b - c) / n)


@pytest.mark.parametrize("rb,rc", [(0.0, 0.0), (0.05, 0.05), (0.1, 0.08), (0.02, 0.05)])
def test_pairs_needed_is_the_first_n_whose_expected_table_clears_the_margin(rb: float, rc: float) -> None:
    from scipy.stats import norm

    from pytest_agentfloor.stats.intervals import min_pairs_to_certify, pairs_needed

    z = norm.isf(0.025)
    n = pairs_needed(rb, rc, 10, 0.025)
    assert n is not None
    if rb == rc == 0:
        assert n == min_pairs_to_certify(10, 0.025) == 35  # z²(1 - m)/m = 34.57
        return
    assert _tango_lower_by_brentq(rb * n, rc * n, n, z) > -0.10
    assert _tango_lower_by_brentq(rb * (n - 1), rc * (n - 1), n - 1, z) <= -0.10


def test_pairs_needed_to_refute_and_never() -> None:
    from pytest_agentfloor.stats.intervals import pairs_needed, tango_bounds_at

    n = pairs_needed(0.0, 0.3, 10, 0.025, refute=True)  # 30 pp worse
    assert n is not None and tango_bounds_at(0, 0.3, n, 0.025)[1] <= -0.10 < tango_bounds_at(0, 0.3, n - 1, 0.025)[1]
    assert pairs_needed(0.0, 0.05, 10, 0.025, refute=True) is None  # 5 pp worse sits inside the margin
    assert pairs_needed(0.0, 0.15, 10, 0.025) is None  # 15 pp worse is never certified
    with pytest.raises(ValueError):
        pairs_needed(0.7, 0.7, 10, 0.025)
