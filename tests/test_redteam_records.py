"""Red team, issue 27 points 4-8: hostile output through real sessions keeps exactly one record per
item, writes bounded files, escapes invalid Unicode and never lowers the money spent.

Each test runs pytest (pytester) against a fake OpenAI-compatible server that answers as a hostile
model would; the assertions are on runs.jsonl, the report files and the terminal.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_agentfloor.plan import CostMeter
from tests.fakeserver import FakeModelServer, reply
from tests.readback import readable

REPO = Path(__file__).resolve().parents[1]
NO_REPORT = ["-p", "no:cacheprovider", "--agentfloor-report", "none"]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(lambda body: reply(content="")) as s:
        yield s


def runs(path: Path) -> list[dict[str, Any]]:
    files = list((path / "reports").glob("sessions/*/runs.jsonl")) or [path / "reports" / "runs.jsonl"]
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def models(server: FakeModelServer, extra: str = "") -> str:
    return f"""
        [models.fake]
        provider = "openai"
        model = "tiny"
        base_url = "{server.openai_url}"
        retries = 0
        timeout_s = 20
        {extra}
    """


def _codegen_site(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "callsite", pytester.path / "cases" / "callsite")


# -- point 4: hostile output gives a verdict and a record, per item ----------------------------
@pytest.mark.parametrize("output", ["1+" * 4000 + "1", "not " * 20000 + "x", "a" + ".b" * 100_000],
                         ids=["1+", "not", "a.b.b"])
def test_codegen_output_no_compiler_reads_is_one_failed_record_per_item(pytester: pytest.Pytester,
                                                                         server: FakeModelServer,
                                                                         output: str) -> None:
    _codegen_site(pytester)
    pytester.makefile(".toml", models=models(server))
    server.responder = lambda body: reply(content=output)
    result = pytester.runpytest("cases/callsite/codegen.toml", "--model", "fake", "--no-probe", "-k", "task-01",
                                *NO_REPORT)
    recs = runs(pytester.path)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == len(recs) > 0 and not outcomes.get("errors")
    assert all(r["first_unmet"] == "codegen.parse" and not r["infra_error"] for r in recs)
    assert "Traceback" not in result.stdout.str() and "no parser can read" in result.stdout.str()


@pytest.mark.parametrize("output", ["[" * 100_000 + "]" * 100_000, '[{"domain": ' + "9" * 5000 + "}]"],
                         ids=["100,000 deep", "5,000 digits"])
@pytest.mark.parametrize("site", ["actuator", "planner"])
def test_json_no_parser_reads_is_one_failed_record_per_item(pytester: pytest.Pytester, server: FakeModelServer,
                                                            site: str, output: str) -> None:
    _codegen_site(pytester)
    pytester.makefile(".toml", models=models(server))
    server.responder = lambda body: reply(content=output)
    result = pytester.runpytest(f"cases/callsite/{site}.toml", "--model", "fake", "--no-probe", "-k", "01",
                                *NO_REPORT)
    recs = runs(pytester.path)
    assert result.parseoutcomes().get("failed", 0) == len(recs) > 0
    assert {r["first_unmet"] for r in recs} == {f"{site}.format"}


def test_a_crashing_grader_is_an_infrastructure_error_with_its_record(pytester: pytest.Pytester,
                                                                      server: FakeModelServer) -> None:
    _codegen_site(pytester)
    pytester.makefile(".toml", models=models(server))
    pytester.makeconftest("""
        def pytest_agentfloor_callsite_grade(case, output):
            raise KeyError("the grader's own bug")
    """)
    server.responder = lambda body: reply(content="device_control")
    result = pytester.runpytest("cases/callsite/intent.toml", "--model", "fake", "--no-probe", "-k", "01",
                                *NO_REPORT)
    recs = runs(pytester.path)
    assert result.parseoutcomes().get("errors", 0) == len(recs) > 0
    assert all(r["infra_error"] and not r["passed"] and r["failure_mode"] is None for r in recs)
    assert all("grader crashed: KeyError" in r["error"] for r in recs)
    assert all(r["trajectory"]["final_answer"] == "device_control" for r in recs)  # the episode is kept
    result.stdout.fnmatch_lines(["*infrastructure error (grader): grader crashed: KeyError*"])
    assert "Traceback" not in result.stdout.str()


# -- point 5: a lone surrogate in the model's output ------------------------------------------
def test_a_lone_surrogate_reaches_every_report_escaped(pytester: pytest.Pytester, server: FakeModelServer) -> None:
    from pytest_agentfloor.__main__ import main as cli

    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models=models(server))
    server.responder = lambda body: reply(content="340 \ud800 units \udfff")
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0",
                                "--no-probe", "-p", "no:cacheprovider")
    assert result.ret in (0, 1) and "Traceback" not in result.stdout.str()
    (session,) = (pytester.path / "reports" / "sessions").iterdir()
    viewer = readable(session / "viewer.html")
    assert "340 \ufffd" in viewer  # the packed text holds it as bytes the page shows as U+FFFD
    for name in ("report.md", "report.html", "summary.json"):
        (session / name).read_text(encoding="utf-8")  # strict UTF-8: each file is readable
    runs_file = session / "runs.jsonl"
    (record,) = [json.loads(x) for x in runs_file.read_text().splitlines()]
    assert record["trajectory"]["final_answer"] == "340 \ud800 units \udfff"  # kept exactly, JSON-escaped
    out = pytester.path / "again"
    out.mkdir()
    assert cli(["report", str(runs_file), "--out", str(out), "--n-boot", "200"]) == 0
    assert cli(["view", str(runs_file), "--out", str(out / "v.html")]) == 0
    assert "340 \ufffd" in readable(out / "v.html")
    assert cli(["compare", str(runs_file), str(runs_file), "--viewer", str(out / "c.html"),
                "--n-boot", "200"]) in (0, 1)
    (out / "c.html").read_text(encoding="utf-8")


def test_a_judges_reason_with_a_lone_surrogate_is_stored_and_read_back(tmp_path: Path) -> None:
    from pytest_agentfloor.judge.cache import JudgeCache

    cache = JudgeCache(tmp_path / "judge-cache.jsonl")
    cache.put({"key": "a" * 64, "verdict": "fail", "reason": "it says \ud800 where a number belongs"})
    cache.close()
    again = JudgeCache(tmp_path / "judge-cache.jsonl")
    assert again.get("a" * 64)["reason"] == "it says \ud800 where a number belongs"
    (tmp_path / "judge-cache.jsonl").read_text(encoding="utf-8")


def test_safe_text_escapes_lone_surrogates() -> None:
    from pytest_agentfloor.render import escape_surrogates, safe_text

    assert safe_text("a\ud800b") == "a\\ud800b" and escape_surrogates("x\udfffy\n\x1b") == "x\\udfffy\n\x1b"
    assert json.loads(escape_surrogates(json.dumps("\ud800", ensure_ascii=False))) == "\ud800"
    assert escape_surrogates("plain é 😀") == "plain é 😀"


# -- point 6: money never goes negative -------------------------------------------------------
def test_negative_usage_gives_no_cost_and_never_refunds_the_meter(pytester: pytest.Pytester,
                                                                  server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models=models(server, "pricing = { input_per_mtok = 3.0, output_per_mtok = 15.0 }"))
    server.responder = lambda body: reply(content="340", tokens_in=-50_000_000, tokens_out=-1_000_000)
    pytester.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0,i1",
                       "--no-probe", *NO_REPORT)
    recs = runs(pytester.path)
    assert len(recs) == 2
    assert all(r["cost_usd"] is None and "tokens_in" in r["usage_invalid"] for r in recs)


def test_pricing_never_charges_a_negative_amount() -> None:
    from pytest_agentfloor.config import Pricing

    p = Pricing(hourly_usd=1.0, input_per_mtok=3.0, output_per_mtok=15.0)
    assert p.cost(-10**9, -10**9, -3600.0) == 0.0
    assert p.cost(10**400, 0, float("nan")) == 0.0  # absurd figures charge nothing rather than crash
    assert p.cost(1_000_000, 0, 3600.0) == pytest.approx(4.0)


def test_the_cost_meter_ignores_negative_costs(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    log.write_text('{"cost_usd": 2.5}\n{"cost_usd": -30}\n{"cost_usd": 0.5}\n{"cost_usd": null}\n')
    assert CostMeter(log).read() == pytest.approx(3.0)


# -- point 7: bounded outputs ------------------------------------------------------------------
def test_ten_thousand_tool_calls_in_a_turn_make_a_small_record(pytester: pytest.Pytester,
                                                               server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models=models(server))
    flood = [("get_attribute", {"record_id": f"INV-{n}", "attribute": "on_hand"}) for n in range(10_000)]
    server.responder = lambda body: reply(tool_calls=flood)
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0",
                                "--no-probe", *NO_REPORT)
    result.assert_outcomes(failed=1)
    (rec,) = runs(pytester.path)
    assert rec["termination"] == "malformed_call" and rec["calls_rejected"] == 10_000 and rec["calls"] == 0
    assert "10,000 tool calls in one reply" in rec["error"]
    assert len(json.dumps(rec)) < 200_000
    assert len(result.stdout.str()) < 40_000


def test_a_record_over_the_bound_drops_its_messages_first() -> None:
    from pytest_agentfloor.results import bound_record

    turns = [{"index": n, "content": "x" * 1000} for n in range(3000)]
    record = {"task": "t", "trajectory": {"messages": [{"content": "y" * 1000}] * 3000, "turns": turns}}
    dropped = bound_record(record, limit=1_000_000)
    assert set(dropped) == {"trajectory.messages", "trajectory.turns"}
    assert record["trajectory"]["messages"] == [] and len(json.dumps(record)) <= 1_000_000
    small = {"task": "t", "trajectory": {"messages": [1], "turns": [2]}}
    assert bound_record(small) == {} and small["trajectory"]["messages"] == [1]


def test_one_turn_of_many_large_calls_is_bounded_too() -> None:
    # before (red team): 60 calls of 70 KB in one tier-E turn made a 12 MB record; only turns were cut
    from pytest_agentfloor.results import MAX_RECORD_BYTES, bound_record

    calls = [{"name": "check_constraint", "arguments": "a" * 70_000, "result": {"r": "b" * 70_000}} for _ in range(60)]
    record = {"task": "t", "calls": 60, "trajectory": {"messages": [], "turns": [{"index": 0, "calls": calls}]}}
    dropped = bound_record(record)
    assert "trajectory.turns[0].calls" in dropped and record["calls"] == 60  # the count stays
    kept = record["trajectory"]["turns"][0]["calls"]
    assert 1 <= len(kept) < 60 and len(json.dumps(record)) <= MAX_RECORD_BYTES
    one = {"task": "t", "trajectory": {"messages": [], "turns": [{"calls": [{"arguments": [["x" * 60_000] * 30]}]}]}}
    assert "trajectory.turns" in bound_record(one) and one["trajectory"]["turns"] == []


def test_a_failure_line_is_bounded() -> None:
    from pytest_agentfloor.items import MAX_FAILURE_CHARS, bounded_message

    assert bounded_message("short") == "short"
    cut = bounded_message("z" * 500_000)
    assert len(cut) < MAX_FAILURE_CHARS + 200 and "488,000 more characters not shown" in cut


def test_bad_judge_cache_lines_are_named_counted_and_ignored(tmp_path: Path) -> None:
    from pytest_agentfloor.judge.cache import JudgeCache

    path = tmp_path / "judge-cache.jsonl"
    good = {"key": "b" * 64, "verdict": "pass", "reason": "fine"}
    lines = [json.dumps(good), "{torn", json.dumps({**good, "key": "c" * 64, "reason": "r" * 20_000_000}),
             json.dumps({**good, "key": "d" * 64, "verdict": "maybe"}), "[" * 100_000]
    path.write_text("\n".join(lines) + "\n")
    cache = JudgeCache(path, "read")
    assert cache.get("b" * 64) is not None and cache.get("c" * 64) is None
    assert cache.bad_lines == 4
    notes = cache.notes()
    assert notes[0] == "judge-cache.jsonl line 2: not JSON (JSONDecodeError); ignored"
    assert "line 3: 'reason' is 20,000,000 characters" in notes[1] and "line 4: 'verdict'" in notes[2]


def test_a_judge_cache_that_is_a_directory_is_a_judge_error_not_a_traceback(tmp_path: Path) -> None:
    from pytest_agentfloor.config import ModelConfig
    from pytest_agentfloor.judge.cache import JudgeCache
    from pytest_agentfloor.judge.client import Judge, JudgeError

    (tmp_path / "judge-cache.jsonl").mkdir()
    judge = Judge(ModelConfig(name="j", provider="openai", model="m", base_url="http://127.0.0.1:9/v1"),
                  JudgeCache(tmp_path / "judge-cache.jsonl"))
    with pytest.raises(JudgeError, match="judge-cache.jsonl: cannot be read"):
        judge.judge(case_id="A1", task="t", reference=None, predicate="p", rubric="r", text="x")


def test_a_report_dir_entry_of_the_wrong_type_is_a_usage_error(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    (pytester.path / "reports").mkdir()
    (pytester.path / "reports" / "sessions").write_text("not a directory")
    result = pytester.runpytest("cases/tier_A0", "--model", "oracle", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*reports/sessions is a file, where the session keeps its session directories*"])


# -- point 8: a context-limit error prints one line --------------------------------------------
def test_a_context_limit_error_is_short(pytester: pytest.Pytester, server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    pytester.makefile(".toml", models=f"""
        [models.small]
        provider = "ollama"
        model = "tiny-tools"
        base_url = "{server.url}"
        context_window = 2048
        timeout_s = 5
    """)
    server.responder = lambda body: reply(tool_calls=[("lookup_record", {"record_id": "X"})], tokens_in=2048)
    result = pytester.runpytest("cases/tier_B/B1.toml", "--model", "small", "--variants", "v0",
                                "--instances", "i0", "--no-probe", *NO_REPORT)
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "Traceback" not in text and "_pytest" not in text and len(text.splitlines()) < 40, len(text.splitlines())
    result.stdout.fnmatch_lines(["*context limit (small): turn 0: the prompt filled the 2048-token*"])
