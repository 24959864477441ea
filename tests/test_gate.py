"""The CI gate: pairing with the incumbent's runs, verdict lines and the exit status."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.gate import GateError, evaluate, parse_floor

REPO = Path(__file__).resolve().parents[1]
SELECT = ["--instances", "i0", "-p", "no:cacheprovider"]


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    for tier in ("tier_B", "tier_C"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    pytester.runpytest("cases", "--model", "oracle", *SELECT, "--report-dir", "baseline")
    return pytester


def test_equal_candidate_passes_the_gate(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "oracle", *SELECT, "--baseline", "baseline/runs.jsonl")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*agentfloor gate: oracle vs oracle (runs.jsonl)*",
                                 "gate tier B: PASS: Δ +0.0 pp ?95% CI +0.0, +0.0?, n=* pairs*",
                                 "gate tier C: PASS: *", "*agentfloor gate: PASSED*"])


def test_worse_candidate_fails_the_gate_with_a_reason(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "fault-partial", *SELECT, "--baseline", "baseline/runs.jsonl",
                             "--gate-tiers", "tier_C")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate tier C: FAIL: Δ -100.0 pp*not non-inferior: 95% lower bound -100.0 pp "
                                 "does not clear -10 pp*", "*agentfloor gate: FAILED (C)*"])
    assert "gate tier B" not in result.stdout.str()


def test_item_failures_within_the_margin_do_not_fail_the_gate(bench: pytest.Pytester) -> None:
    bench.makeconftest("""
        from pytest_agentfloor.grading import Verdict

        def pytest_agentfloor_check_obligation(code, case, trajectory):
            if code == "Q" and case.id == "B1" and case.variant == "v0":
                return Verdict("Q", False, "x", "y")
    """)
    result = bench.runpytest("cases/tier_B", "--model", "oracle", *SELECT, "--baseline", "baseline/runs.jsonl",
                             "--gate-margin", "50")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["gate tier B: PASS: Δ -*", "*agentfloor gate: PASSED*"])


def test_floor_and_unpaired_runs_are_reported(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_B", "--model", "oracle", "--instances", "i0", "--runs", "2",
                             "--baseline", "baseline/runs.jsonl", "--gate-floor", "tier_B>=0.95",
                             "--gate-floor", "tier_E>=0.5")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["gate: unpaired runs: * candidate run(s) without a baseline counterpart, "
                                 "* baseline run(s) not re-run",
                                 "gate: floors for tiers not gated here were ignored: ?'E'?"])
    result = bench.runpytest("cases/tier_B", "--model", "fault-wrong_tool", *SELECT,
                             "--baseline", "baseline/runs.jsonl", "--gate-floor", "B>=90%", "--gate-margin", "100")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate tier B: FAIL: *TCR 0.0% is below the floor 90.0%*"])


def test_gate_usage_errors(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--baseline", "nope.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--baseline nope.jsonl: no such file*"])
    result = bench.runpytest("cases", "--baseline", "baseline/runs.jsonl", "--gate-floor", "B=0.9")
    result.stderr.fnmatch_lines(["*--gate-floor 'B=0.9': expected TIER>=VALUE*"])
    result = bench.runpytest("cases", "--gate-tiers", "A")
    result.stderr.fnmatch_lines(["*--gate-tiers and --gate-floor need --baseline PATH*"])


def test_two_candidates_cannot_be_gated_at_once(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_B", "--model", "oracle,fault-repeat", *SELECT,
                             "--baseline", "baseline/runs.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*gate: cannot evaluate: the gate compares one candidate model*"])


def _runs(model: str, passes: list[bool], tier: str = "B") -> list[dict]:
    return [{"model": model, "task": f"{tier}{i % 5}", "tier": tier, "variant": f"v{i // 5}", "instance": "i0",
             "run": 0, "passed": p, "infra_error": False} for i, p in enumerate(passes)]


def test_evaluate_pairs_and_decides_like_the_paired_test() -> None:
    base = _runs("inc", [True] * 40)
    cand = _runs("new", [True] * 39 + [False])
    result = evaluate(cand, base, margin_pp=10)
    (v,) = result.verdicts
    assert v.passed and v.test.n_pairs == 40 and v.test.delta_pp == pytest.approx(-2.5)
    assert (v.test.mcnemar_b, v.test.mcnemar_c) == (0, 1)
    worse = evaluate(_runs("new", [True] * 30 + [False] * 10), base, margin_pp=10)
    assert not worse.passed and "not non-inferior" in worse.verdicts[0].reasons[0]
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
    result = bench.runpytest("cases", "--model", "oracle,fault-partial", "--reference", "oracle", *SELECT)
    result.stdout.fnmatch_lines(["*paired comparison against oracle*", "*agentfloor reports: *summary.json*"])
    rebuilt = bench.run("python", "-m", "pytest_agentfloor", "report", "reports/runs.jsonl", "--out", "rebuilt",
                        "--reference", "oracle")
    assert rebuilt.ret == 0, rebuilt.stderr.str()
    for name in ("summary.json", "tcr.csv", "report.md", "report.html"):
        assert (bench.path / "reports" / name).read_bytes() == (bench.path / "rebuilt" / name).read_bytes(), name
    bench.runpytest("cases", "--model", "oracle", *SELECT, "--report-dir", "base2")
    gated = bench.runpytest("cases", "--model", "oracle", *SELECT, "--baseline", "base2/summary.json")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["*agentfloor gate: oracle vs oracle (summary.json)*", "*agentfloor gate: PASSED*"])


def test_unknown_reference_is_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "oracle", "--reference", "gpt-9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--reference: 'gpt-9' is not among the selected models (oracle); add it with --model*"])
