"""The plugin's default hook implementations: the nine obligations and the F-cascade."""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from ..suite.schema import ResolvedCase
from ..trajectory import Trajectory
from .failure import failure_mode
from .obligations import CHECKS, Verdict, check


@pytest.hookimpl(trylast=True)
def pytest_agentfloor_check_obligation(code: str, case: ResolvedCase, trajectory: Trajectory,
                                       judgments: Mapping[str, Any] | None) -> Verdict | None:
    return check(code, case, trajectory, judgments) if code in CHECKS else None


@pytest.hookimpl(trylast=True)
def pytest_agentfloor_failure_mode(case: ResolvedCase, trajectory: Trajectory, verdicts: list[Verdict]) -> str:
    return failure_mode(case, trajectory, verdicts)
