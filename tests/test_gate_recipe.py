"""The recipe of docs/ci-gating.md, executed command by command as a team would run it.

The "Try the recipe offline" block is read from the document itself (so the docs cannot drift
from what is tested): each command runs in a pytester project with the repository's cases, with
and without `-n 2`, and must end with the exit status its `# exit N` comment promises.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.suite.schema import TIERS

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ci-gating.md"


def recipe() -> list[tuple[list[str], int | None]]:
    """(pytest arguments, documented exit status) for each line of the offline recipe block."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## Try the recipe offline", 1)[1].split("```", 2)[1]
    out = []
    for line in block.strip().splitlines():
        cmd, _, comment = line.partition("#")
        words = shlex.split(cmd)
        assert words[0] == "pytest", line
        m = re.match(r"\s*exit (\d+)", comment)
        out.append((words[1:], int(m.group(1)) if m else None))
    return out


def test_the_recipe_block_is_what_the_issue_asks() -> None:
    steps = recipe()
    assert len(steps) == 4 and steps[0][1] is None  # recording the baseline promises no gate status
    assert [code for _, code in steps[1:]] == [0, 0, 1]
    assert all({"--instances", "i0", "--agentfloor-runs", "2"} <= set(args) for args, _ in steps)
    assert "-m" in steps[2][0] and "fault-partial" in steps[3][0]


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_documented_recipe_passes_identical_and_fails_worse(pytester: pytest.Pytester, xdist: list[str]) -> None:
    shutil.copytree(REPO / "cases", pytester.path / "cases")
    steps = recipe()
    base_args, _ = steps[0]
    recorded = pytester.runpytest(*base_args, *xdist, "-p", "no:cacheprovider")
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()[-2000:]
    tiers_line = [f"gate tier {t}: PASS: Δ +0.0 pp ?95% CI -7.1, +7.1?, n=50 pairs*" for t in TIERS]

    full, ladder, worse = steps[1:]
    result = pytester.runpytest(*full[0], *xdist, "-p", "no:cacheprovider")
    assert result.ret == full[1] == 0
    result.stdout.fnmatch_lines(["gate: intersection-union test (Berger 1982)*no multiplicity correction*",
                                 "gate: compared the selection cases, --instances i0, --agentfloor-runs 2; 300 of "
                                 "the baseline's 300 run(s) in the gated tiers paired",
                                 *tiers_line, "*agentfloor gate: PASSED*"])
    gate = json.loads((pytester.path / "reports" / "latest" / "gate.json").read_text())
    assert gate["passed"] and gate["exit_status"] == 0 and len(gate["tiers"]) == 6

    result = pytester.runpytest(*ladder[0], *xdist, "-p", "no:cacheprovider")
    assert result.ret == ladder[1] == 0  # the call-site and pressure items are deselected: not partial
    result.stdout.fnmatch_lines(["gate: compared the selection cases, -m 'ladder', --instances i0, "
                                 "--agentfloor-runs 2; 300 of the baseline's 300 run(s)*",
                                 *tiers_line, "*agentfloor gate: PASSED*"])
    assert "partial run" not in result.stdout.str()

    result = pytester.runpytest(*worse[0], *xdist, "-p", "no:cacheprovider")
    assert result.ret == worse[1] == 1
    result.stdout.fnmatch_lines(["gate tier A0: PASS: *",
                                 *[f"gate tier {t}: FAIL: Δ -100.0 pp*refuted: the whole interval*" for t in TIERS[1:]],
                                 "*agentfloor gate: FAILED (A, B, C, D, E)*",
                                 "gate: FAILED: failed tier(s) A, B, C, D, E (exit status 1)"])
    gate = json.loads((pytester.path / "reports" / "latest" / "gate.json").read_text())
    assert gate["exit_status"] == 1 and gate["reason"] == "failed tier(s) A, B, C, D, E"
    assert [t["outcome"] for t in gate["tiers"]] == ["certified"] + ["refuted"] * 5


def test_the_plan_says_what_the_gate_needs_before_any_model_call(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    pytester.runpytest("cases", "--model", "oracle", "--instances", "i0", "-p", "no:cacheprovider",
                       "--agentfloor-report-dir", "baseline")  # one run per item: 25 pairs, too few
    plan = pytester.runpytest("cases", "--model", "oracle", "--instances", "i0", "--agentfloor-baseline",
                              "baseline/runs.jsonl", "--agentfloor-plan", "-p", "no:cacheprovider")
    assert plan.ret == pytest.ExitCode.OK
    plan.stdout.fnmatch_lines([
        "gate plan against runs.jsonl: each tier must be certified on its own (intersection-union test) at -10 pp*",
        "gate plan tier B: 25 item(s) per run, 25 pair(s) with this selection; an identical model passes from 35 "
        "pairs (2 run(s) per item) (discordance 0.0% each way, from p(1-p), the worst case: one baseline run per "
        "item); a 5 pp worse one lies inside the margin: it fails as insufficient evidence below 139 pairs*"
        "--gate-margin 2.5: refuted from 158 pairs*; the baseline has 1 run(s) per item: record it with "
        "--agentfloor-runs 2 or more too*"])
    assert not (pytester.path / "reports" / "runs.jsonl").exists()  # nothing ran


def test_floor_alone_gates_without_a_baseline(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    point = pytester.runpytest("cases", "--model", "oracle", "--instances", "i0", "-p", "no:cacheprovider",
                               "--gate-floor", "tier_B>=0.90")
    assert point.ret == 0
    point.stdout.fnmatch_lines(["*agentfloor gate: oracle vs absolute floors*",
                                "gate: absolute floors only (no baseline)*point estimate of TCR",
                                "gate tier B: PASS: TCR 100.0% ?95% CI 86.7, 100.0?, n=25 runs, floor 90% on the "
                                "point estimate", "*agentfloor gate: PASSED*"])
    lower = pytester.runpytest("cases", "--model", "oracle", "--instances", "i0", "-p", "no:cacheprovider",
                               "--gate-floor", "tier_B>=0.90", "--gate-floor-bound", "lower")
    assert lower.ret == 1  # Wilson's lower bound of 25/25 is 86.7%: not yet 90%
    lower.stdout.fnmatch_lines(["gate tier B: INSUFFICIENT EVIDENCE: *floor 90% on the lower 95% bound: insufficient "
                                "evidence for the floor*straddles 90.0%*"])


def test_a_dead_endpoint_gives_no_verdict_and_its_own_exit_status(pytester: pytest.Pytester) -> None:
    """Infrastructure trouble is not 'the model is worse': exit 75 (EX_TEMPFAIL), so CI can retry."""
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    pytester.makefile(".toml", models='[models.dead]\nprovider = "openai"\nmodel = "m"\n'
                                      'base_url = "http://127.0.0.1:9/v1"\nretries = 0\ntimeout_s = 5\n')
    args = ["cases/tier_B/B1.toml", "--variants", "v0", "--instances", "i0", "-p", "no:cacheprovider"]
    pytester.runpytest(*args, "--model", "oracle", "--agentfloor-report-dir", "baseline")
    runs = pytester.path / "baseline" / "runs.jsonl"
    runs.write_text(runs.read_text().replace('"model":"oracle"', '"model":"dead"'))
    result = pytester.runpytest(*args, "--model", "dead", "--no-probe", "--agentfloor-baseline", "baseline/runs.jsonl")
    assert result.ret == 75
    result.stdout.fnmatch_lines(["gate tier B: NO VERDICT: no paired runs*1 infrastructure error(s)*",
                                 "*agentfloor gate: NO VERDICT (B)*",
                                 "gate: NO VERDICT: no verdict on tier(s) B (infrastructure errors) (exit status 75)"])
    gate = json.loads((pytester.path / "reports" / "latest" / "gate.json").read_text())
    assert gate["exit_status"] == 75 and gate["tiers"][0]["infra_errors"] == 1
