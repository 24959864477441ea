"""End-to-end plugin behaviour through real pytest runs (pytester)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_agentfloor.suite.loader import iter_case_files, load_case

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "cases"


def n_items(variants: bool = True, callsite: bool = True, pressure: bool = True) -> int:
    """Items of one model over `cases/`: the ladder's, plus one per call-site case and pressure cell."""
    total = 0
    for path in iter_case_files(CASES):
        case, _ = load_case(path)
        total += (len(case.prompts) if variants else 1) * (1 + len(case.instances))
    if callsite:
        from pytest_agentfloor.kinds import load_file

        total += sum(len(load_file(p)[1]) for p in sorted((CASES / "callsite").glob("*.toml")))
    if pressure:
        from pytest_agentfloor.kinds import load_file

        total += sum(len(e.specs) for p in sorted((CASES / "pressure").glob("*.toml")) for e in load_file(p)[1])
    return total


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    """A scratch project holding a copy of the benchmark cases."""
    shutil.copytree(CASES, pytester.path / "cases")
    return pytester


def records(pytester: pytest.Pytester) -> list[dict]:
    path = pytester.path / "reports" / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_oracle_passes_every_case(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "oracle")
    result.assert_outcomes(passed=n_items())
    result.stdout.fnmatch_lines(["*AgentFloor: task completion by model and tier*", "*oracle*all*100.0%*"])
    recs = records(bench)
    assert len(recs) == n_items() and all(r["passed"] for r in recs)
    assert {r["tier"] for r in recs if r["kind"] == "episode"} == {"A0", "A", "B", "C", "D", "E"}
    assert {r["tier"] for r in recs if r["kind"] == "callsite"} == {"callsite"}
    assert {r["tier"] for r in recs if r["kind"] == "pressure"} == {"P"}
    result.stdout.fnmatch_lines(["*AgentFloor: Call sites: accuracy per site and model*"])


# the exact classification each fault policy must get on a case built for it (agentfloor unless
# the row names another protocol)
FAULTS = [
    ("hallucinate", "tier_B/B1.toml", "S", "F1", ()),
    ("malformed", "tier_B/B1.toml", "S", "F2", ()),
    ("exhaust", "tier_B/B1.toml", "Q", "F4", ()),
    ("resign", "tier_B/B1.toml", "S", "F5", ()),
    ("resign", "tier_A/A1.toml", "Q", "F5", ()),  # both calls in one turn: it fits tier A's two turns
    ("resign", "tier_A0/A01.toml", "Q", "F3", ()),  # nothing to execute: a wrong answer, no resignation
    ("plan_only", "tier_B/B1.toml", "S", "F5b", ()),
    ("wrong_tool", "tier_C/C1.toml", "S", "F6", ()),  # a wrong tool then a submission: no resignation
    # tier A offers only the needed tool: no wrong tool to call, so no call, then text
    ("wrong_tool", "tier_A/A2.toml", "S", "F5b", ()),
    ("partial", "tier_C/C1.toml", "S", "F7", ()),
    # a right run whose only fault is a repeated call: tbb fails it, as the residual (no resignation)
    ("repeat", "tier_B/B1.toml", "C", "F3", ("--agentfloor-protocol", "tbb")),
    ("repeat", "tier_C/C1.toml", "C", "F3", ("--agentfloor-protocol", "tbb")),
]


@pytest.mark.parametrize("policy,case,unmet,mode,args", FAULTS,
                         ids=[f"{f[0]}-{f[1][5:f[1].index('/')]}-{f[1].split('/')[1][:-5]}" + ("-tbb" if f[4] else "")
                              for f in FAULTS])
def test_fault_policy_gets_its_classification(bench: pytest.Pytester, policy: str, case: str, unmet: str,
                                              mode: str, args: tuple) -> None:
    result = bench.runpytest(f"cases/{case}", "--model", f"fault-{policy}", "--instances", "i0", *args)
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines([f"*unmet obligation {unmet} (*", f"*failure mode {mode} (*"])
    assert {(r["first_unmet"], r["failure_mode"]) for r in records(bench)} == {(unmet, mode)}


def test_a_repeat_alone_passes_under_agentfloor_where_the_case_declares_none(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_B/B1.toml", "--model", "fault-repeat", "--instances", "i0").assert_outcomes(passed=5)


def test_exhaust_is_flagged_at_the_turn_limit(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_B/B1.toml", "--model", "fault-exhaust", "--variants", "v0", "--instances", "i0")
    (rec,) = records(bench)
    assert (rec["termination"], rec["terminal_flag"], rec["turns"]) == ("turn_budget", "turn_limit", 4)


def test_malformed_case_is_a_short_collection_error_and_the_rest_still_runs(bench: pytest.Pytester) -> None:
    bad = bench.path / "cases" / "tier_B" / "B9.toml"
    text = (CASES / "tier_B" / "B1.toml").read_text().replace('id = "B1"', 'id = "B9"')
    bad.write_text(text.replace('tool = "search_records"', 'tool = "search_everything"', 1))
    result = bench.runpytest("cases/tier_B", "--model", "oracle", "--variants", "v0", "--instances", "i0")
    result.assert_outcomes(passed=len(list((CASES / "tier_B").glob("*.toml"))), errors=1)
    out = result.stdout.str()
    assert "invalid case file" in out and "B9.toml" in out
    assert "steps[0].tool: unknown tool 'search_everything'" in out
    assert "Traceback" not in out and "pydantic" not in out


def test_broken_toml_names_the_file(bench: pytest.Pytester) -> None:
    (bench.path / "cases" / "tier_A" / "A9.toml").write_text("id = \n")
    result = bench.runpytest("cases/tier_A", "--model", "oracle", "--variants", "v0", "--instances", "i0")
    result.assert_outcomes(passed=len(list((CASES / "tier_A").glob("*.toml"))), errors=1)
    result.stdout.fnmatch_lines(["*invalid case file*A9.toml*", "*not valid TOML*"])


def test_unknown_model_is_a_usage_error_listing_the_configured_names(bench: pytest.Pytester) -> None:
    bench.makefile(".toml", models='[models.local-qwen]\nprovider = "ollama"\nmodel = "qwen3:8b"\n')
    result = bench.runpytest("cases", "--model", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--model: unknown model(s) nope in *models.toml; configured: *local-qwen*oracle*"])


def test_bad_models_file_names_the_field(bench: pytest.Pytester) -> None:
    bench.makefile(".toml", models='[models.x]\nprovider = "ollama"\nmodel = "m"\ntemprature = 0.2\n')
    result = bench.runpytest("cases", "--model", "x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*models.toml: models.x.temprature: unknown field*"])


def test_k_tier_selects_exactly_that_tier(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--co", "-q", "-k", "tier_E")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids and all("tier_E/" in i for i in ids)
    expected = sum(len(load_case(p)[0].prompts) * (1 + len(load_case(p)[0].instances))
                   for p in iter_case_files(CASES) if p.parent.name == "tier_E")
    assert len(ids) == expected


def test_ids_markers_and_model_selection(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_C", "--co", "-q", "--model", "oracle,fault-repeat", "--agentfloor-runs", "2",
                             "--variants", "v0", "-m", "tier_C")
    ids = [line for line in result.stdout.lines if "::" in line]
    c1 = [i for i in ids if "C1.toml" in i]
    assert "cases/tier_C/C1.toml::C1[v0-i0-r1-fault-repeat]" in c1
    assert len(c1) == 2 * 2 * (1 + len(load_case(CASES / "tier_C" / "C1.toml")[0].instances))
    result = bench.runpytest("cases/tier_C", "--co", "-q", "--model", "oracle,fault-repeat", "-k",
                             "model_fault_repeat and C1 and i1")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids and all("fault-repeat" in i and "-i1-" in i for i in ids)


def test_ini_settings_match_the_options(bench: pytest.Pytester) -> None:
    bench.makeini("[pytest]\nagentfloor_models = fault-repeat\nagentfloor_variants = v1\nagentfloor_runs = 2\n")
    result = bench.runpytest("cases/tier_A", "--co", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids and all("-fault-repeat]" in i and "[v1-" in i for i in ids)
    assert any("-r1-" in i for i in ids)


def test_bad_option_values_are_usage_errors(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--agentfloor-runs", "zero")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-runs: expected a whole number*"])
    result = bench.runpytest("cases", "--variants", "v0,x1")
    result.stderr.fnmatch_lines(["*--variants: ?'x1'? are not v0, v1, ... names*"])


def test_last_failed_reruns_only_the_failures(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_A0", "--model", "oracle,fault-plan_only", "-p", "cacheprovider")
    result = bench.runpytest("cases/tier_A0", "--model", "oracle,fault-plan_only", "--lf", "-p", "cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) > 0 and "passed" not in outcomes


def test_junit_properties(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_B", "--model", "oracle", "--variants", "v0", "--junitxml=out.xml",
                    "-o", "junit_family=xunit1")
    root = ET.parse(bench.path / "out.xml").getroot()
    case = root.find(".//testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    for key in ("model", "task", "tier", "variant", "instance", "run", "passed", "first_unmet", "failure_mode",
                "terminal_flag", "termination", "turns", "calls", "tokens_in", "tokens_out", "latency_s", "cost_usd"):
        assert key in props
    assert props["model"] == "oracle" and props["tier"] == "B" and props["passed"] == "true"
    assert props["first_unmet"] == "" and props["failure_mode"] == ""  # None is empty, not "None"
    assert case.get("classname") == "cases.tier_B.B1"


def test_xdist_totals_equal_serial_totals(bench: pytest.Pytester) -> None:
    args = ["cases", "--model", "oracle,fault-resign", "--variants", "v0,v1", "-p", "no:cacheprovider"]
    serial = bench.runpytest_subprocess(*args, "-n", "0")
    serial_table = [line for line in serial.stdout.lines if line.startswith("│")]
    serial_records = sorted((r["nodeid"], r["passed"], r["failure_mode"]) for r in records(bench))
    parallel = bench.runpytest_subprocess(*args, "-n", "2")
    parallel_table = [line for line in parallel.stdout.lines if line.startswith("│")]
    parallel_records = sorted((r["nodeid"], r["passed"], r["failure_mode"]) for r in records(bench))
    assert serial.parseoutcomes()["passed"] == parallel.parseoutcomes()["passed"]
    assert serial.parseoutcomes()["failed"] == parallel.parseoutcomes()["failed"]
    assert serial_table and serial_table == parallel_table
    assert serial_records == parallel_records
    sessions = sorted((bench.path / "reports" / "sessions").iterdir())  # every session keeps its own files
    assert len(sessions) == 2 and len((sessions[0] / "runs.jsonl").read_text().splitlines()) == len(serial_records)


def test_plugin_can_be_disabled(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "-p", "no:agentfloor")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_users_tests_get_the_model_as_a_fixture(bench: pytest.Pytester) -> None:
    bench.makepyfile(test_mine=f"""
        def test_my_case(agentfloor_model, agentfloor_episode):
            traj, grade = agentfloor_episode({str(CASES / "tier_B" / "B1.toml")!r}, "v2")
            assert agentfloor_model.name in ("oracle", "fault-resign")
            assert grade.passed == (agentfloor_model.name == "oracle")
    """)
    result = bench.runpytest("test_mine.py", "--model", "oracle,fault-resign", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_my_case?oracle?*PASSED*", "*test_my_case?fault-resign?*PASSED*"])


def test_conftest_can_replace_an_obligation(bench: pytest.Pytester) -> None:
    bench.makeconftest("""
        from pytest_agentfloor.grading import Verdict

        def pytest_agentfloor_check_obligation(code, case, trajectory):
            if code == "Q" and case.id == "A01":
                return Verdict("Q", False, "a sonnet", "a label")
    """)
    result = bench.runpytest("cases/tier_A0/A01.toml", "--model", "oracle")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines(["*unmet obligation Q (answer): expected a sonnet; observed a label*"])


def test_conftest_can_add_an_obligation(bench: pytest.Pytester) -> None:
    bench.makeconftest("""
        from pytest_agentfloor.grading import Verdict

        def pytest_agentfloor_extra_obligations(case, trajectory):
            return [Verdict("Z1", len(trajectory.calls) <= 1, "at most one call", f"{len(trajectory.calls)} calls")]
    """)
    result = bench.runpytest("cases/tier_A/A1.toml", "cases/tier_B/B1.toml", "--model", "oracle", "--variants", "v0",
                             "--instances", "i0")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*unmet obligation Z1 (Z1): expected at most one call; observed 2 calls*"])


def test_every_fault_policy_runs_on_every_case_without_an_error(bench: pytest.Pytester) -> None:
    from pytest_agentfloor.config import SCRIPTED_POLICIES

    models = ",".join(f"fault-{p}" for p in SCRIPTED_POLICIES[1:])
    result = bench.runpytest("cases", "--model", models, "--variants", "v0", "--instances", "i0",
                             "--agentfloor-report", "none")
    outcomes = result.parseoutcomes()
    assert "errors" not in outcomes and "error" not in outcomes
    assert outcomes["failed"] > outcomes.get("passed", 0)
