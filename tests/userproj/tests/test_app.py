"""Ordinary tests of the user's project: passes, a failure, a skip, an xfail, parameters."""

from pathlib import Path

import pytest


def test_limits_are_read() -> None:
    text = (Path(__file__).parents[1] / "config" / "tier_free" / "limits.toml").read_text()
    assert "max_requests = 10" in text


@pytest.mark.parametrize("n", [1, 2, 3])
def test_runs_option(runs: int, n: int) -> None:
    assert runs * n >= n


def test_baseline_option(request: pytest.FixtureRequest) -> None:
    assert request.config.getoption("--baseline") == "none"


def test_a_real_failure() -> None:
    assert 1 + 1 == 3


@pytest.mark.skip(reason="not today")
def test_skipped() -> None:
    pass


@pytest.mark.xfail(reason="known bug")
def test_known_bug() -> None:
    assert False


@pytest.mark.slowish
def test_marked() -> None:
    pass
