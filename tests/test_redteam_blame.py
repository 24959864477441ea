"""Red team (tests/redteam_corpus), issue 27: what the corpus found charged to the model or lost, fixed.

Each test names the corpus scenario it pins; each failed on the code before its fix as its comment says.
Real pytest sessions against tests/fakeserver.py on loopback, or the unit that decides.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeModelServer, Reply, raw, reply, status

REPO = Path(__file__).resolve().parents[1]
A1_ARGS = ("cases/tier_A/A1.toml", "--model", "m", "--variants", "v0", "--instances", "i0", "--no-probe",
           "-p", "no:cacheprovider")


def models(url: str, provider: str = "openai", **extra: Any) -> str:
    extra = {"retries": 0, "timeout_s": 20, **extra}
    lines = ["[models.m]", f'provider = "{provider}"', 'model = "tiny"', f'base_url = "{url}"'] + \
        [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def records(root: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for f in sorted(root.glob("reports/sessions/*/runs.jsonl"))
            for x in f.read_text().splitlines() if x.strip()]


@pytest.fixture
def a1(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "cases" / "tier_A")
    return pytester


def reference(body: Any) -> Reply:
    """A1 v0 i0 by its reference: the read, then 340."""
    if not any(m.get("role") == "assistant" for m in body["messages"]):
        return reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"})])
    return reply(content="340")


# -- in02: the harness's own crash while playing -------------------------------------------------------
def test_a_crash_inside_the_episode_is_an_infrastructure_error_with_its_record(a1: pytest.Pytester,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # before: OverflowError from the rpm wait printed a traceback, wrote no record, and the session's
    # PARTIAL reasons blamed the probe ("model ?: endpoint failed the probe") because the traceback quoted it
    a1.makeconftest("""
        import pytest_agentfloor.episode as episode

        def boom(*args, **kwargs):
            raise OverflowError("timestamp out of range for platform time_t")

        episode.run_episode = boom
    """)
    a1.makefile(".toml", models=models("http://127.0.0.1:9/v1"))
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # this checkout's package in the subprocess, not an installed one
    result = a1.runpytest_subprocess(*A1_ARGS)
    assert result.parseoutcomes() == {"errors": 1}
    out = result.stdout.str()
    assert "Traceback" not in out and "failed the probe" not in out
    result.stdout.fnmatch_lines(["*infrastructure error (harness): harness error while playing the episode: "
                                 "OverflowError: timestamp out of range*"])
    (rec,) = records(a1.path)
    assert rec["infra_error"] and rec["failure_mode"] is None and "OverflowError" in rec["error"]


# -- ep35: a redirect is not followed -------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_redirect_to_another_server_is_not_followed(a1: pytest.Pytester, provider: str) -> None:
    # before: the clients followed a 307 to wherever the server pointed (another host got the request)
    with FakeModelServer(reference) as other:
        target = other.openai_url + "/chat/completions" if provider == "openai" else other.url + "/api/chat"
        with FakeModelServer(lambda b: status(307, "moved", {"Location": target})) as server:
            a1.makefile(".toml", models=models(server.openai_url if provider == "openai" else server.url, provider))
            result = a1.runpytest(*A1_ARGS)
        assert other.received == []
    assert result.parseoutcomes() == {"errors": 1}
    (rec,) = records(a1.path)
    assert rec["infra_error"] and "HTTP 307" in rec["error"]


# -- rp08: a lone surrogate in the model's output, sent back in the history -----------------------------------
@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_lone_surrogate_in_a_tool_name_is_the_models_call_not_a_broken_request(a1: pytest.Pytester,
                                                                                 provider: str) -> None:
    # before: the next request could not be encoded (UnicodeEncodeError): an infrastructure error
    def respond(body: Any) -> Reply:
        if not any(m.get("role") == "assistant" for m in body["messages"]):
            return reply(tool_calls=[("get_\ud800", {"record_id": "INV-Q7P2K"})])
        return reply(content="340")

    with FakeModelServer(respond) as server:
        a1.makefile(".toml", models=models(server.openai_url if provider == "openai" else server.url, provider))
        result = a1.runpytest(*A1_ARGS)
        assert len(server.requests) == 2
        sent = json.dumps(server.requests[1])
    assert result.parseoutcomes() == {"failed": 1}
    (rec,) = records(a1.path)
    assert not rec["infra_error"] and rec["failure_mode"] == "F1"  # the hallucinated tool: the model's
    assert "\\ufffd" in sent or "\ufffd" in sent


# -- rp48, ep53: Ollama bodies its client's typed model refuses -------------------------------------------------
def ollama_body(content: str = "", calls: list[Any] | None = None, **fields: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in calls]
    return {"model": "tiny", "message": msg, "done": True, **fields}


def test_ollama_durations_past_an_int64_do_not_take_the_models_answer(a1: pytest.Pytester) -> None:
    # before: "unreadable response: prompt_eval_duration: ..." an infrastructure error for a right answer
    def respond(body: Any) -> Any:
        good = reference(body)
        calls = [(n, a) for n, a, *_ in good.tool_calls]
        return raw(ollama_body(good.content or "", calls, prompt_eval_count=11, eval_count=7,
                               prompt_eval_duration=10 ** 30, eval_duration=1e30))

    with FakeModelServer(respond) as server:
        a1.makefile(".toml", models=models(server.url, "ollama") + "pricing = { hourly_usd = 3.0 }\n")
        result = a1.runpytest(*A1_ARGS)
    assert result.parseoutcomes() == {"passed": 1}
    (rec,) = records(a1.path)
    assert rec["usage_invalid"] == ["busy_s"] and rec["cost_usd"] is None


def test_an_ollama_200_that_carries_only_an_error_names_it(a1: pytest.Pytester) -> None:
    # before: "unreadable response: message: Field required" and the server's text was lost
    with FakeModelServer(lambda b: raw({"error": "model runner has unexpectedly stopped"})) as server:
        a1.makefile(".toml", models=models(server.url, "ollama"))
        result = a1.runpytest(*A1_ARGS)
    assert result.parseoutcomes() == {"errors": 1}
    (rec,) = records(a1.path)
    assert rec["infra_error"] and "model runner has unexpectedly stopped" in rec["error"]


# -- ep59-61, rp17: what servers say, read ----------------------------------------------------------------------
@pytest.mark.parametrize("body, words", [
    ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 3900 `inputs` tokens",
     "`max_new_tokens` must be <= 4096"),
    ([{"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens "
                                         "allowed (1048576).", "status": "INVALID_ARGUMENT"}}], "input token count"),
    ({"message": "Invalid request.", "type": "invalid_request_error", "code": "context_length_exceeded"},
     "(context_length_exceeded)"),
], ids=["TGI", "Google", "code only"])
def test_context_overflows_in_other_servers_words(body: Any, words: str) -> None:
    # before: TGI's and Google's wording and an OpenAI error with only its code were a plain HTTP 4xx:
    # an infrastructure error telling the user nothing about the context window
    from pytest_agentfloor.providers.base import is_context_overflow
    from pytest_agentfloor.providers.openai_chat import _body_message

    text = _body_message(body)
    assert text is not None and words in text and is_context_overflow(text)
    assert not is_context_overflow("Invalid request.") and not is_context_overflow("input must be a string")


def test_content_given_as_text_parts_is_read_as_text() -> None:
    # before: a server answering in content-part form made the right answer the model's malformed call (F2)
    from pytest_agentfloor.providers.openai_chat import _text_of

    assert _text_of([{"type": "text", "text": "3"}, {"type": "text", "text": "40"}]) == "340"
    assert _text_of("340") == "340" and _text_of(None) is None
    assert _text_of([{"type": "image_url", "image_url": {}}]) == [{"type": "image_url", "image_url": {}}]
    assert _text_of(340) == 340  # no text: left for the caller to refuse


# -- at16: a device where the judge cache belongs -------------------------------------------------------------
def test_a_judge_cache_on_a_device_is_a_usage_error_not_an_endless_read(a1: pytest.Pytester) -> None:
    # before: reports/judge-cache.jsonl -> /dev/full was read without end until the OOM killer stopped the run
    (a1.path / "reports").mkdir()
    (a1.path / "reports" / "judge-cache.jsonl").symlink_to("/dev/full")
    a1.makefile(".toml", models=models("http://127.0.0.1:9/v1"))
    result = a1.runpytest(*A1_ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*judge-cache.jsonl is a device, pipe or socket, where the session keeps its "
                                 "judge-cache.jsonl*"])


def test_record_readers_refuse_a_device() -> None:
    from pytest_agentfloor.corpus import read_cassette
    from pytest_agentfloor.judge.cache import CacheError, JudgeCache
    from pytest_agentfloor.results import read_records

    assert read_records(Path("/dev/zero")) == ([], ["/dev/zero: not a regular file, not read"])
    assert read_cassette(Path("/dev/zero"))[1] == ["/dev/zero: not a regular file, not read"]
    with pytest.raises(CacheError, match="not a regular file"):
        JudgeCache(Path("/dev/zero")).refresh()


# -- at10: a key the HTTP client cannot send ------------------------------------------------------------------
def test_a_key_with_a_line_break_is_a_usage_error_naming_its_variable(a1: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # before: every request failed in the HTTP client ("Illegal header value"), retried and counted against
    # the endpoint; the probe said "endpoint error" and the variable was never named
    monkeypatch.setenv("AF_NL_KEY", "sk-abcdefgh12345678\r\nX-Injected: 1")
    a1.makefile(".toml", models=models("http://127.0.0.1:9/v1", api_key_env="AF_NL_KEY"))
    result = a1.runpytest(*A1_ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "models.m.api_key_env: environment variable AF_NL_KEY holds a line break" in err
    assert "sk-abcdefgh" not in err + result.stdout.str()


# -- ep64: a llama.cpp parse refusal behind Ollama's API -------------------------------------------------------
def test_a_parse_refusal_is_the_models_malformed_call_under_ollama_too(a1: pytest.Pytester) -> None:
    # before: only Ollama's own wording ("error parsing tool call") was recognised on provider ollama;
    # llama.cpp's "Failed to parse input at pos N" was an endpoint failure, retried and left out of TCR
    with FakeModelServer(lambda b: status(500, "Failed to parse input at pos 0: <tool_call>{bad")) as server:
        a1.makefile(".toml", models=models(server.url, "ollama", retries=3))
        result = a1.runpytest(*A1_ARGS)
        assert len(server.requests) == 1  # not retried
    assert result.parseoutcomes() == {"failed": 1}
    (rec,) = records(a1.path)
    assert not rec["infra_error"] and rec["failure_mode"] == "F2" and "Failed to parse input at pos 0" in rec["error"]
