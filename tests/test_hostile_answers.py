"""Hostile final answers: grading reads any answer text in linear time and never raises
(issue 16: model output never crashes or hangs an item)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentfloor.grading import grade
from pytest_agentfloor.grading.obligations import _json_object
from pytest_agentfloor.suite.loader import load_case, resolve
from pytest_agentfloor.trajectory import Trajectory, Turn

REPO = Path(__file__).resolve().parents[1]

ANSWERS = {
    "fence bomb": "```{" * 100_000,  # quadratic for a backtracking regex: minutes
    "json fence bomb": "```json {" * 50_000 + "}",
    "deep JSON": '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "huge integer JSON": '{"a": ' + "9" * 10_000 + "}",
    "NUL and escapes": '\x00\x1b[2J{"x": 1}\x07',
    "5 MB of digits": "1," * 2_500_000,
    "brace soup": "{" * 200_000 + "}" * 200_000,
}


@pytest.mark.parametrize("text", ANSWERS.values(), ids=ANSWERS.keys())
def test_a_hostile_answer_is_graded_not_crashed(text: str) -> None:
    case, digest = load_case(REPO / "cases" / "tier_A0" / "A04.toml")
    rc = resolve(case, "v0", "i0", digest)
    traj = Trajectory(case_id=rc.id, tier=rc.tier, variant="v0", instance="i0", run=0, model="m", tools=[],
                      turns=[Turn(index=0, content=text)], final_answer=text, termination="final_answer",
                      turn_budget=rc.turn_budget, call_limit=rc.call_limit, token_budget=1000)
    result = grade(rc, traj)
    assert not result.passed and result.first_unmet is not None
    assert "\x1b" not in result.message(traj) and "\x00" not in result.message(traj)


def test_fenced_json_is_still_found() -> None:
    assert _json_object('here:\n```json\n{"a": 1}\n```\nand {"b": 2}') == {"a": 1}
    assert _json_object('```py\nx = 1\n``` then ```json {"c": 3} ```') == {"c": 3}
    assert _json_object('plain {"d": 4} text') == {"d": 4}
    assert _json_object("```{" * 1000) is None


@pytest.mark.parametrize("text", ["<" + " " * 1_000_000, "< /" + " " * 1_000_000 + "x", ("<" + " " * 50) * 20_000])
def test_the_probe_reads_a_hostile_reply_in_linear_time(text: str) -> None:
    from pytest_agentfloor.probe import classify
    from pytest_agentfloor.providers.base import Reply

    result = classify(Reply(content=text))
    assert result.classification == "no_tools" and len(result.detail) < 400


def test_the_probe_still_sees_leaked_call_tags() -> None:
    from pytest_agentfloor.probe import classify
    from pytest_agentfloor.providers.base import Reply

    for text in ("<tool_call>{}</tool_call>", "< / tool_call >", "</tool_call>"):
        assert classify(Reply(content=text)).classification == "text_leaked", text
