"""Fuzz (issue 16): random and adversarial tool calls and server bodies through BOTH providers over
real HTTP. Whatever the server sends, no exception escapes the episode, grading or the record,
and every episode leaves exactly one whole record line.

`test_fuzz_quick` runs a fixed number of seeded episodes in every run; `test_fuzz_bounded` (slow)
keeps going for AGENTFLOOR_FUZZ_SECONDS with a fresh seed, printed on failure: 15 s by default, so
the default test run stays short; .ci/run sets 60 (issue 16: "a bounded time, e.g. 60 s in CI").
"""

from __future__ import annotations

import json
import os
import random
import string
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.grading import grade
from pytest_agentfloor.providers.ollama_chat import OllamaProvider
from pytest_agentfloor.providers.openai_chat import OpenAIProvider
from pytest_agentfloor.results import RunLog, build_record
from pytest_agentfloor.suite.loader import load_case, resolve
from pytest_agentfloor.suite.schema import TOOL_NAMES
from tests.fakeserver import FakeModelServer, drop, raw, reply, stall, status, trickle

REPO = Path(__file__).resolve().parents[2]
CASES = ["tier_A/A1.toml", "tier_A/A3.toml", "tier_B/B4.toml", "tier_D/D1.toml", "tier_E/E1.toml"]

# strings a model or a server might send to break a harness: control and escape sequences, huge,
# unicode edge cases, paths and code that must never be opened or run
NASTY_STRINGS = [
    "", " ", "\x00", "\x1b[2J\x1b]0;pwned\x07", "\u202e\u2066", "\ud800"[:0] + "\U0001f600" * 50, "../../etc/passwd",
    "__import__('os').system('echo pwned')", "{{7*7}}", "%s%n%x", "A" * 20_000, "null", "NaN", "-0", "1e308",
]
HOSTILE_JSON_TEXT = [
    "", "{", "}", "[", "null", "true", "\"str\"", "[1,2,3]", "{\"a\":", "{'single': 'quotes'}", "NaN",
    "{\"x\": NaN}", "{\"x\": Infinity}", "{\"x\": -Infinity}", "{\"x\": 1e999}", "{\"x\": " + "9" * 5000 + "}",
    "[" * 50_000 + "]" * 50_000, "{\"a\":" * 50_000 + "1" + "}" * 50_000, "\x00\x01\x02", "{\"k\": \"\\ud800\"}",
]


def random_scalar(rng: random.Random) -> Any:
    return rng.choice([
        None, True, False, 0, -1, 2**63, -(2**63) - 1, 1e308, -1e308, 5e-324, 0.1, 10**40,
        rng.randint(-10**6, 10**6), rng.random() * 1e6, rng.choice(NASTY_STRINGS),
        "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 40))),
        f"CUS-{rng.randint(0, 9999)}", f"RM-{rng.randint(0, 99)}",
    ])


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth > 4 or kind < 0.5:
        return random_scalar(rng)
    if kind < 0.75:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["record_id", "query", "operation", "operands", "attribute", "constraint", "decision",
                        "evidence", "x", "", "\x1b[31m"]): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 4))}


HOSTILE_NUMBERS_TEXT = ["1e308", "-1e308", "1e999", "NaN", "Infinity", "-0.0", "5e-324", "9" * 5000,
                        "123456789012345678901234567890"]


def schema_shaped_call(rng: random.Random, wire: str) -> tuple[str, Any]:
    """A call the sandbox will actually execute, with hostile values where its schema wants numbers or ids."""
    tool = rng.choice(["compute_value", "compute_value", "lookup_record", "search_records", "get_attribute"])
    if tool == "compute_value":
        op = rng.choice(["sum", "difference", "product", "ratio", "mean", "min", "max", "percent_change"])
        if wire == "openai":
            nums = ",".join(rng.choice(HOSTILE_NUMBERS_TEXT) for _ in range(rng.randint(0, 4)))
            return tool, f'{{"operation": "{op}", "operands": [{nums}]}}'
        return tool, {"operation": op, "operands": [rng.choice([1e308, -1e308, 5e-324, 0.0, 2**63, 10**40])
                                                    for _ in range(rng.randint(0, 4))]}
    key = {"lookup_record": "record_id", "search_records": "query", "get_attribute": "record_id"}[tool]
    args = {key: random_scalar(rng)}
    if tool == "get_attribute":
        args["attribute"] = random_scalar(rng)
    return tool, args


def random_call(rng: random.Random, wire: str) -> tuple[str, Any]:
    if rng.random() < 0.3:
        return schema_shaped_call(rng, wire)
    name = rng.choice([*TOOL_NAMES, *TOOL_NAMES, "rm_rf", "", "\x1b[2Jlookup_record", "lookup_record" * 100,
                       "os.system", "../lookup_record"])
    if rng.random() < 0.4:
        args: Any = rng.choice(HOSTILE_JSON_TEXT)
        if wire == "ollama":  # Ollama carries objects; a string here is itself a malformed payload
            return name, args
        return name, args
    obj = random_json(rng)
    if not isinstance(obj, dict) and rng.random() < 0.7:
        obj = {"record_id": obj}
    return name, obj


def json_or_text(obj: Any) -> str:
    try:
        return json.dumps(obj)
    except (ValueError, RecursionError):
        return str(obj)[:1000]


def random_raw_body(rng: random.Random, wire: str) -> Any:
    ok_openai = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "hi"}}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    ok_ollama = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": True,
                 "message": {"role": "assistant", "content": "hi"}}
    base = ok_openai if wire == "openai" else ok_ollama
    text = json.dumps(base)
    pick = rng.randrange(10)
    if pick == 0:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
    if pick == 1:
        return text[: rng.randint(0, len(text))]
    if pick == 2:
        return rng.choice(HOSTILE_JSON_TEXT)
    if pick == 3:  # a known field replaced by anything
        mutated = json.loads(text)
        target = mutated["choices"][0] if wire == "openai" else mutated
        key = rng.choice(list(target) + ["message", "usage", "tool_calls"])
        target[key] = random_json(rng)
        return json_or_text(mutated)
    if pick == 4:  # the message's fields replaced by anything
        mutated = json.loads(text)
        msg = mutated["choices"][0]["message"] if wire == "openai" else mutated["message"]
        msg[rng.choice(["content", "tool_calls", "role"])] = random_json(rng)
        return json_or_text(mutated)
    if pick == 5:  # usage figures of every wrong kind
        mutated = json.loads(text)
        if wire == "openai":
            mutated["usage"] = {"prompt_tokens": random_scalar(rng), "completion_tokens": random_scalar(rng)}
        else:
            mutated["prompt_eval_count"] = random_scalar(rng)
            mutated["eval_count"] = random_scalar(rng)
        return json_or_text(mutated)
    return json_or_text(random_json(rng))


def random_action(rng: random.Random, wire: str) -> Any:
    pick = rng.random()
    if pick < 0.6:
        calls = [random_call(rng, wire) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        return reply(content=rng.choice([None, "", rng.choice(NASTY_STRINGS)]), tool_calls=calls,
                     finish_reason=rng.choice([None, None, "length", "stop", "tool_calls", "weird"]),
                     tokens_in=rng.choice([None, 0, 11, 500, 4096, 10**9]), tokens_out=rng.choice([None, 7, 0]))
    if pick < 0.66:
        return reply(content=rng.choice(NASTY_STRINGS))
    if pick < 0.84:
        return raw(random_raw_body(rng, wire), code=rng.choice([200, 200, 200, 201, 204]),
                   content_type=rng.choice(["application/json", "text/html", "application/octet-stream"]))
    if pick < 0.93:
        headers = rng.choice([{}, {"Retry-After": str(rng.randint(0, 5))}, {"Retry-After": "garbage"},
                              {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, {"retry-after-ms": "-5"},
                              {"Retry-After": "99999"}])
        return status(rng.choice([400, 401, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 599]),
                      rng.choice([None, rng.choice(NASTY_STRINGS), "context length exceeded",
                                  "error parsing tool call"]), headers)
    if pick < 0.97:
        return drop()
    if pick < 0.99:
        return stall(0.3)
    return trickle(0.2, 4)


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeModelServer]]:
    monkeypatch.setattr(time, "sleep", lambda s: None)  # backoff: only the number of attempts matters here
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    with FakeModelServer() as a, FakeModelServer() as b:
        yield {"openai": a, "ollama": b}


@pytest.fixture(scope="module")
def cases():
    out = []
    for rel in CASES:
        case, digest = load_case(REPO / "cases" / rel)
        out.append(resolve(case, "v0", "i0", digest))
    return out


def fuzz(servers: dict[str, FakeModelServer], cases: list, tmp_path: Path, seed: int,
         keep_going: Callable[[int], bool]) -> int:
    rng = random.Random(seed)
    lock = threading.Lock()

    def responder_for(wire: str) -> Callable[[Any], Any]:
        def respond(body: Any) -> Any:
            with lock:
                return random_action(rng, wire)
        return respond

    for wire, srv in servers.items():
        srv.responder = responder_for(wire)
    log = RunLog(tmp_path / "runs.jsonl")
    n = 0
    while keep_going(n):
        with lock:
            wire = rng.choice(["openai", "ollama"])
            case = rng.choice(cases)
            retries = rng.choice([0, 1, 2])
            window = rng.choice([None, 2048, 8192])
        srv = servers[wire]
        fields: dict[str, Any] = {"name": f"fuzz-{wire}", "provider": wire, "model": "m", "retries": retries,
                                  "timeout_s": 0.5, "context_window": window,
                                  "base_url": srv.openai_url if wire == "openai" else srv.url}
        config = ModelConfig(**fields)
        provider = OpenAIProvider(config) if wire == "openai" else OllamaProvider(config)
        try:
            traj = run_episode(case, provider, model=config.name, run=n, timeout_s=2.0)
            result = None
            if traj.termination not in ("provider_error", "context_limit"):
                result = grade(case, traj)
            log.append(build_record(case, traj, result, config, f"fuzz::{n}"))
        except BaseException as exc:  # noqa: BLE001 - the point of the test
            raise AssertionError(f"seed {seed}, episode {n} ({wire}, {case.id}): {type(exc).__name__} escaped: "
                                 f"{str(exc)[:300]}") from exc
        finally:
            provider.close()
        n += 1
    log.close()
    lines = (tmp_path / "runs.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == n, f"seed {seed}: {n} episodes but {len(lines)} records"
    ends: dict[str, int] = {}
    for line in lines:
        rec = json.loads(line)
        assert isinstance(rec, dict)
        ends[rec["termination"]] = ends.get(rec["termination"], 0) + 1
    print(f"fuzz seed {seed}: {n} episodes, terminations {sorted(ends.items())}")
    for srv in servers.values():
        assert srv.errors == []
    return n


def test_fuzz_quick(servers: dict[str, FakeModelServer], cases: list, tmp_path: Path) -> None:
    n = fuzz(servers, cases, tmp_path, seed=20261130, keep_going=lambda i: i < 120)
    assert n == 120


def _sandbox_survives_overflow() -> bool:
    """Whether the sandbox answers an overflowing compute_value with an error envelope (issue 16 item 1)."""
    from pytest_agentfloor.sandbox import Sandbox

    case, digest = load_case(REPO / "cases" / "tier_A" / "A3.toml")
    rc = resolve(case, "v0", "i0", digest)
    try:
        Sandbox(rc.fixtures, rc.tools).call("compute_value", {"operation": "sum", "operands": [1e308, 1e308]})
    except Exception:
        return False
    return True


@pytest.mark.slow
@pytest.mark.xfail(not _sandbox_survives_overflow(), strict=False,
                   reason="the sandbox still raises on overflowing numbers (issue 16 item 1, fixed separately); "
                          "the fuzz finds it")
def test_fuzz_bounded(servers: dict[str, FakeModelServer], cases: list, tmp_path: Path) -> None:
    seconds = float(os.environ.get("AGENTFLOOR_FUZZ_SECONDS", "15"))
    seed = random.SystemRandom().randrange(2**32)
    end = time.monotonic() + seconds
    n = fuzz(servers, cases, tmp_path, seed=seed, keep_going=lambda i: time.monotonic() < end)
    print(f"fuzz: {n} episodes in {seconds:g}s, seed {seed}")
