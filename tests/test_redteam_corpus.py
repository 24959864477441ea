"""The red-team corpus (tests/redteam_corpus) itself: its shape is checked here, and one scenario runs;
the whole corpus takes most of an hour and runs on demand (`python -m tests.redteam_corpus`, docs/testing.md)."""

from __future__ import annotations

from collections import Counter

from tests.redteam_corpus import harness
from tests.redteam_corpus.scenarios import load_all


def scenarios() -> list[harness.Scenario]:
    load_all()
    return list(harness.SCENARIOS)


def test_the_corpus_covers_every_point_of_issue_27() -> None:
    found = scenarios()
    assert len(found) >= 150
    assert len({s.sid for s in found}) == len(found)
    points = Counter(s.point for s in found)
    assert set(points) >= {str(n) for n in range(1, 15)} | {"hold"}, points
    for s in found:
        assert s.title and s.how and s.right, s.sid


def test_one_scenario_runs_and_judges() -> None:
    (op,) = [s for s in scenarios() if s.sid == "op04"]  # --agentfloor-runs 0: a usage error
    verdict = op.fn()
    assert verdict.right, verdict.observed
    assert "--agentfloor-runs: expected a whole number from 1 to 1000, got 0" in verdict.observed
