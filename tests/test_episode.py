"""Episode limits that end a run early: the token budget (prompt tokens count) and the wall clock.

The token budget goes through the plugin against a real loopback HTTP server, so the usage
figures travel the way a real endpoint reports them; the timeout uses run_episode's injectable
clock, so no test waits for it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.providers.base import MalformedReply, ProviderError, Reply, ToolCallOut
from pytest_agentfloor.providers.scripted import ScriptedProvider
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer
from tests.test_provider_episodes import follow_reference

REPO = Path(__file__).resolve().parents[1]
B1 = REPO / "cases" / "tier_B" / "B1.toml"


def b1() -> Any:
    case, digest = load_case(B1)
    return resolve(case, "v0", "i0", digest)


# -- token budget --------------------------------------------------------------------------------
def usage(tokens_in: int, tokens_out: int):
    """B1's reference solution, each reply reporting the given usage."""
    def respond(body: dict[str, Any]):
        ref = follow_reference(body)
        ref.tokens_in, ref.tokens_out = tokens_in, tokens_out
        return ref
    return respond


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    return pytester


def run_b1(bench: pytest.Pytester, server: FakeModelServer, *extra: str) -> dict[str, Any]:
    bench.makefile(".toml", models=f"""
        [models.fake]
        provider = "openai"
        model = "tiny"
        base_url = "{server.openai_url}"
        retries = 0
        timeout_s = 5
    """)
    bench.runpytest("cases/tier_B/B1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0",
                    "--no-probe", *extra)
    (line,) = (bench.path / "reports" / "latest" / "runs.jsonl").read_text().splitlines()
    return json.loads(line)


def test_prompt_tokens_count_towards_the_token_budget(bench: pytest.Pytester) -> None:
    # 95 prompt + 10 completion tokens in the first reply: over a budget of 100 only if the prompt counts
    with FakeModelServer(usage(95, 10)) as server:
        rec = run_b1(bench, server, "--token-budget", "100")
    assert rec["termination"] == "token_budget"
    assert (rec["turns"], rec["tokens_in"], rec["tokens_out"]) == (1, 95, 10)
    assert not rec["passed"]
    assert len(server.requests) == 1  # the episode stopped: no further request


def test_tokens_accumulate_over_turns(bench: pytest.Pytester) -> None:
    # 40 per turn: 40, 80, then 120 > 100 ends the episode after the third reply
    with FakeModelServer(usage(30, 10)) as server:
        rec = run_b1(bench, server, "--token-budget", "100")
    assert rec["termination"] == "token_budget"
    assert (rec["turns"], rec["tokens_in"], rec["tokens_out"]) == (3, 90, 30)
    assert len(server.requests) == 3


def test_an_episode_that_uses_exactly_its_token_budget_is_not_stopped(bench: pytest.Pytester) -> None:
    # B1's reference takes three replies: 3 x (30 + 10) = 120 tokens, not more than a budget of 120
    with FakeModelServer(usage(30, 10)) as server:
        rec = run_b1(bench, server, "--token-budget", "120")
    assert rec["termination"] != "token_budget" and rec["passed"]
    assert (rec["turns"], rec["tokens_in"], rec["tokens_out"]) == (3, 90, 30)


# -- wall-clock timeout --------------------------------------------------------------------------
class SlowModel:
    """The oracle, on a fake clock that advances `step_s` per model turn."""

    def __init__(self, step_s: float):
        self.now = 0.0
        self.step_s = step_s
        self.calls = 0
        self.inner = ScriptedProvider(ModelConfig(name="oracle", provider="scripted", policy="oracle"))
        self.config = self.inner.config

    def clock(self) -> float:
        return self.now

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Any:
        self.calls += 1
        self.now += self.step_s
        return self.inner.complete(messages, tools, case=case)

    def close(self) -> None:
        pass


def test_the_episode_stops_at_its_wall_clock_limit() -> None:
    # turns end at t=400 and t=800; the check before the third turn sees 800 > 600
    model = SlowModel(step_s=400)
    traj = run_episode(b1(), model, model="oracle", timeout_s=600, clock=model.clock)
    assert traj.termination == "timeout"
    assert model.calls == 2 and len(traj.turns) == 2
    assert traj.error == "episode exceeded 600s"
    assert traj.wall_s == 800


def test_an_episode_inside_its_wall_clock_limit_runs_to_the_end() -> None:
    model = SlowModel(step_s=1)
    traj = run_episode(b1(), model, model="oracle", timeout_s=600, clock=model.clock)
    assert traj.termination == "final_answer" and traj.error is None
    assert model.calls == 3 and traj.wall_s == 3


def test_timeout_is_checked_before_every_turn_including_the_first() -> None:
    model = SlowModel(step_s=1)
    times = iter([0.0, 700.0, 700.0])  # start, then already past the limit at the first check
    traj = run_episode(b1(), model, model="oracle", timeout_s=600, clock=lambda: next(times))
    assert traj.termination == "timeout" and model.calls == 0 and traj.turns == []


def test_a_wall_clock_exactly_at_the_limit_is_not_over_it() -> None:
    # checks at t=0, 300 and 600: 600 is not more than 600, so the third turn runs
    model = SlowModel(step_s=300)
    traj = run_episode(b1(), model, model="oracle", timeout_s=600, clock=model.clock)
    assert traj.termination == "final_answer" and model.calls == 3 and traj.wall_s == 900


# -- the loop itself, with a provider that plays back given replies -------------------------------
class Playback:
    """Answers with the given replies (or raises the given exceptions) and keeps what it was sent."""

    def __init__(self, *replies: Any):
        self.replies = list(replies)
        self.sent: list[list[dict[str, Any]]] = []
        self.config = ModelConfig(name="playback", provider="scripted", policy="oracle")

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Any:
        self.sent.append(json.loads(json.dumps(messages)))
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        pass


def calls(*specs: tuple[str, str, str]) -> list[ToolCallOut]:
    return [ToolCallOut(id=i, name=n, arguments=a) for i, n, a in specs]


def test_the_conversation_the_model_sees() -> None:
    from pytest_agentfloor.episode import SYSTEM_PROMPTS

    case = b1()
    first = case.reference[0].calls[0]
    args = json.dumps(dict(first.args))
    model = Playback(
        Reply(content="looking", tool_calls=calls(("c1", first.tool, args)), finish_reason="tool_calls",
              tokens_in=5, tokens_out=3, latency_s=0.25, busy_s=0.2),
        Reply(content="The answer.", tokens_in=7, tokens_out=2, latency_s=0.5),
    )
    traj = run_episode(case, model, model="m", run=2)
    assert model.sent[0] == [{"role": "system", "content": SYSTEM_PROMPTS["default"]},
                             {"role": "user", "content": case.prompt}]
    second = model.sent[1]
    assert second[2] == {"role": "assistant", "content": "looking", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": first.tool, "arguments": args}}]}
    assert (second[3]["role"], second[3]["tool_call_id"], second[3]["name"]) == ("tool", "c1", first.tool)
    assert json.loads(second[3]["content"]) == traj.calls[0].result and traj.calls[0].ok
    assert second[3]["content"] == json.dumps(traj.calls[0].result, sort_keys=True)
    assert traj.messages[-1] == {"role": "assistant", "content": "The answer."}
    assert (traj.termination, traj.final_answer, traj.run, traj.error) == ("final_answer", "The answer.", 2, None)
    t0, t1 = traj.turns
    assert (t0.index, t0.content, t0.finish_reason, t0.tokens_in, t0.tokens_out, t0.latency_s, t0.busy_s) == \
           (0, "looking", "tool_calls", 5, 3, 0.25, 0.2)
    assert (t1.index, t1.content, t1.leaked_call) == (1, "The answer.", False)
    assert traj.calls[0].arguments == dict(first.args) and not traj.calls[0].repeated


def test_an_endpoint_failure_ends_the_episode_as_infrastructure() -> None:
    traj = run_episode(b1(), Playback(ProviderError("http://h", "HTTP 500", transient=True)), model="m")
    assert (traj.termination, traj.error, traj.turns) == ("provider_error", "http://h: HTTP 500", [])


def test_an_unreadable_reply_is_a_malformed_turn_that_counts() -> None:
    traj = run_episode(b1(), Playback(MalformedReply("tool call arguments are not JSON")), model="m")
    assert traj.termination == "malformed_call" and traj.error == "tool call arguments are not JSON"
    assert [(t.index, t.finish_reason) for t in traj.turns] == [(0, "malformed")]


def test_a_call_written_as_text_is_flagged_and_is_no_call() -> None:
    text = '<tool_call>{"name": "lookup_record", "arguments": {}}</tool_call>'
    traj = run_episode(b1(), Playback(Reply(content=text)), model="m")
    assert traj.termination == "final_answer" and traj.turns[0].leaked_call and traj.calls == []
    plain = run_episode(b1(), Playback(Reply(content=None)), model="m")
    assert not plain.turns[0].leaked_call and plain.final_answer == ""
    assert plain.messages[-1] == {"role": "assistant", "content": ""}


def test_the_same_successful_call_again_is_repeated_whatever_the_key_order() -> None:
    case = b1()
    first = case.reference[0].calls[0]
    args = dict(first.args)
    args["zz"] = 1  # an unknown field: the sandbox refuses, so this one is an error, not a success
    ok = json.dumps(dict(first.args))
    reordered = json.dumps(dict(reversed(list(first.args.items()))))
    model = Playback(
        Reply(content=None, tool_calls=calls(("a", first.tool, json.dumps(args)))),
        Reply(content=None, tool_calls=calls(("b", first.tool, ok))),
        Reply(content=None, tool_calls=calls(("c", first.tool, reordered))),
        Reply(content="done"),
    )
    traj = run_episode(case, model, model="m")
    assert [c.repeated for c in traj.calls] == [False, False, True]
    assert [c.ok for c in traj.calls] == [False, True, True]
