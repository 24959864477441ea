"""Red team (tests/redteam_corpus), issue 27 "money never goes negative": usage a server got wrong never
enters a cost, the --max-cost meter or a budget, and never switches the meter off either.

Scenarios rp20-rp28, rp48 and at01 of the corpus; each test failed before its fix as its comment says.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import ModelConfig, Pricing
from pytest_agentfloor.plan import CostMeter
from pytest_agentfloor.providers.base import usage_count
from pytest_agentfloor.results import record_and_text
from pytest_agentfloor.suite.loader import load_case, resolve
from pytest_agentfloor.trajectory import Trajectory, Turn, plausible_tokens
from tests.fakeserver import FakeModelServer, Reply, raw, reply

REPO = Path(__file__).resolve().parents[1]
PRICED = ModelConfig(name="m", provider="openai", model="x",
                     pricing=Pricing(input_per_mtok=1000.0, output_per_mtok=1000.0))


def case() -> Any:
    c, digest = load_case(REPO / "cases" / "tier_A" / "A1.toml")
    return resolve(c, "v0", "i0", digest)


def record(*turns: Turn) -> dict[str, Any]:
    rc = case()
    traj = Trajectory(case_id=rc.id, tier=rc.tier, variant="v0", instance="i0", run=0, model="m", tools=[],
                      turns=list(turns), termination="final_answer")
    return record_and_text(rc, traj, None, PRICED, "n")[0]


def test_a_count_that_is_no_count_is_named_not_read_as_zero_silently() -> None:
    # before: a float, a string or a list in usage was read as 0 tokens and charged as such, unflagged
    bad: list[str] = []
    assert usage_count(11, "tokens_in", bad) == 11 and bad == []
    assert usage_count(None, "tokens_in", bad) == 0 and bad == []  # not reported: nothing to flag
    for value in (1e30, "eleven", [1], True, 10 ** 20):
        bad = []
        assert usage_count(value, "tokens_out", bad) == 0 and bad == ["tokens_out"], value


def test_a_turn_with_wrong_usage_makes_the_cost_unknown_and_the_rest_still_counts() -> None:
    # before: the per-episode sums hid a negative turn in a positive total (charged), or one bad turn made
    # the whole episode's cost unknown and the meter saw nothing: a 3 USD cap never stopped the session
    good = Turn(index=0, tokens_in=1000, tokens_out=1000)
    negative = Turn(index=1, tokens_in=-500, tokens_out=10)
    rec = record(good, negative)
    assert rec["cost_usd"] is None and rec["usage_invalid"] == ["tokens_in"]
    assert rec["cost_known_usd"] == pytest.approx(2.0)  # the sane turn: 2,000 tokens at 1,000 USD/Mtok
    flagged = record(good, Turn(index=1, tokens_in=5, tokens_out=0, usage_invalid=["tokens_out"]))
    assert flagged["cost_usd"] is None and flagged["usage_invalid"] == ["tokens_out"]
    clean = record(good, Turn(index=1, tokens_in=500, tokens_out=0))
    assert clean["cost_usd"] == pytest.approx(2.5) and "cost_known_usd" not in clean
    # cost_known_usd sits right after cost_usd, before the transcript, where the meter reads it
    keys = list(rec)
    assert keys.index("cost_known_usd") == keys.index("cost_usd") + 1 < keys.index("trajectory")


def test_the_meter_counts_known_cost_and_never_a_models_own_cost_usd_key(tmp_path: Path) -> None:
    # before: the meter took the first "cost_usd": NUMBER anywhere in the line, so an unpriced record
    # (null) whose tool-call arguments held {"cost_usd": 1e9} was charged a billion dollars
    runs = tmp_path / "runs.jsonl"
    lines = [{"cost_usd": None, "trajectory": {"turns": [{"calls": [{"arguments": {"cost_usd": 1e9}}]}]}},
             {"cost_usd": None, "cost_known_usd": 2.0, "trajectory": {"x": {"cost_usd": 5}}},
             {"cost_usd": 0.25}, {"cost_usd": -3.0}]
    runs.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    assert CostMeter(runs).read() == pytest.approx(2.25)


def test_a_token_budget_counts_only_plausible_figures() -> None:
    # before: a negative count lowered the episode's token count (a budget that never ends), an absurd one
    # ended the episode on the server's figure
    assert [plausible_tokens(v) for v in (5, -5, 10 ** 9, 1e3, True, None)] == [5, 0, 0, 0, 0, 0]


@pytest.fixture
def a1(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "cases" / "tier_A")
    return pytester


def test_negative_usage_on_every_other_request_does_not_switch_the_cap_off(a1: pytest.Pytester) -> None:
    # corpus rp28: before, every episode's cost was null (its second request's usage was negative), the
    # meter stayed at 0 and all 30 runs played past a 3 USD cap
    def respond(body: Any) -> Reply:
        first = not any(m.get("role") == "assistant" for m in body["messages"])
        if first:
            return reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"})],
                         tokens_in=1000, tokens_out=1000)
        return reply(content="340", tokens_in=-100_000, tokens_out=-100_000)

    with FakeModelServer(respond) as server:
        a1.makefile(".toml", models=f"""
            [models.m]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            retries = 0
            pricing = {{ input_per_mtok = 1000.0, output_per_mtok = 1000.0 }}
        """)
        result = a1.runpytest("cases", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
                              "--agentfloor-runs", "30", "--max-cost", "3", "--agentfloor-concurrency", "1",
                              "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) >= 25, outcomes  # 2 USD known per run: the cap is passed in the second
    recs = [json.loads(x) for f in a1.path.glob("reports/sessions/*/runs.jsonl") for x in f.read_text().splitlines()]
    assert all(r["cost_usd"] is None and r["cost_known_usd"] == pytest.approx(2.0) for r in recs)


def test_ollama_counts_past_an_int64_are_named_and_the_answer_read(a1: pytest.Pytester) -> None:
    def respond(body: Any) -> Any:
        first = not any(m.get("role") == "assistant" for m in body["messages"])
        msg: dict[str, Any] = {"role": "assistant", "content": "" if first else "340"}
        if first:
            msg["tool_calls"] = [{"function": {"name": "get_attribute",
                                               "arguments": {"record_id": "INV-Q7P2K", "attribute": "on_hand"}}}]
        return raw({"model": "tiny", "message": msg, "done": True, "prompt_eval_count": 10 ** 25, "eval_count": 7})

    with FakeModelServer(respond) as server:
        a1.makefile(".toml", models=f"""
            [models.m]
            provider = "ollama"
            model = "tiny"
            base_url = "{server.url}"
            retries = 0
            pricing = {{ input_per_mtok = 1.0 }}
        """)
        result = a1.runpytest("cases", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
                              "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1}
    (rec,) = [json.loads(x) for f in a1.path.glob("reports/sessions/*/runs.jsonl") for x in f.read_text().splitlines()]
    assert rec["usage_invalid"] == ["tokens_in"] and rec["cost_usd"] is None


def test_prices_past_any_tariff_are_refused_at_load(tmp_path: Path) -> None:
    # corpus in08, in29: before, 1e308 USD/Mtok gave an infinite cost (a traceback, "Infinity" in runs.jsonl)
    from pytest_agentfloor.config import ConfigError, load_models

    path = tmp_path / "models.toml"
    for field in ("input_per_mtok", "output_per_mtok", "hourly_usd"):
        path.write_text(f'[models.m]\nprovider = "openai"\nmodel = "x"\npricing = {{ {field} = 1e308 }}\n')
        with pytest.raises(ConfigError, match=f"models.m.pricing.{field}: Input should be less than or equal to"):
            load_models(path)
