"""Issue 32 end to end against the embedded model: a real agent loop, capture -> cases -> review -> evaluate ->
routing.json, in one test, over loopback only.

The agent is docs/examples/home_agent.py (four call sites: router, weather with a tool call, weather_answer,
timer JSON), written with the official `openai` client; the same agent with the official `ollama` client
runs its turns through the proxy too. Upstream of the proxy is the embedded Qwen 0.5B (llama-server,
OpenAI wire). llama-server does not speak Ollama's /api/chat and no Ollama runs here, so the ollama
agent's proxy has tests/realmodel/ollamawire.py upstream: a translation of each /api/chat request to one
chat completion of the same embedded model. The proxy captures the Ollama wire as the agent sent it;
only the hop behind the proxy is translated.

Then `pytest cases/captured` with two configurations: `production` (the embedded model reached as an
OpenAI-compatible hosted model, priced per token: the stand-in for GPT-x) and `candidate` (the same
weights as a local model, priced by the hour). What the tiny model answers is not asserted beyond
what temperature 0 makes repeatable: the loop's plumbing, the call mix, and that routing.json is the
decision of this run's records.
"""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.capture.cases import main as cases_main
from pytest_agentfloor.capture.review import main as review_main
from pytest_agentfloor.capture.store import call_mix, read_captures
from pytest_agentfloor.local.model_files import QWEN_05B
from pytest_agentfloor.local.server import LocalServer
from tests.capture.helpers import running_proxy

from .helpers import REPO
from .ollamawire import OllamaWire

pytestmark = pytest.mark.realmodel
KEY = "sk-agent-key-0123456789abcdef"


def home_agent() -> Any:
    spec = importlib.util.spec_from_file_location("home_agent", REPO / "docs" / "examples" / "home_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def counted(call: Any, seen: list[str]) -> Any:
    def wrapper(site: str, *args: Any) -> Any:
        seen.append(site)
        return call(site, *args)
    return wrapper


def test_a_real_agent_loop_becomes_a_routing(pytester: pytest.Pytester, qwen_server: LocalServer) -> None:
    agent = home_agent()
    out = pytester.path / "cases" / "captured"
    sites: list[str] = []
    model = QWEN_05B.key
    # the openai agent: 4 turns (weather, timer, chat, weather); the ollama agent: 2 (timer, weather)
    with running_proxy(qwen_server.url, out) as (url, proxy):
        call = counted(agent.openai_call(url + "/v1", model, KEY), sites)
        for t in agent.TURNS[:4]:
            agent.turn(call, t)
        captured_openai = proxy.captured
    with OllamaWire(qwen_server.openai_url) as wire, running_proxy(wire.url, out) as (url, proxy):
        call = counted(agent.ollama_call(url, model), sites)
        for t in (agent.TURNS[4], agent.TURNS[6]):
            agent.turn(call, t)
        captured_ollama = proxy.captured
        assert wire.calls == captured_ollama
    recs = [r for _, _, r in read_captures(out)]
    assert len(recs) == len(sites) == captured_openai + captured_ollama
    assert {r["api"] for r in recs} == {"openai", "ollama"}
    assert all(r["status"] == 200 and r["site_from"] == "header" for r in recs), [r["reply"] for r in recs]
    assert call_mix(out) == {s: sites.count(s) for s in set(sites)}
    assert KEY.encode() not in b"".join(p.read_bytes() for p in out.glob("*.jsonl"))

    assert cases_main(["--from", str(out)]) == 0
    tables = {p.name: tomllib.loads(p.read_text()) for p in out.glob("*.toml")}
    assert {t["site"] for t in tables.values()} == set(sites)
    n_cases = sum(len(t["case"]) for t in tables.values())
    assert review_main([str(out), "--accept-all", "all"]) == 0

    pytester.makefile(".toml", models=f"""
[models.production]      # stand-in for the hosted GPT-x the agent runs on: priced per token
provider = "openai"
model = "{model}"
base_url = "{qwen_server.openai_url}"
hosted = true
max_tokens = 128
timeout_s = 120
pricing = {{ input_per_mtok = 0.40, output_per_mtok = 1.60 }}

[models.candidate]       # the second configuration: the same weights as a local model on amortised hardware
provider = "local"
base_url = "{qwen_server.openai_url}"
params_b = 0.5
max_tokens = 128
timeout_s = 120
pricing = {{ hourly_usd = 0.05 }}
""")
    result = pytester.runpytest("cases/captured", "--model", "candidate,production", "--agentfloor-reference",
                                "production", "--agentfloor-routing-out", "routing.json", "--no-probe",
                                "-p", "no:randomly", "-p", "no:cacheprovider", "--agentfloor-concurrency", "1")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2 * n_cases, result.stdout.str()
    assert not outcomes.get("errors"), result.stdout.str()
    result.stdout.fnmatch_lines([f"agentfloor routing: {pytester.path / 'routing.json'}"])

    doc = json.loads((pytester.path / "routing.json").read_text())
    assert doc["reference"] == "production" and doc["session"]["complete"] is True
    assert doc["weights_from"] == "captured call mix" and doc["provisional_cases"] == 0
    assert set(doc["sites"]) == set(sites)
    for site, entry in doc["sites"].items():
        assert entry["calls"] == sites.count(site)
        assert entry["weight"] == pytest.approx(sites.count(site) / len(sites), abs=1e-6)
        assert entry["model"] in ("production", "candidate")
        ref = entry["evidence"]["reference"]
        assert ref["cases"] == sum(len(t["case"]) for t in tables.values() if t["site"] == site)
        assert ref["infra_errors"] == 0 and ref["cost_per_call_usd"] > 0
        if entry["moved"]:
            paired = entry["evidence"]["paired"]
            assert paired["worse"] is False and entry["evidence"]["model"]["accuracy"] >= ref["accuracy"] - 0.10
    # production at temperature 0, asked again, gives back most of what it answered through the proxy
    agree = sum(e["evidence"]["reference"]["passed"] for e in doc["sites"].values())
    assert agree >= 0.75 * n_cases, doc["sites"]
    yaml_text = (pytester.path / "routing.litellm.yaml").read_text()
    assert yaml_text.count("- model_name:") == len(doc["sites"])
