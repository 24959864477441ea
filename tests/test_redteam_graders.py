"""Red team, issue 27 point 4: every grader is total over any string a model can return.

Property-based (hypothesis) over the five call-site graders (through their boundary,
``grade_call``), the ladder's answer checks and whole-episode grading, and the judge's reply
parser, with the issue's hostile shapes as explicit seeds. A grader either answers with a
verdict (and its reason) or, for its own bug, raises GraderCrashed, which the item turns into
an infrastructure error with the record kept (tests/test_redteam_records.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_agentfloor.callsite.guard import MAX_GRADED_CHARS, GraderCrashed, guarded
from pytest_agentfloor.callsite.kind import grade_call
from pytest_agentfloor.grading import grade
from pytest_agentfloor.grading.obligations import check_answer
from pytest_agentfloor.judge.prompt import UnparseableReply, parse_reply
from pytest_agentfloor.matching import equal, norm, subset
from pytest_agentfloor.suite.loader import load_case, resolve
from pytest_agentfloor.suite.schema import AnswerCheck
from pytest_agentfloor.trajectory import ToolCall, Trajectory, Turn

from .callsite.helpers import case, js

REPO = Path(__file__).resolve().parents[1]

#: the issue's hostile shapes (point 4, 5), each a named seed for every grader
HOSTILE: dict[str, str] = {
    "codegen 1+ x4000": "1+" * 4000 + "1",
    "codegen not x20000": "not " * 20000 + "x",
    "codegen a.b.b chain": "a" + ".b" * 100_000,
    "JSON nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    "JSON object nested 100,000 deep": '[{"a": ' * 50_000 + "1" + "}]" * 50_000,
    "5,000-digit integer": "[" + "7" * 5000 + "]",
    "5,000-digit integer in a call": json.dumps([{"domain": "light", "service": "turn_on",
                                                  "entity_id": "light.kitchen"}])[:-2] + ', "service_data": {"x": '
    + "9" * 5000 + "}}]",
    "400-digit integer (float overflow)": json.dumps([{"domain": "light", "service": "turn_on",
                                                       "entity_id": "light.kitchen",
                                                       "service_data": {"brightness": 0}}]
                                                     ).replace("0}", "9" * 400 + "}"),
    "lone surrogate": '["\ud800"]',
    "lone surrogate text": "turn_on \udfff",
    "NUL and ESC": '\x00\x1b[2J[{"domain": "light"}]',
    "fenced deep": "```json\n" + "[" * 5000 + "\n```",
    "too long": "[" + " " * (MAX_GRADED_CHARS + 10) + "]",
}

CASES = {
    "intent": case("intent", labels=("device_control", "question"), label="device_control",
                   reference="device_control"),
    "action_label": case("action_label", labels=("turn_on", "turn_off"), label="turn_on", reference="turn_on"),
    "actuator": case("actuator", actions=[{"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}]),
    "actuator_refuse": case("actuator", actions=[]),
    "planner": case("planner", plan={"types": ["scheduled"], "topics": ["weather/now"]}),
    "planner_refuse": case("planner", plan={"refuse": True}),
    "codegen": case("codegen", code={"functions": ["process"], "uses": ["agent.publish"]}),
}


def _traj(output: str) -> Trajectory:
    return Trajectory(case_id="t-1", tier="callsite", variant="v0", instance="i0", run=0, model="m", tools=[],
                      turns=[Turn(index=0, content=output)], final_answer=output, termination="final_answer",
                      turn_budget=1, call_limit=0)


def _assert_verdict(name: str, output: str) -> None:
    result = grade_call(CASES[name], _traj(output))
    assert result.verdicts, "a grade without verdicts"
    if not result.passed:
        assert result.first_unmet is not None and result.first_unmet.expected  # the reason is given
        message = result.message(_traj(output))
        message.encode("utf-8")  # the failure line is writable: no lone surrogate survives
        assert "\x1b" not in message and len(message) < 2000


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("output", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_call_site_grader_gives_a_verdict_on_hostile_output(name: str, output: str) -> None:
    _assert_verdict(name, output)


@pytest.mark.parametrize("output", ["1+" * 4000 + "1", "not " * 20000 + "x", "a" + ".b" * 100_000],
                         ids=["1+", "not", "a.b.b"])
def test_code_the_compiler_cannot_read_fails_the_parse_rule(output: str) -> None:
    result = grade_call(CASES["codegen"], _traj(output))
    assert result.first_unmet is not None and result.first_unmet.code == "codegen.parse"
    assert "no parser can read" in result.first_unmet.observed


@pytest.mark.parametrize("output", ["[" * 100_000, '[{"a": ' + "9" * 5000 + "}]"], ids=["deep", "5000 digits"])
@pytest.mark.parametrize("name", ["actuator", "planner"])
def test_json_no_parser_can_read_fails_the_format_rule(name: str, output: str) -> None:
    result = grade_call(CASES[name], _traj(output))
    assert result.first_unmet is not None and result.first_unmet.code == f"{name}.format"


def test_an_output_over_the_bound_is_not_parsed() -> None:
    calls = []

    def spy(c, o):  # noqa: ANN001, ANN202
        calls.append(o)
        raise AssertionError("parsed")

    out = guarded("actuator", spy, CASES["actuator"], "[]" + " " * MAX_GRADED_CHARS)
    assert not calls and out.first_failed.code == "actuator.format"
    assert f"{MAX_GRADED_CHARS:,} characters" in out.first_failed.expected


def test_a_graders_own_bug_is_not_the_models_failure() -> None:
    def buggy(c, o):  # noqa: ANN001, ANN202
        return {}["missing"]

    with pytest.raises(GraderCrashed, match="KeyError"):
        guarded("actuator", buggy, CASES["actuator"], "[]")


def test_the_reference_outputs_still_pass_through_the_guard() -> None:
    good = {"intent": "device_control", "action_label": "turn_on",
            "actuator": js([{"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}]),
            "actuator_refuse": "[]", "planner_refuse": "[]",
            "codegen": "async def process(agent):\n    await agent.publish('t', {})\n"}
    for name, output in good.items():
        assert grade_call(CASES[name], _traj(output)).passed, name


# -- property-based ---------------------------------------------------------------------------
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["domain", "service", "entity_id", "service_data", "type", "name", "schedule",
                         "mqtt_topics", "actions", "publish_topic", "code", "poll_interval", "at", "x"]),
        inner, max_size=5),
    max_leaves=20)
_outputs = st.one_of(
    st.text(max_size=200),
    _json_values.map(json.dumps),
    st.lists(_json_values, max_size=4).map(json.dumps),
    st.text(alphabet="()[]{}:.,+-*/ \nabn0123456789\"'async def await agent", max_size=300),
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(name=st.sampled_from(sorted(CASES)), output=_outputs)
@example(name="codegen", output="1+" * 4000 + "1")
@example(name="codegen", output="not " * 20000 + "x")
@example(name="codegen", output="a" + ".b" * 100_000)
@example(name="actuator", output="[" * 100_000 + "]" * 100_000)
@example(name="planner", output="[" * 100_000 + "]" * 100_000)
@example(name="actuator", output="[" + "7" * 5000 + "]")
@example(name="planner", output='[{"name": ' + "7" * 5000 + "}]")
@example(name="intent", output="\ud800")
def test_call_site_graders_are_total(name: str, output: str) -> None:
    _assert_verdict(name, output)


_CHECKS = [
    AnswerCheck(kind="label", labels=["approve", "reject"], expected="approve"),
    AnswerCheck(kind="contains", values=["PRJ-4471"]),
    AnswerCheck(kind="not_contains", values=["password"]),
    AnswerCheck(kind="json_fields", fields={"total": 12.5, "owner": "ana", "tags": ["a"], "nested": {"k": 1}}),
    AnswerCheck(kind="regex", pattern=r"\bdone\b"),
    AnswerCheck(kind="max_words", expected=30),
    AnswerCheck(kind="number", expected=12.5, tolerance=0.01),
]


@FUZZ
@given(check=st.sampled_from(_CHECKS), text=st.one_of(st.text(max_size=300), _json_values.map(json.dumps)))
@example(check=_CHECKS[3], text='{"total": ' + "9" * 400 + "}")
@example(check=_CHECKS[3], text='{"total": ' + "9" * 5000 + "}")
@example(check=_CHECKS[3], text='{"nested": ' + "[" * 100_000 + "}")
@example(check=_CHECKS[6], text="9" * 5000)
@example(check=_CHECKS[0], text="approve \ud800")
@example(check=_CHECKS[5], text="not " * 20000)
def test_the_ladders_answer_checks_are_total(check: AnswerCheck, text: str) -> None:
    ok, expected, observed = check_answer(check, text)
    assert isinstance(ok, bool) and isinstance(expected, str) and isinstance(observed, str)


def test_matching_is_total_on_integers_no_float_can_hold() -> None:
    huge = int("9" * 400)
    assert not equal(12.5, huge) and not equal(12.5, -huge)
    assert norm([huge, -huge]) == [float("-inf"), float("inf")]
    assert not subset({"amount": 5}, {"amount": huge})


@pytest.fixture(scope="module")
def ladder_case():  # noqa: ANN201
    loaded, digest = load_case(REPO / "cases" / "tier_A" / "A1.toml")  # tools, steps with arguments
    return resolve(loaded, "v0", "i0", digest)


@FUZZ
@given(answer=st.one_of(st.text(max_size=200), _json_values.map(json.dumps)),
       args=_json_values.map(json.dumps))
@example(answer='{"a": ' + "9" * 400 + "}", args='{"record_id": ' + "9" * 400 + "}")
@example(answer="9" * 5000, args='{"id": "INV-Q7P2K", "n": ' + "9" * 400 + "}")
@example(answer="\ud800", args='{"x": "\\ud800"}')
def test_whole_episode_grading_is_total(ladder_case, answer: str, args: str) -> None:  # noqa: ANN001
    try:
        parsed = json.loads(args)
    except ValueError:
        parsed = None
    tool = ladder_case.tools[0]
    call = ToolCall(turn=0, id="c0", name=tool, raw_arguments=args,
                    arguments=parsed if isinstance(parsed, dict) else None,
                    result={"status": "ok"} if isinstance(parsed, dict) else {})
    traj = Trajectory(case_id=ladder_case.id, tier=ladder_case.tier, variant="v0", instance="i0", run=0, model="m",
                      tools=list(ladder_case.tools), turns=[Turn(index=0, calls=[call]), Turn(index=1, content=answer)],
                      final_answer=answer, termination="final_answer", turn_budget=ladder_case.turn_budget,
                      call_limit=ladder_case.call_limit, token_budget=1000)
    result = grade(ladder_case, traj)
    assert result.verdicts
    if not result.passed:
        result.message(traj).encode("utf-8")


@FUZZ
@given(content=st.one_of(st.none(), st.text(max_size=200), _json_values.map(json.dumps),
                         st.fixed_dictionaries({"verdict": st.sampled_from(["pass", "fail", "PASS", 1]),
                                                "reason": st.text(max_size=500)}).map(json.dumps)))
@example(content="{" + '"a":' * 1 + "[" * 100_000 + "}")
@example(content='{"verdict": "pass", "reason": "x", "n": ' + "9" * 5000 + "}")
@example(content='{"verdict": "pass", "reason": "\\ud800 fine"}')
@example(content='{"verdict": "fail", "reason": "' + "x" * 20_000_000 + '"}')
def test_the_judges_parser_is_total(content: str | None) -> None:
    try:
        passed, reason = parse_reply(content)
    except UnparseableReply as exc:
        assert str(exc)
    else:
        assert isinstance(passed, bool) and 0 < len(reason) <= 400
