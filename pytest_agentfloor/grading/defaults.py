"""The plugin's default hook implementations: the nine obligations and the F-cascade."""

from __future__ import annotations

import pytest

from ..suite.schema import ResolvedCase
from ..trajectory import Trajectory
from .failure import failure_mode
from .obligations import CHECKS, Verdict


@pytest.hookimpl(trylast=True)
def pytest_agentfloor_check_obligation(code: str, case: ResolvedCase, trajectory: Trajectory) -> Verdict | None:
    check = CHECKS.get(code)
    return check(case, trajectory) if check else None


@pytest.hookimpl(trylast=True)
def pytest_agentfloor_failure_mode(case: ResolvedCase, trajectory: Trajectory, verdicts: list[Verdict]) -> str:
    return failure_mode(case, trajectory, verdicts)
