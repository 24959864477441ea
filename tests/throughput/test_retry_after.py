"""A 429 (or 503) with Retry-After holds the endpoint for every episode of the process (issue 18).

Assertions are on the fake server's request log: when each request arrived relative to the one
answered 429, never on how long the run took.
"""

from __future__ import annotations

import email.utils
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.providers.base import ProviderError, deadline_in
from pytest_agentfloor.providers.registry import make_provider
from pytest_agentfloor.providers.endpoints import RETRY_AFTER_CAP_S, Endpoint
from tests.fakeserver import FakeModelServer, Status, status
from tests.throughput.test_concurrency import records
from tests.throughput.test_pools import ITEMS, Correct

REPO = Path(__file__).resolve().parents[2]
USER = [{"role": "user", "content": "hi"}]
HOLD_S = 2.0


class RateLimited(Correct):
    """Answers A1 correctly, except request number `nth`, answered 429 with a Retry-After; logs arrivals."""

    def __init__(self, retry_after: Callable[[], str], nth: int = 10, code: int = 429):
        super().__init__(delay_s=0.1)  # 0.1 to 0.5 s: episodes in flight still have requests to make
        self.retry_after, self.nth, self.code = retry_after, nth, code
        self.arrivals: list[float] = []
        self.limited_at: float | None = None
        self.log_lock = threading.Lock()

    def respond(self, body: Any) -> Any:
        with self.log_lock:
            now = time.monotonic()
            self.arrivals.append(now)
            if len(self.arrivals) == self.nth:
                self.limited_at = now
                return status(self.code, "slow down", {"Retry-After": self.retry_after()})
        return super().respond(body)


def http_date(seconds_ahead: float) -> str:
    return email.utils.formatdate(time.time() + seconds_ahead, usegmt=True)


@pytest.mark.parametrize("form", ["seconds", "http-date", "503"])
def test_a_429_holds_every_episode_in_flight(pytester: pytest.Pytester, form: str) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    # an HTTP date has one-second resolution: HOLD_S + 1 ahead is a hold of HOLD_S to HOLD_S + 1
    def value() -> str:  # at the moment of the 429
        return http_date(HOLD_S + 1) if form == "http-date" else f"{HOLD_S:g}"

    with RateLimited(value, code=503 if form == "503" else 429) as srv:
        pytester.path.joinpath("models.toml").write_text(
            f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = "{srv.server.openai_url}"\n'
            "retries = 1\ntimeout_s = 10\n")
        result = pytester.runpytest(*ITEMS, "--model", "fake", "--agentfloor-concurrency", "8", "--no-probe")
    assert result.parseoutcomes().get("passed") == 20  # the limited episode retried after the pause
    assert srv.limited_at is not None
    # Requests already on their way when the 429 went out may arrive just after it; none may
    # arrive later than that until the hold is over (0.5 s is far more than a client needs to read a reply).
    early = [round(t - srv.limited_at, 3) for t in srv.arrivals if srv.limited_at + 0.5 < t < srv.limited_at + HOLD_S]
    assert early == []
    assert sum(t >= srv.limited_at + HOLD_S for t in srv.arrivals) > 10  # the run went on after the hold
    waited = [r["endpoint_wait_s"] for r in records(pytester)]
    # the limited episode and the others in flight with it waited, and said so in their records
    assert sum(w > 0 for w in waited) >= 2, waited
    assert max(waited) <= HOLD_S * 1.1 + 1.5  # a hold, not a pile of them


@pytest.mark.parametrize("wire", ["openai", "ollama"])
def test_the_next_episode_waits_for_the_hold(wire: str) -> None:
    with FakeModelServer() as srv:
        srv.push(status(429, "slow down", {"Retry-After": "1"}))
        url = srv.openai_url if wire == "openai" else srv.url
        provider = make_provider(ModelConfig(name="m", provider=wire, model="tiny", base_url=url, retries=0))
        with pytest.raises(ProviderError):  # this episode got the 429 and has no retries
            provider.complete(USER, [], case=None)
        limited_at = time.monotonic()
        got = provider.complete(USER, [], case=None)  # another episode: waits for the hold first
        answered = time.monotonic()
    assert got.content == "done" and len(srv.received) == 2
    assert answered - limited_at >= 0.9  # the hold, less the time between the 429 and limited_at


def test_a_hold_past_the_deadline_ends_the_episode_without_a_request() -> None:
    with FakeModelServer() as srv:
        srv.push(status(429, "slow down", {"Retry-After": "30"}))
        provider = make_provider(ModelConfig(name="m", provider="openai", model="tiny", base_url=srv.openai_url,
                                             retries=0))
        with pytest.raises(ProviderError):
            provider.complete(USER, [], case=None)
        with deadline_in(1.0), pytest.raises(ProviderError, match="Retry-After.*past the episode's deadline") as info:
            provider.complete(USER, [], case=None)
    assert info.value.out_of_time and len(srv.received) == 1


def test_hold_is_capped_and_extended_never_shortened() -> None:
    now = [1000.0]
    ep = Endpoint("http://x")
    ep.hold(1e6, clock=lambda: now[0])
    assert ep.held_for(lambda: now[0]) == RETRY_AFTER_CAP_S
    ep.hold(5, clock=lambda: now[0])
    assert ep.held_for(lambda: now[0]) == RETRY_AFTER_CAP_S
    slept: list[float] = []
    assert ep.wait_turn(10.0, clock=lambda: now[0], sleep=slept.append) is None and slept == []  # past the deadline
    assert ep.wait_turn(None, clock=lambda: now[0], sleep=slept.append, rand=lambda: 0.0) == RETRY_AFTER_CAP_S


def test_a_429_without_retry_after_holds_nothing() -> None:
    with FakeModelServer() as srv:
        srv.push(Status(429, "slow down"))
        provider = make_provider(ModelConfig(name="m", provider="openai", model="tiny", base_url=srv.openai_url,
                                             retries=0))
        with pytest.raises(ProviderError):
            provider.complete(USER, [], case=None)
        assert provider._shared.held_for() == 0
