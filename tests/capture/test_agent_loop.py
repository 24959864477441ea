"""End to end over loopback: small agents written with the official `openai` and `ollama` clients run
through the proxy against a fake upstream -> capture -> cases -> `pytest cases/captured --model oracle`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import ollama
import openai
import pytest

from pytest_agentfloor.capture.cases import main as cases_main
from tests.capture.helpers import records, running_proxy
from tests.fakeserver import FakeModelServer, reply

pytest_plugins = ["pytester"]

ROUTER_PROMPT = "You route each user turn: answer with one word, weather or other."
WEATHER_PROMPT = "You are a weather agent. Call get_weather, then answer in one sentence."
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "current weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
CITIES = {"Paris": "sunny", "Oslo": "snow", "Lima": "fog"}


def upstream(body: dict[str, Any]) -> Any:
    """The production model: routes, calls the tool once, then answers from the tool's result."""
    system = body["messages"][0]["content"]
    last = body["messages"][-1]
    if system == ROUTER_PROMPT:
        return reply("weather" if any(c in last["content"] for c in CITIES) else "other")
    if last["role"] == "user":
        city = next(c for c in CITIES if c in last["content"])
        return reply(tool_calls=[("get_weather", {"city": city}, f"call_{city}")])
    return reply(f"It is {last['content']} there.")


def openai_agent(base: str, turns: list[str], stream: bool) -> list[str]:
    http = openai.DefaultHttpxClient(trust_env=False)
    router = openai.OpenAI(base_url=base + "/v1", api_key="sk-agent-key-0123456789abcdef", http_client=http,
                           default_headers={"X-Agentfloor-Site": "router"}, max_retries=0)
    weather = openai.OpenAI(base_url=base + "/site/weather/v1", api_key="sk-agent-key-0123456789abcdef",
                            http_client=http, max_retries=0)
    answers = []
    for turn in turns:
        route = router.chat.completions.create(model="gpt-x", max_tokens=5, messages=[
            {"role": "system", "content": ROUTER_PROMPT}, {"role": "user", "content": turn}])
        if route.choices[0].message.content != "weather":
            answers.append("(not for me)")
            continue
        messages: list[dict[str, Any]] = [{"role": "system", "content": WEATHER_PROMPT}, {"role": "user", "content": turn}]
        for _ in range(3):
            if stream:
                parts, calls = [], {}
                for chunk in weather.chat.completions.create(model="gpt-x", messages=messages, tools=TOOLS, stream=True):
                    delta = chunk.choices[0].delta if chunk.choices else None
                    if delta and delta.content:
                        parts.append(delta.content)
                    for c in (delta.tool_calls or []) if delta else []:
                        slot = calls.setdefault(c.index, {"id": c.id, "name": "", "arguments": ""})
                        slot["name"] += c.function.name or ""
                        slot["arguments"] += c.function.arguments or ""
                text, tool_calls = "".join(parts), list(calls.values())
            else:
                msg = weather.chat.completions.create(model="gpt-x", messages=messages, tools=TOOLS).choices[0].message
                text = msg.content or ""
                tool_calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                              for c in msg.tool_calls or []]
            if not tool_calls:
                answers.append(text)
                break
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in tool_calls]})
            for c in tool_calls:
                messages.append({"role": "tool", "tool_call_id": c["id"],
                                 "content": CITIES[json.loads(c["arguments"])["city"]]})
    return answers


def ollama_agent(base: str, turns: list[str]) -> list[str]:
    client = ollama.Client(host=base, headers={"X-Agentfloor-Site": "ollama_weather"}, trust_env=False)
    answers = []
    for turn in turns:
        messages: list[dict[str, Any]] = [{"role": "system", "content": WEATHER_PROMPT}, {"role": "user", "content": turn}]
        for _ in range(3):
            msg = client.chat(model="qwen-x", messages=messages, tools=TOOLS, stream=False).message
            if not msg.tool_calls:
                answers.append(msg.content or "")
                break
            messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": [
                {"function": {"name": c.function.name, "arguments": dict(c.function.arguments)}} for c in msg.tool_calls]})
            for c in msg.tool_calls:
                messages.append({"role": "tool", "content": CITIES[c.function.arguments["city"]],
                                 "tool_name": c.function.name})
    return answers


def test_agents_through_the_proxy_become_cases_the_oracle_passes(pytester: pytest.Pytester, tmp_path: Path) -> None:
    out = pytester.path / "cases" / "captured"
    turns = ["Weather in Paris?", "Tell me a joke", "Weather in Oslo?", "Weather in Paris?"]
    with FakeModelServer(upstream) as up, running_proxy(up.url, out) as (url, _):
        assert openai_agent(url, turns, stream=False) == ["It is sunny there.", "(not for me)", "It is snow there.",
                                                         "It is sunny there."]
        assert openai_agent(url, ["Weather in Lima?"], stream=True) == ["It is fog there."]
        assert ollama_agent(url, ["Weather in Lima?", "Weather in Paris?"]) == ["It is fog there.", "It is sunny there."]
        n_requests = len(up.received)
    recs = records(out)
    assert len(recs) == n_requests == 4 + 3 * 2 + 1 * 2 + 2 * 2 + 1  # router calls, weather loops, ollama loops
    assert {r["site"] for r in recs} == {"router", "weather", "ollama_weather"}
    assert b"sk-agent-key" not in b"".join(p.read_bytes() for p in out.glob("*.jsonl"))

    assert cases_main(["--from", str(out)]) == 0
    tables = sorted(p.name for p in out.glob("*.toml"))
    assert tables == ["ollama_weather-2.toml", "ollama_weather.toml", "router.toml", "weather-2.toml", "weather.toml"]
    import tomllib

    router = tomllib.loads((out / "router.toml").read_text())
    assert router["grader"] == "intent" and router["labels"] == ["other", "weather"]
    counts = {c["prompt"]: c["provenance"]["count"] for c in router["case"]}
    assert counts == {"Weather in Paris?": 2, "Tell me a joke": 1, "Weather in Oslo?": 1, "Weather in Lima?": 1}
    assert all(c["review"] == "provisional" and c["provenance"]["upstream_model"] == "gpt-x" for c in router["case"])
    graders = {name: tomllib.loads((out / name).read_text())["grader"] for name in tables}
    assert sorted(graders.values()) == ["exact", "exact", "intent", "tool_calls", "tool_calls"]

    result = pytester.runpytest("cases/captured", "--model", "oracle", "-p", "no:randomly")
    # router: 4 distinct turns; weather: 3 tool-call requests + 3 answers; ollama: 2 + 2
    result.assert_outcomes(passed=4 + 6 + 4)
    summary = json.loads((pytester.path / "reports" / "summary.json").read_text())["callsite"]
    # nothing reviewed yet: every case is provisional, so the statistics count none of them
    assert summary["sites"] == [] and summary["provisional"] == 14
    shutil.rmtree(out)
