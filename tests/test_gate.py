"""The CI gate: pairing with the incumbent's runs, verdict lines and the exit status."""

from __future__ import annotations

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
                                 "gate: guarded interval, two-sided 95% CI lower bound; a tier needs at least 35 pairs*",
                                 # 50 concordant pairs: Tango's ±z²/(n+z²) = ±7.1 pp, not the bootstrap's [0, 0]
                                 "gate tier B: PASS: Δ +0.0 pp ?95% CI -7.1, +7.1?, n=50 pairs*",
                                 "gate tier C: PASS: *", "*agentfloor gate: PASSED*"])


def test_worse_candidate_fails_the_gate_with_a_reason(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "fault-partial", *SELECT, "--agentfloor-baseline", "baseline/runs.jsonl",
                             "--gate-tiers", "tier_C")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate tier C: FAIL: Δ -100.0 pp*not non-inferior: two-sided 95% CI lower bound -100.0 pp "
                                 "does not clear -10 pp*", "*agentfloor gate: FAILED (C)*"])
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
    result.stderr.fnmatch_lines(["*--gate-tiers and --gate-floor need --agentfloor-baseline PATH*"])


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
    worse = evaluate(_runs("new", [True] * 30 + [False] * 10), base, margin_pp=10)
    assert not worse.passed and "not non-inferior" in worse.verdicts[0].reasons[0]
    assert worse.verdicts[0].status == "FAIL"
    infra = _runs("new", [True] * 40)
    infra[0]["infra_error"] = True
    assert "cannot be certified" in evaluate(infra, base).verdicts[0].reasons[-1]


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


def test_a_tier_lost_to_the_holm_correction_says_so_instead_of_misquoting_its_bound() -> None:
    # identical 100% runs: 50 pairs in each of five tiers, 200 in a sixth. Alone, each 50-pair tier's
    # Tango bound (-7.1 pp) clears -10 pp; over six tiers Holm asks the second smallest p to be below
    # 0.025/5, which 50 concordant pairs do not reach (roughly P(no discordance | 10% rate) = 0.9^50).
    base = [r for tier in ("A0", "A", "B", "D", "E") for r in _runs("inc", [True] * 50, tier)]
    base += _runs("inc", [True] * 200, "C")
    cand = [dict(r, model="new") for r in base]
    result = evaluate(cand, base)
    by_tier = {v.tier: v for v in result.verdicts}
    assert by_tier["C"].passed and not result.passed
    reason = by_tier["A"].reasons[0]
    assert reason.startswith("not non-inferior after Holm correction over 6 tiers: two-sided 95% CI lower bound -7.1 pp "
                             "clears -10 pp on its own, but the adjusted p = ")
    assert "does not clear" not in reason
