"""Servers that misbehave (issue 16 items 2, 3, 4, 6): garbage bodies, credentials in URLs,
trickled replies, Retry-After. Both providers, over real HTTP to the loopback fake server."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_agentfloor.config import ModelConfig, redact_text, redact_url
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.providers import base
from pytest_agentfloor.providers.base import ProviderError, backoff_delay, parse_retry_after
from pytest_agentfloor.providers.ollama_chat import OllamaProvider
from pytest_agentfloor.providers.openai_chat import OpenAIProvider
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, raw, reply, stall, status, trickle
from tests.readback import readable

REPO = Path(__file__).resolve().parents[2]
B1 = REPO / "cases" / "tier_B" / "B1.toml"
PASSWORD = "PASS-w0rd-n0t-f0r-y0ur-eyes"
USER = [{"role": "user", "content": "Find record X."}]
DEEP = 100_000


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff sleeps recorded instead of slept (only the delays are under test)."""
    delays: list[float] = []
    monkeypatch.setattr(time, "sleep", delays.append)
    return delays


@pytest.fixture(scope="module")
def case_b1():
    case, digest = load_case(B1)
    return resolve(case, "v0", "i0", digest)


def make(wire: str, server: FakeModelServer, **kw: Any):
    if wire == "openai":
        fields: dict[str, Any] = {"name": "m", "provider": "openai", "model": "tiny", "base_url": server.openai_url}
        cls: Any = OpenAIProvider
    else:
        fields = {"name": "m", "provider": "ollama", "model": "tiny", "base_url": server.url}
        cls = OllamaProvider
    return cls(ModelConfig(**{**fields, "retries": 0, "timeout_s": 5.0, **kw}))


WIRES = ["openai", "ollama"]


# -- item 2: a 200 whose body is empty, garbage or absurd ------------------------------------------
@pytest.mark.parametrize("body", [
    pytest.param(b"", id="empty"),
    pytest.param(b"<html>502 Bad Gateway</html>", id="html"),
    pytest.param(b"{\"choices\": [", id="torn-json"),
    pytest.param(b"[1, 2, 3]", id="array"),
    pytest.param(b"null", id="null"),
    pytest.param(b"{\"choices\": \"none\", \"message\": 7}", id="wrong-shapes"),
    pytest.param(b"[" * DEEP + b"]" * DEEP, id="nested-array"),
    pytest.param(b"{\"a\":" * DEEP + b"1" + b"}" * DEEP, id="nested-object"),
])
@pytest.mark.parametrize("wire", WIRES)
def test_unreadable_200_is_a_short_infrastructure_error(server: FakeModelServer, case_b1, wire: str,
                                                        body: bytes) -> None:
    server.responder = lambda _: raw(body)
    traj = run_episode(case_b1, make(wire, server), model="m")
    assert traj.termination in ("provider_error", "malformed_call"), traj.error
    assert traj.error and len(traj.error) < 400 and "Traceback" not in traj.error
    assert "127.0.0.1" in traj.error


@pytest.mark.parametrize("wire", WIRES)
def test_nested_tool_arguments_in_a_reply_do_not_escape(server: FakeModelServer, case_b1, wire: str) -> None:
    deep = "[" * DEEP + "]" * DEEP
    if wire == "openai":
        server.responder = lambda _: reply(tool_calls=[("lookup_record", deep)])
    else:  # Ollama carries arguments as an object: a body nested past any parser's limit
        server.responder = lambda _: raw('{"model":"m","message":{"role":"assistant","content":"",'
                                         '"tool_calls":[{"function":{"name":"lookup_record","arguments":'
                                         + '{"a":' * DEEP + "1" + "}" * DEEP + "}}]},\"done\":true}")
    traj = run_episode(case_b1, make(wire, server), model="m")  # returns: nothing escapes
    if wire == "openai":  # the call reaches the episode, which refuses to read it: an error result, no crash
        assert traj.calls and all(c.result.get("status") == "error" for c in traj.calls)
    else:  # the body is unreadable only because of the model's arguments: the model's malformed call
        assert traj.termination == "malformed_call" and "nested too deep" in traj.error


def test_empty_body_through_the_plugin_leaves_a_record_and_no_traceback(pytester: pytest.Pytester,
                                                                       server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    url = server.openai_url.replace("http://", f"http://agent:{PASSWORD}@")
    pytester.makefile(".toml", models=f"""
        [models.fake]
        provider = "openai"
        model = "tiny"
        base_url = "{url}"
        timeout_s = 5
        retries = 1
    """)
    server.responder = lambda _: raw(b"")
    result = pytester.runpytest("cases/tier_B/B1.toml", "--model", "fake", "--variants", "v0", "--instances",
                                "i0", "--no-probe", "--junitxml=out.xml", "-rA")
    result.assert_outcomes(errors=1)
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "JSONDecodeError" not in out.split("unreadable response")[0]
    assert len(out.splitlines()) < 80  # one short message, not a page of traceback
    result.stdout.fnmatch_lines(["*infrastructure error (openai): http://127.0.0.1:*/v1: unreadable response*"])
    (rec,) = [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert rec["infra_error"] and rec["termination"] == "provider_error"
    # item 3: the password is nowhere a user or a tool could read it
    stored = [p for p in pytester.path.rglob("*") if p.is_file() and p.name != "models.toml"]
    assert stored and not [p for p in stored if PASSWORD in readable(p)]
    assert PASSWORD not in out


# -- item 3: credentials in URLs ----------------------------------------------------------------
def test_redact_url_and_text() -> None:
    assert redact_url(f"http://user:{PASSWORD}@host:8000/v1?key=abc#x") == "http://host:8000/v1"
    assert redact_url("https://token@api.example/v1") == "https://api.example/v1"
    assert redact_url("http://[::1]:11434") == "http://[::1]:11434"
    assert PASSWORD not in redact_url(f"http://u:{PASSWORD}@[bad")
    text = f"connect to http://u:{PASSWORD}@h/v1 failed; see https://docs.example/x@y"
    assert redact_text(text) == "connect to http://***@h/v1 failed; see https://docs.example/x@y"
    err = ProviderError(f"http://u:{PASSWORD}@h/v1", f"echo http://u:{PASSWORD}@h/v1", transient=False)
    assert PASSWORD not in str(err) and PASSWORD not in repr(err)


@pytest.mark.parametrize("wire", WIRES)
def test_credentials_in_base_url_never_in_errors(server: FakeModelServer, case_b1, wire: str) -> None:
    server.responder = lambda _: status(500, "boom")
    url = (server.openai_url if wire == "openai" else server.url).replace("http://", f"http://u:{PASSWORD}@")
    traj = run_episode(case_b1, make(wire, server, base_url=url, retries=1), model="m")
    assert traj.termination == "provider_error"
    assert PASSWORD not in json.dumps(traj.model_dump(mode="json"))


# -- item 4: hard wall-clock bounds -----------------------------------------------------------------
@pytest.mark.parametrize("wire", WIRES)
def test_a_trickling_server_cannot_outlive_the_request_timeout(server: FakeModelServer, case_b1,
                                                               wire: str, sleeps: list[float]) -> None:
    # two bytes every 0.3 s: every socket read succeeds, the whole body would take about a minute
    server.responder = lambda _: trickle(0.3, 2, reply(content="x" * 200))
    traj = run_episode(case_b1, make(wire, server, timeout_s=1.0, retries=1), model="m")
    assert traj.termination == "provider_error"
    assert "timed out after 1s" in traj.error and "after 2 attempts" in traj.error
    assert len(server.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
def test_the_episode_timeout_bounds_a_request_in_flight(server: FakeModelServer, case_b1, wire: str) -> None:
    server.responder = lambda _: trickle(0.3, 2, reply(content="x" * 200))
    traj = run_episode(case_b1, make(wire, server, timeout_s=30.0, retries=3), model="m", timeout_s=1.0)
    assert traj.termination == "timeout"
    assert traj.error.startswith("episode exceeded 1s")
    # the request got what was left of the episode's second (less, on a loaded machine)
    assert re.search(r"timed out after (0\.\d|1)s", traj.error), traj.error
    assert len(server.requests) == 1  # no retry is started after the episode's deadline


@pytest.mark.parametrize("wire", WIRES)
def test_an_expired_request_does_not_break_the_others_in_flight(server: FakeModelServer, wire: str) -> None:
    """Under concurrency one provider serves many episodes at once: the request that outlives its
    bound abandons the client, but a request already in flight on it must still get its reply."""
    import threading

    answered = threading.Event()
    order = iter([trickle(0.3, 2, reply(content="x" * 200)), stall(0.9, reply(content="late but whole"))])
    server.responder = lambda _: next(order, reply(content="later"))
    provider = make(wire, server, timeout_s=1.2)
    outcome: dict[str, Any] = {}

    def slow() -> None:
        try:
            outcome["slow"] = provider.complete(USER, [])
        except ProviderError as exc:
            outcome["slow"] = exc
        answered.set()

    first = threading.Thread(target=lambda: outcome.setdefault("first", _attempt(provider)))
    first.start()
    while len(server.requests) < 1:  # the trickled request is in flight
        time.sleep(0.01)
    time.sleep(0.6)  # the second request starts late enough to be in flight when the first expires
    second = threading.Thread(target=slow)
    second.start()
    first.join(10)
    answered.wait(10)
    second.join(10)
    assert isinstance(outcome["first"], ProviderError) and "timed out" in str(outcome["first"])
    # the second request was on the abandoned client when the first expired, and still completed
    assert not isinstance(outcome["slow"], Exception), outcome["slow"]
    assert outcome["slow"].content == "late but whole"
    assert provider.complete(USER, []).content == "later"  # the fresh client serves what comes next
    provider.close()


def _attempt(provider: Any) -> Any:
    try:
        return provider.complete(USER, [])
    except ProviderError as exc:
        return exc


def test_call_within_returns_raises_and_expires() -> None:
    assert base.call_within(lambda: 42, 1.0) == 42
    with pytest.raises(KeyError):
        base.call_within(lambda: {}["x"], 1.0)
    expired: list[bool] = []
    import threading

    gate = threading.Event()
    with pytest.raises(base.RequestExpired):
        base.call_within(gate.wait, 0.05, on_expire=lambda: expired.append(True))
    gate.set()
    assert expired == [True]


def test_deadline_scope() -> None:
    assert base.time_left() is None
    with base.deadline_in(100):
        left = base.time_left()
        assert left is not None and 0 < left <= 100
        assert base.request_bound(5) == 5
        with base.deadline_in(0):
            assert base.time_left() == 0 and base.request_bound(5) == 0
    assert base.time_left() is None


# -- item 6: Retry-After and jitter -------------------------------------------------------------------
def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"},
                             now=lambda: 1445412480.0) == 10.0  # 07:28:00 GMT that day, worked by hand
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=lambda: 2e9) == 0.0
    for bad in ("soon", "-3", "", "nan"):
        assert parse_retry_after({"Retry-After": bad}) is None
    assert parse_retry_after(None) is None


def test_backoff_delay_bounds() -> None:
    assert backoff_delay(0, None, rand=lambda: 0.0) == 0.25  # 0.5 x 2^0 x 0.5
    assert backoff_delay(2, None, rand=lambda: 1.0) == 2.0  # 0.5 x 2^2 x 1.0
    assert backoff_delay(0, 10.0, rand=lambda: 0.0) == 10.0  # Retry-After is a floor
    assert backoff_delay(0, 10.0, rand=lambda: 1.0) == pytest.approx(11.0)  # plus up to 10 % jitter
    assert backoff_delay(0, 1e6, rand=lambda: 0.0) == base.RETRY_AFTER_CAP_S
    assert len({backoff_delay(1, 2.0) for _ in range(20)}) > 1  # jittered: not one fixed delay


@pytest.mark.parametrize("wire", WIRES)
def test_retry_after_is_honoured(server: FakeModelServer, wire: str, sleeps: list[float]) -> None:
    server.push(status(429, "slow down", {"Retry-After": "3"}), status(503, "busy", {"Retry-After": "1"}))
    got = make(wire, server, retries=2).complete(USER, [], case=None)
    assert got.content == "done" and len(server.requests) == 3
    assert len(sleeps) == 2
    assert 3.0 <= sleeps[0] <= 3.3 and 1.0 <= sleeps[1] <= 1.1


@pytest.mark.parametrize("wire", WIRES)
def test_retry_after_beyond_the_cap_is_not_waited_for(server: FakeModelServer, wire: str,
                                                      sleeps: list[float]) -> None:
    server.push(status(429, "quota", {"Retry-After": "86400"}))
    with pytest.raises(ProviderError, match=r"Retry-After 86400s is over the 60s cap") as info:
        make(wire, server, retries=3).complete(USER, [], case=None)
    assert sleeps == [] and len(server.requests) == 1 and info.value.transient


def test_a_model_configuration_never_shows_its_password() -> None:
    cfg = ModelConfig(name="m", provider="openai", model="x", base_url=f"http://u:{PASSWORD}@h:1/v1")
    for text in (repr(cfg), str(cfg), json.dumps(cfg.public()), f"{cfg!r:>10}"):
        assert PASSWORD not in text
    assert cfg.base_url.endswith("@h:1/v1")  # the real value stays usable by the client


@pytest.mark.parametrize("provider, suffix", [("openai", "/v1"), ("ollama", "")])
def test_trickle_through_the_plugin_is_bounded_by_the_episode_timeout(pytester: pytest.Pytester,
                                                                      server: FakeModelServer,
                                                                      provider: str, suffix: str) -> None:
    """Issue 16's case: a reply trickled a few bytes at a time with both limits set; the episode ends
    as a timeout with its record, not as a hang (issue 27: an infrastructure error, not a graded failure)."""
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    pytester.makefile(".toml", models=f"""
        [models.slow]
        provider = "{provider}"
        model = "tiny"
        base_url = "{server.url}{suffix}"
        timeout_s = 1
        retries = 5
    """)
    server.responder = lambda _: trickle(0.3, 2, reply(content="x" * 200))
    result = pytester.runpytest("cases/tier_B/B1.toml", "--model", "slow", "--variants", "v0", "--instances",
                                "i0", "--no-probe", "--episode-timeout", "1.5")
    result.assert_outcomes(errors=1)
    (rec,) = [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert rec["termination"] == "timeout" and rec["error"].startswith("episode exceeded 1.5s")
    assert rec["infra_error"] and rec["failure_mode"] is None
    assert len(server.requests) <= 2  # one 1 s attempt, at most one retry cut by the episode's deadline
