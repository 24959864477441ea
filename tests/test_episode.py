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
from pytest_agentfloor.providers.scripted import ScriptedProvider
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, reply
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


def test_an_episode_within_the_token_budget_is_not_stopped(bench: pytest.Pytester) -> None:
    # B1's reference takes three replies: 3 x (30 + 10) = 120 tokens fit a budget of 1000
    with FakeModelServer(usage(30, 10)) as server:
        rec = run_b1(bench, server, "--token-budget", "1000")
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
