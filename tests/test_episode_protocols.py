"""The protocols' limits on scripted episodes, and the protocol and ablation switches end to end.

Scripted replies test the harness only; the switches are checked where they must arrive: in
the request a real HTTP server receives (tests/fakeserver.py), in the run record, and in the
resume fingerprint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import builtin_models
from pytest_agentfloor.episode import SYSTEM_PROMPTS, run_episode
from pytest_agentfloor.grading import grade, remaining_steps
from pytest_agentfloor.protocol import PROTOCOLS, resolve_protocol
from pytest_agentfloor.providers.base import Reply, ToolCallOut
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, raw, reply

REPO = Path(__file__).resolve().parents[1]
B1 = REPO / "cases" / "tier_B" / "B1.toml"
E1 = REPO / "cases" / "tier_E" / "E1.toml"


def case(path: Path = B1):
    c, digest = load_case(path)
    return resolve(c, "v0", "i0", digest)


class Script:
    """An in-process provider answering from a function of the turn index (harness tests only)."""

    def __init__(self, step, **usage: Any):
        self.config = builtin_models()["oracle"]
        self.step, self.usage, self.seen = step, usage, 0

    def complete(self, messages, tools, *, case):  # noqa: ANN001 - the Provider protocol
        t = sum(1 for m in messages if m["role"] == "assistant")
        self.seen += 1
        out = self.step(case, t)
        if isinstance(out, Reply):
            return out
        if isinstance(out, str):
            return Reply(content=out, **self.usage)
        calls = [ToolCallOut(id=f"c{t}{j}", name=n, arguments=a if isinstance(a, str) else json.dumps(a))
                 for j, (n, a) in enumerate(out)]
        return Reply(content=None, tool_calls=calls, finish_reason="tool_calls", **self.usage)

    def close(self) -> None:
        pass


def reference(rc, t: int):
    turn = rc.reference[t] if t < len(rc.reference) else rc.reference[-1]
    return [(c.tool, dict(c.args)) for c in turn.calls] or (turn.final or "")


def busy(rc, t: int):
    """Three distinct valid searches per turn, forever."""
    return [("search_records", {"query": f"q{t}-{j}"}) for j in range(3)]


def play(rc, provider, protocol: str, **overrides: Any):
    return run_episode(rc, provider, model="m", protocol=resolve_protocol(protocol, **overrides),
                       remaining_steps=remaining_steps)


# -- limits on scripted episodes -----------------------------------------------------------------
def test_agentfloor_limits_turns_only() -> None:
    rc = case()
    traj = play(rc, Script(busy, tokens_in=100_000), "agentfloor")
    assert (traj.termination, len(traj.turns)) == ("turn_budget", rc.turn_budget) == ("turn_budget", 4)
    assert len(traj.calls) == 12 > rc.call_limit  # no call limit
    assert traj.tokens_in == 400_000  # no episode token budget
    assert (traj.protocol, traj.call_limit, traj.token_budget) == ("agentfloor", None, None)
    g = grade(rc, traj)
    assert (g.failure_mode, g.terminal_flag) == ("F4", "turn_limit")
    assert next(v for v in g.verdicts if v.code == "B").observed == "turn budget used up"


def test_tbb_limits_calls_turns_and_tokens() -> None:
    rc = case()
    # (without the infeasibility stop, which would end this aimless episode first)
    traj = run_episode(rc, Script(busy), model="m", protocol=PROTOCOLS["tbb"])
    assert traj.termination == "call_limit" and len(traj.calls) == rc.call_limit + 1
    assert (traj.turn_budget, traj.call_limit, traj.token_budget) == (rc.call_limit + 2, rc.call_limit, 128_000)
    tokens = run_episode(rc, Script(busy, tokens_in=64_000, tokens_out=1), model="m", protocol=PROTOCOLS["tbb"])
    assert (tokens.termination, len(tokens.turns)) == ("token_budget", 2)
    assert grade(rc, tokens).terminal_flag == "budget"


def test_truncation_ends_a_tbb_episode_but_not_an_agentfloor_one() -> None:
    rc = case()

    def cut_then_reference(c, t):
        out = reference(c, t)
        if t == 0:
            return Reply(content=None, finish_reason="length", tool_calls=[
                ToolCallOut(id="c0", name=n, arguments=json.dumps(a)) for n, a in out])
        return out

    tbb = play(rc, Script(cut_then_reference), "tbb")
    assert (tbb.termination, len(tbb.turns)) == ("truncated", 1)
    assert grade(rc, tbb).terminal_flag == "truncation"
    af = play(rc, Script(cut_then_reference), "agentfloor")
    assert af.termination == "final_answer" and grade(rc, af).passed


def test_malformed_arguments_end_a_tbb_episode_but_agentfloor_returns_an_error_to_the_model() -> None:
    rc = case()

    def malformed_then_reference(c, t):
        return [("search_records", '{"query": ')] if t == 0 else reference(c, t - 1)

    tbb = play(rc, Script(malformed_then_reference), "tbb")
    assert tbb.termination == "malformed_call" and grade(rc, tbb).failure_mode == "F2"
    bigger = rc.model_copy(update={"turn_budget": rc.turn_budget + 1})
    af = play(bigger, Script(malformed_then_reference), "agentfloor")
    assert af.calls[0].malformed and af.messages[3]["role"] == "tool"
    assert "malformed_call" in af.messages[3]["content"]
    assert af.termination == "final_answer" and grade(bigger, af).passed  # recovered: no failure


def test_infeasibility_stop_only_where_the_protocol_has_one() -> None:
    rc = case(E1)
    stall = Script(lambda c, t: [("list_options", {"category": f"nothing-{t}"})])
    tbb = play(rc, stall, "tbb")
    assert tbb.termination == "infeasible" and grade(rc, tbb).terminal_flag == "infeasible"
    legacy = play(rc, Script(lambda c, t: [("list_options", {"category": f"nothing-{t}"})]), "legacy")
    assert legacy.termination == "infeasible"
    af = play(rc, Script(lambda c, t: [("list_options", {"category": f"nothing-{t}"})]), "agentfloor")
    assert (af.termination, len(af.turns)) == ("turn_budget", rc.turn_budget)


def test_step_budget_scale_doubles_tier_budgets_and_is_refused_by_tbb() -> None:
    rc = case()
    traj = play(rc, Script(busy), "agentfloor", step_budget_scale=2)
    assert (traj.termination, len(traj.turns), traj.turn_budget) == ("turn_budget", 8, 8)
    assert resolve_protocol("legacy", step_budget_scale=1.5).limits(rc).turns == 6
    with pytest.raises(ValueError, match="step-budget-scale applies to agentfloor and legacy"):
        resolve_protocol("tbb", step_budget_scale=2)
    with pytest.raises(ValueError, match="expected one of agentfloor, tbb, legacy"):
        resolve_protocol("paper")


def test_an_explicit_token_budget_is_enforced_under_agentfloor_too() -> None:
    rc = case()
    traj = play(rc, Script(busy, tokens_in=600), "agentfloor", token_budget=1000)
    assert (traj.termination, len(traj.turns), traj.token_budget) == ("token_budget", 2, 1000)


# -- through pytest -----------------------------------------------------------------------------
@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    for tier in ("tier_B", "tier_E"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    return pytester


def records(p: pytest.Pytester) -> list[dict]:
    return [json.loads(line) for line in (p.path / "reports" / "runs.jsonl").read_text().splitlines()]


ONE = ("cases/tier_B/B1.toml", "--variants", "v0", "--instances", "i0", "--agentfloor-report", "none")


@pytest.mark.parametrize("args,name", [((), "agentfloor"), (("--agentfloor-protocol", "tbb"), "tbb"),
                                       (("--agentfloor-protocol", "legacy"), "legacy")])
def test_every_record_says_its_protocol_and_parameters(bench: pytest.Pytester, args: tuple, name: str) -> None:
    bench.runpytest(*ONE, "--model", "oracle,fault-exhaust", *args).assert_outcomes(passed=1, failed=1)
    recs = records(bench)
    assert {r["protocol"] for r in recs} == {name}
    assert all(r["protocol_params"] == PROTOCOLS[name].params() for r in recs)
    assert all(r["trajectory"]["protocol"] == name for r in recs)
    if name == "tbb":  # the frozen completion cap reaches every model's configuration
        assert {r["config"]["max_tokens"] for r in recs} == {1024}


def test_protocol_from_ini_and_step_budget_scale_in_the_record(bench: pytest.Pytester) -> None:
    bench.makeini("[pytest]\nagentfloor_protocol = legacy\nagentfloor_step_budget_scale = 2\n")
    bench.runpytest(*ONE, "--model", "fault-exhaust")
    (rec,) = records(bench)
    assert rec["protocol"] == "legacy" and rec["protocol_params"]["step_budget_scale"] == 2.0
    assert rec["trajectory"]["turn_budget"] == 8


@pytest.mark.parametrize("args,message", [
    (("--agentfloor-protocol", "paper"), "--agentfloor-protocol: expected one of agentfloor, tbb, legacy, got 'paper'"),
    (("--step-budget-scale", "0"), "--step-budget-scale: expected a positive number up to 100*got '0'"),
    (("--step-budget-scale", "two"), "--step-budget-scale: expected a positive number, got 'two'"),
    (("--agentfloor-protocol", "tbb", "--step-budget-scale", "2"), "--step-budget-scale: the tbb protocol's turn limit*"),
    (("--token-budget", "lots"), "--token-budget: expected a whole number*got 'lots'"),
    (("--agentfloor-system-prompt", "chatty"), "--agentfloor-system-prompt: expected one of default, explicit_submission, structured*"),
    (("--agentfloor-think", "maybe"), "--agentfloor-think: expected on or off, got 'maybe'"),
    (("--agentfloor-reasoning-effort", "max"), "--agentfloor-reasoning-effort: expected one of none, minimal, low, medium, high*"),
])
def test_bad_protocol_and_ablation_values_are_usage_errors(bench: pytest.Pytester, args: tuple,
                                                           message: str) -> None:
    result = bench.runpytest(*ONE, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_resume_never_mixes_protocols_or_ablations(bench: pytest.Pytester) -> None:
    base = (*ONE, "--model", "oracle", "--agentfloor-resume")
    bench.runpytest(*base).assert_outcomes(passed=1)
    assert bench.runpytest(*base).parseoutcomes().get("deselected") == 1  # same condition: resumed
    for other, field, value in ((("--agentfloor-protocol", "tbb"), "protocol", "tbb"),
                                (("--step-budget-scale", "2"), "protocol_params", 2.0),
                                (("--agentfloor-system-prompt", "structured"), "config", "structured")):
        result = bench.runpytest(*base, *other)
        result.assert_outcomes(passed=1)  # a different condition runs again, nothing resumed
        assert "resumed" not in result.stdout.str()
        (rec,) = records(bench)
        got = rec[field] if field == "protocol" else rec[field].get("step_budget_scale", rec[field].get("system_prompt"))
        assert got == value


# -- the ablation switches reach the request over real HTTP ------------------------------------------
@pytest.fixture
def server():
    with FakeModelServer(lambda body: reply(content="Net 45")) as srv:
        yield srv


@pytest.fixture
def http_bench(bench: pytest.Pytester, server: FakeModelServer) -> pytest.Pytester:
    bench.makefile(".toml", models=f"""
        [models.fake-openai]
        provider = "openai"
        model = "tiny-tools"
        base_url = "{server.openai_url}"
        timeout_s = 2
        retries = 0

        [models.fake-ollama]
        provider = "ollama"
        model = "tiny-tools"
        base_url = "{server.url}"
        timeout_s = 2
        retries = 0
    """)
    return bench


def _run(p: pytest.Pytester, model: str, *extra: str) -> dict:
    p.runpytest(*ONE, "--model", model, "--no-probe", *extra)
    (rec,) = records(p)
    return rec


@pytest.mark.parametrize("model", ["fake-openai", "fake-ollama"])
@pytest.mark.parametrize("prompt", ["structured", "explicit_submission"])
def test_system_prompt_ablation_reaches_the_request_and_record(http_bench: pytest.Pytester, server: FakeModelServer,
                                                               model: str, prompt: str) -> None:
    rec = _run(http_bench, model, "--agentfloor-system-prompt", prompt)
    (body,) = server.requests
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPTS[prompt]}
    assert rec["config"]["system_prompt"] == prompt


def test_structured_prompt_names_the_three_phases() -> None:
    text = SYSTEM_PROMPTS["structured"]
    # it replaces the default prompt, as the authors' system_prompt_override does
    assert SYSTEM_PROMPTS["default"] not in text and "submit_decision" in text
    assert text.index("PLAN") < text.index("EXECUTE") < text.index("SUBMIT")


@pytest.mark.parametrize("switch,sent", [("off", False), ("on", True)])
def test_think_reaches_ollama(http_bench: pytest.Pytester, server: FakeModelServer, switch: str, sent: bool) -> None:
    rec = _run(http_bench, "fake-ollama", "--agentfloor-think", switch)
    (body,) = server.requests
    assert body["think"] is sent and rec["config"]["think"] is sent


def test_reasoning_effort_reaches_openai_and_reasoning_tokens_are_recorded(http_bench: pytest.Pytester,
                                                                          server: FakeModelServer) -> None:
    server.push(raw({
        "id": "chatcmpl-r", "object": "chat.completion", "created": 0, "model": "tiny-tools",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Net 45"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80,
                  "completion_tokens_details": {"reasoning_tokens": 24}},
    }))
    rec = _run(http_bench, "fake-openai", "--agentfloor-reasoning-effort", "low")
    (body,) = server.requests
    assert body["reasoning_effort"] == "low" and rec["config"]["reasoning_effort"] == "low"
    assert rec["reasoning_tokens"] == 24 and rec["trajectory"]["turns"][0]["reasoning_tokens"] == 24


def test_without_switches_no_reasoning_field_is_sent(http_bench: pytest.Pytester, server: FakeModelServer) -> None:
    rec = _run(http_bench, "fake-openai")
    (body,) = server.requests
    assert "reasoning_effort" not in body and "think" not in body
    assert rec["reasoning_tokens"] is None and rec["config"]["system_prompt"] == "default"


def test_switches_leave_providers_without_the_knob_alone(http_bench: pytest.Pytester, server: FakeModelServer) -> None:
    """--agentfloor-think is Ollama's switch and --reasoning-effort the OpenAI-compatible one: neither leaks across."""
    rec = _run(http_bench, "fake-openai", "--agentfloor-think", "off")
    assert "think" not in server.requests[0] and rec["config"]["think"] is None


def test_the_terminal_summary_names_the_protocol(bench: pytest.Pytester) -> None:
    result = bench.runpytest(*ONE, "--model", "oracle", "--agentfloor-protocol", "tbb")
    result.stdout.fnmatch_lines(["agentfloor protocol tbb: call limit + 2 turns, call limit = reference calls + 2, "
                                 "128,000 episode tokens, completion cap 1,024, truncation ends the episode, "
                                 "infeasibility stop, infra errors count as failures"])
    result = bench.runpytest(*ONE, "--model", "oracle", "--step-budget-scale", "2")
    result.stdout.fnmatch_lines(["agentfloor protocol agentfloor: tier step budget x2 (D 20, E 20 turns, as the "
                                 "authors), repeats checked where declared, rejected submissions retried "
                                 "(expected feedback), completion cap 4,096, infra errors excluded from TCR"])
