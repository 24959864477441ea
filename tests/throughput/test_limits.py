"""Per-endpoint limits (issue 18): `max_connections` caps requests in flight for all episodes of a
process, `rpm` spaces their starts; neither is part of a run's condition (resume keys)."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.corpus import config_fingerprint
from pytest_agentfloor.providers.base import Reply
from pytest_agentfloor.providers.limits import LimitedProvider, limited
from tests.throughput.test_concurrency import A1, A1Server

REPO = Path(__file__).resolve().parents[2]


class _Counting:
    def __init__(self) -> None:
        self.config = ModelConfig(name="m", provider="scripted", policy="oracle")
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def complete(self, messages, tools, *, case=None) -> Reply:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(0.02)
        with self.lock:
            self.now -= 1
        return Reply(content="ok")

    def close(self) -> None:
        pass


def test_max_connections_caps_requests_in_flight_across_threads() -> None:
    inner = _Counting()
    prov = LimitedProvider(inner, max_connections=3, rpm=None)
    threads = [threading.Thread(target=prov.complete, args=([], [])) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 1 <= inner.peak <= 3


def test_rpm_spaces_request_starts_on_a_fake_clock() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)

    prov = LimitedProvider(_Counting(), max_connections=None, rpm=120, clock=lambda: now[0], sleep=sleep)
    for _ in range(4):
        prov.complete([], [])
    # 120 per minute = one start every 0.5 s; the clock stands still, so the waits are 0.5, 1.0, 1.5
    assert slept == [0.5, 1.0, 1.5]


def test_no_limits_no_wrapper() -> None:
    inner = _Counting()
    assert limited(inner, inner.config) is inner


def test_limits_do_not_change_the_resume_fingerprint() -> None:
    plain = ModelConfig(name="m", provider="openai", model="x", base_url="http://127.0.0.1:1/v1")
    capped = plain.model_copy(update={"max_connections": 4, "rpm": 600})
    assert config_fingerprint(capped.public()) == config_fingerprint(plain.public())
    assert capped.public()["max_connections"] == 4  # still shown in records


def test_max_connections_from_models_toml_holds_under_concurrency(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    with A1Server() as srv:
        pytester.path.joinpath("models.toml").write_text(
            f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = "{srv.server.openai_url}"\n'
            "retries = 0\ntimeout_s = 10\nmax_connections = 2\n")
        result = pytester.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "8")
    assert result.parseoutcomes().get("passed", 0) > 0
    assert 1 <= srv.peak <= 2  # eight episodes in flight, never more than two requests
