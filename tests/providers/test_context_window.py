"""Context windows (issue 19): num_ctx on every Ollama request, cut prompts detected, overflow 400s.

Everything goes over real HTTP to the loopback fake server; expected sizes are worked by hand
from the documented formula (1536 + 384 per turn + the completion cap, rounded up to 1024s).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.context import (LADDER_MAX_CALL_LIMIT, LADDER_MAX_TURNS, context_need, prompt_cut,
                                       session_turns)
from pytest_agentfloor.protocol import PROTOCOLS, resolve_protocol
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.grading import grade
from pytest_agentfloor.grading.failure import terminal_flag
from pytest_agentfloor.local.model_files import QWEN_05B
from pytest_agentfloor.local.server import LocalServerError
from pytest_agentfloor.local.session import slot_context
from pytest_agentfloor.providers.base import is_context_overflow
from pytest_agentfloor.providers.ollama_chat import OllamaProvider
from pytest_agentfloor.providers.openai_chat import OpenAIProvider
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, raw, reply, status

REPO = Path(__file__).resolve().parents[2]
E1 = REPO / "cases" / "tier_E" / "E1.toml"


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def case_e1():
    case, digest = load_case(E1)
    return resolve(case, "v0", "i0", digest)


def ollama(server: FakeModelServer, **kw: Any) -> OllamaProvider:
    fields: dict[str, Any] = {"name": "m", "provider": "ollama", "model": "gemma4:26b", "base_url": server.url,
                              "retries": 0, "timeout_s": 5.0}
    return OllamaProvider(ModelConfig(**{**fields, **kw}))


def openai_(server: FakeModelServer, **kw: Any) -> OpenAIProvider:
    fields: dict[str, Any] = {"name": "m", "provider": "openai", "model": "tiny", "base_url": server.openai_url,
                              "retries": 0, "timeout_s": 5.0}
    return OpenAIProvider(ModelConfig(**{**fields, **kw}))


def turn_of(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def growing(per_turn: int, base: int, cap: int | None = None):
    """A 'model' that keeps looking things up; its prompt count grows by `per_turn`, capped like Ollama's cut."""
    def respond(body: dict[str, Any]):
        t = turn_of(body)
        n = base + per_turn * t
        if cap is not None:
            n = min(n, cap)
        return reply(tool_calls=[("lookup_record", {"record_id": f"CUS-{t}"})], tokens_in=n, tokens_out=20)
    return respond


# -- sizing -------------------------------------------------------------------------------------
def test_context_need_worked_by_hand() -> None:
    assert context_need(10, 1024) == 7168  # 1536 + 3840 + 1024 = 6400 -> 7 x 1024
    assert context_need(1, 64) == 2048  # 1536 + 384 + 64 = 1984 -> 2 x 1024
    assert context_need(10, 2048) == 8192  # 7424 -> 8 x 1024: the embedded server's default per slot


def test_num_ctx_configured_is_sent_on_every_request(server: FakeModelServer, case_e1) -> None:
    server.responder = growing(100, 900)
    traj = run_episode(case_e1, ollama(server, context_window=16384), model="m")
    assert traj.termination == "turn_budget" and len(server.requests) == case_e1.turn_budget == 10
    assert [r["options"]["num_ctx"] for r in server.requests] == [16384] * 10
    assert server.show_requests == 0  # a configured window needs no question to the server
    assert traj.context_window == 16384


def test_num_ctx_sized_from_api_show_and_bounded(server: FakeModelServer, case_e1) -> None:
    server.context_length = 131072
    server.responder = growing(100, 900)
    provider = ollama(server, max_tokens=1024)
    traj = run_episode(case_e1, provider, model="m")
    # 12-turn episode (agentfloor protocol, tier E's longest budget) with a 1024-token cap: 1536 + 4608 + 1024
    # = 7168, under the default bound and the model's maximum
    assert {r["options"]["num_ctx"] for r in server.requests} == {7168}
    assert server.show_requests == 1  # asked once per provider, not per request
    assert traj.context_window == 7168 and "131072" in provider.context_source


def test_num_ctx_never_above_the_models_maximum_or_the_users_bound(server: FakeModelServer) -> None:
    server.context_length = 4096
    p = ollama(server, max_tokens=1024)
    p.complete([{"role": "user", "content": "hi"}], [], case=None)
    assert server.requests[-1]["options"]["num_ctx"] == 4096  # the model cannot do 7168
    server.context_length = None  # an older server without /api/show
    q = ollama(server, max_tokens=4000, context_window_max=6000)
    q.complete([{"role": "user", "content": "hi"}], [], case=None)
    assert server.requests[-1]["options"]["num_ctx"] == 6000  # wants 10240, the user's bound says 6000


@pytest.mark.parametrize("reported", [True, 1, 0, -5, 511, 4096.0, "8192", None])
def test_an_implausible_api_show_maximum_is_ignored_and_said(server: FakeModelServer, reported: object) -> None:
    """`true` (an int to Python) was sent as num_ctx, and a 1-token maximum made every item a context error."""
    server.context_length = reported  # type: ignore[assignment]
    p = ollama(server, max_tokens=1024)
    p.complete([{"role": "user", "content": "hi"}], [], case=None)
    num_ctx = server.requests[-1]["options"]["num_ctx"]
    assert type(num_ctx) is int and num_ctx == 7168  # sized for the episodes, as without /api/show
    if reported is None:  # no /api/show: nothing to say
        assert "ignored" not in p.context_source
    else:
        assert f"/api/show's context_length {reported!r} ignored" in p.context_source


def test_the_smallest_plausible_maximum_is_kept(server: FakeModelServer) -> None:
    server.context_length = 512
    p = ollama(server, max_tokens=128)
    p.complete([{"role": "user", "content": "hi"}], [], case=None)
    assert server.requests[-1]["options"]["num_ctx"] == 512
    assert "the model's maximum from /api/show" in p.context_source


# -- detection of a cut prompt -------------------------------------------------------------------
def test_prompt_cut_rules_worked_by_hand() -> None:
    assert prompt_cut(2048, 1900, 2048) is not None  # reaches the window
    assert prompt_cut(1948, 1948, 2048) is not None  # stopped growing in the upper half of the window
    assert prompt_cut(1949, 1948, 2048) is None  # still growing
    assert prompt_cut(150, 1200, 2048) is None  # a count of uncached tokens only, far below the last one
    assert prompt_cut(300, 310, 2048) is None  # stopped growing, but far from the window: no evidence
    assert prompt_cut(1000, 1000, None) is None  # no window known: only a 400 tells
    assert prompt_cut(0, 1000, 2048) is None  # no usage figures
    assert prompt_cut(1800, 1700, 2048, tokens_out=300, finish_reason="length") is not None
    assert prompt_cut(1800, 1700, 2048, tokens_out=300, finish_reason="tool_calls") is None


def test_a_server_capping_prompt_eval_count_is_detected_on_the_right_turn(server: FakeModelServer,
                                                                          case_e1) -> None:
    # turn t reports min(1000 + 450 t, 1948): 1000, 1450, 1900, 1948, 1948 -> cut at turn 4
    server.responder = growing(450, 1000, cap=1948)
    provider = ollama(server, context_window=2048)
    traj = run_episode(case_e1, provider, model="m")
    assert traj.termination == "context_limit"
    assert len(traj.turns) == 5 and [t.tokens_in for t in traj.turns] == [1000, 1450, 1900, 1948, 1948]
    assert traj.error.startswith("turn 4: ") and "context_window of models.m" in traj.error
    assert "options.num_ctx" in traj.error
    assert terminal_flag(traj) == "context_limit"
    assert all(r["options"]["num_ctx"] == 2048 for r in server.requests)


def test_a_count_equal_to_the_window_is_a_cut(server: FakeModelServer, case_e1) -> None:
    server.responder = growing(700, 1000, cap=2048)  # 1000, 1700, 2048
    traj = run_episode(case_e1, ollama(server, context_window=2048), model="m")
    assert traj.termination == "context_limit" and len(traj.turns) == 3
    assert "filled the 2048-token context window" in traj.error


def test_an_uncut_long_episode_is_not_flagged(server: FakeModelServer, case_e1) -> None:
    server.responder = growing(450, 1000)  # grows every turn and stays below the window
    traj = run_episode(case_e1, ollama(server, context_window=8192), model="m")
    assert traj.termination == "turn_budget"


# -- the 400 "exceeds the context" reply, both wire formats ---------------------------------------
@pytest.mark.parametrize("message", [
    "the request exceeds the available context size, try increasing it",  # llama.cpp
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",  # vLLM
    "input length exceeds the context length",  # Ollama
])
@pytest.mark.parametrize("wire", ["ollama", "openai"])
def test_a_400_context_overflow_is_the_context_limit_termination(server: FakeModelServer, case_e1,
                                                                 wire: str, message: str) -> None:
    server.push(reply(tool_calls=[("lookup_record", {"record_id": "CUS-1"})]), status(400, message))
    provider = ollama(server) if wire == "ollama" else openai_(server, retries=2)
    traj = run_episode(case_e1, provider, model="m")
    assert traj.termination == "context_limit", traj.error
    assert len(server.requests) == 2  # not retried: the same prompt cannot fit the next time either
    assert "HTTP 400" in traj.error and "context" in traj.error
    assert ("options.num_ctx" if wire == "ollama" else "--ctx-size") in traj.error
    result = grade(case_e1, traj)
    assert terminal_flag(traj) == "context_limit" and not result.passed


@pytest.mark.parametrize("body", [
    {"detail": "Input is too long for this model's context window (9000 > 8192 tokens)"},
    {"detail": [{"loc": ["body", "messages"], "msg": "prompt is too long: 9000 tokens", "type": "value_error"}]},
])
def test_a_fastapi_detail_body_keeps_its_message_and_its_overflow_is_recognised(server: FakeModelServer, case_e1,
                                                                                 body: dict) -> None:
    server.push(reply(tool_calls=[("lookup_record", {"record_id": "CUS-1"})]), raw(body, code=400))
    traj = run_episode(case_e1, openai_(server, retries=2), model="m")
    assert traj.termination == "context_limit", traj.error
    assert "too long" in traj.error and "{" not in traj.error.split("HTTP 400:", 1)[1]  # the text, not the dict


def test_a_fastapi_detail_that_is_no_overflow_is_an_error_with_its_text(server: FakeModelServer, case_e1) -> None:
    server.push(raw({"detail": [{"loc": ["body", "tools"], "msg": "field required", "type": "missing"},
                                {"loc": ["body", "model"], "msg": "unknown model", "type": "value_error"}]}, code=422))
    traj = run_episode(case_e1, openai_(server, retries=0), model="m")
    assert traj.termination != "context_limit"
    assert "HTTP 422: field required; unknown model" in (traj.error or "")


def test_other_400s_are_not_context_overflows() -> None:
    assert not is_context_overflow("invalid tool schema: missing 'type'")
    assert not is_context_overflow("model 'x' not found")
    assert is_context_overflow("Error code: context_length_exceeded")
    assert is_context_overflow("prompt is too long: 210000 tokens > 200000 maximum")


# -- the embedded server's slots -----------------------------------------------------------------
def test_slot_context_fits_the_longest_ladder_episode() -> None:
    local = ModelConfig(name="qwen", provider="local")
    assert slot_context(QWEN_05B, [local]) == 8192  # the server's 8192 holds the 7168 needed with the default 1024-token cap (12 turns)
    big = ModelConfig(name="qwen", provider="local", max_tokens=2048, context_window=12288)
    assert slot_context(QWEN_05B, [local, big]) == 12288
    greedy = ModelConfig(name="q2", provider="local", max_tokens=4096)  # unset: sized up, not refused
    assert slot_context(QWEN_05B, [greedy]) == 10240  # 1536 + 12 x 384 + 4096 = 10240
    assert slot_context(QWEN_05B, [local], turns=20) == 10240  # tbb: 1536 + 7680 + 1024


def test_a_slot_too_small_is_a_clear_start_up_error() -> None:
    small = ModelConfig(name="qwen", provider="local", context_window=4096)
    with pytest.raises(LocalServerError, match=r"models\.qwen: .*4096 tokens per slot.*needs 7168.*context_window"):
        slot_context(QWEN_05B, [small])
    set_but_short = ModelConfig(name="q2", provider="local", max_tokens=4096, context_window=8192)
    with pytest.raises(LocalServerError, match=r"max_tokens = 4096 \(needs 10240\)"):
        slot_context(QWEN_05B, [set_but_short])


def test_session_turns_follow_the_protocol() -> None:
    assert session_turns(None) == 12 == session_turns(PROTOCOLS["agentfloor"]) == session_turns(PROTOCOLS["legacy"])
    assert session_turns(PROTOCOLS["tbb"]) == LADDER_MAX_CALL_LIMIT + 2 == 18
    assert session_turns(resolve_protocol("agentfloor", step_budget_scale=1.5)) == 18


def test_the_ladder_constants_match_the_cases() -> None:
    limits, budgets = [], []
    for path in sorted((REPO / "cases").glob("tier_*/*.toml")):
        case, digest = load_case(path)
        rc = resolve(case, "v0", "i0", digest)
        limits.append(rc.call_limit)
        budgets.append(rc.turn_budget)
    assert max(limits) == LADDER_MAX_CALL_LIMIT and max(budgets) == LADDER_MAX_TURNS


def test_ollama_sizes_for_the_sessions_protocol(server: FakeModelServer) -> None:
    from pytest_agentfloor.providers.registry import make_provider

    p = make_provider(ModelConfig(name="m", provider="ollama", model="x", base_url=server.url, retries=0),
                      turns=session_turns(PROTOCOLS["tbb"]))
    p.complete([{"role": "user", "content": "hi"}], [], case=None)
    assert server.requests[-1]["options"]["num_ctx"] == 10240


# -- through the plugin: error, record, flag, counted apart ---------------------------------------
def test_context_limit_through_the_plugin(pytester: pytest.Pytester, server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    pytester.makefile(".toml", models=f"""
        [models.small-ollama]
        provider = "ollama"
        model = "tiny-tools"
        base_url = "{server.url}"
        context_window = 2048
        timeout_s = 5
    """)
    server.responder = lambda body: reply(tool_calls=[("lookup_record", {"record_id": "X"})], tokens_in=2048)
    result = pytester.runpytest("cases/tier_B/B1.toml", "--model", "small-ollama", "--variants", "v0",
                                "--instances", "i0", "--no-probe", "--junitxml=out.xml")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*context limit (small-ollama): turn 0: the prompt filled the 2048-token*"])
    assert "Traceback" not in result.stdout.str()
    (rec,) = [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert rec["termination"] == "context_limit" and rec["terminal_flag"] == "context_limit"
    assert rec["failure_mode"] is None and not rec["infra_error"] and not rec["passed"]
    assert rec["trajectory"]["context_window"] == 2048
    assert server.requests[0]["options"]["num_ctx"] == 2048


def test_the_probe_reports_the_context_window_in_force(pytester: pytest.Pytester, server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models=f"""
        [models.auto-ollama]
        provider = "ollama"
        model = "tiny-tools"
        base_url = "{server.url}"
        max_tokens = 512
        timeout_s = 5

        [models.fixed-openai]
        provider = "openai"
        model = "tiny-tools"
        base_url = "{server.openai_url}"
        timeout_s = 5
    """)
    server.context_length = 40960
    server.responder = lambda body: reply(tool_calls=[("lookup_record", {"record_id": "CUS-4417"})])
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "auto-ollama,fixed-openai", "--variants", "v0",
                                "--instances", "i0")
    # 1536 + 12 x 384 + 512 = 6656 -> 7168, under the 32768 bound and the model's 40960
    result.stdout.fnmatch_lines([
        "agentfloor: probe auto-ollama: tool_capable",
        "agentfloor: probe auto-ollama: context window 7168 tokens (sized for 12-turn episodes, "
        "bound 32768, model maximum 40960)",
        "agentfloor: probe fixed-openai: tool_capable",
        "agentfloor: probe fixed-openai: context window set by the server",
    ])
    data = json.loads((pytester.path / "reports" / "probe.json").read_text())
    assert data["auto-ollama"]["context_window"] == 7168 and data["fixed-openai"]["context_window"] is None
    recs = [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert {r["model"]: r["trajectory"]["context_window"] for r in recs} == {"auto-ollama": 7168, "fixed-openai": None}
    # the window in force heads every report: session.json, report.md, report.html and the terminal
    run = json.loads((pytester.path / "reports" / "session.json").read_text())
    assert run["context_windows"] == {"auto-ollama": 7168, "fixed-openai": None}
    assert run["protocol"]["name"] == "agentfloor"
    head = "protocol agentfloor · context auto-ollama 7168, fixed-openai unknown"
    assert head in (pytester.path / "reports" / "report.md").read_text()
    assert head in (pytester.path / "reports" / "report.html").read_text()
    assert head in result.stdout.str()


def test_an_embedded_slot_too_small_stops_the_session_before_anything_runs(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models="""
        [models.tiny-local]
        provider = "local"
        context_window = 2048
    """)
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "tiny-local", "--variants", "v0",
                                "--instances", "i0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*local model server: models.tiny-local: a context of 2048 tokens per slot "
                                 "cannot hold a 12-turn episode with max_tokens = 1024 (needs 7168)*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
