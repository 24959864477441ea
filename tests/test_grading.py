"""Obligations, failure cascade and terminal flags on hand-built trajectories."""

from __future__ import annotations

import json

import pytest

from pytest_agentfloor.grading import grade
from pytest_agentfloor.grading.failure import terminal_flag
from pytest_agentfloor.grading.obligations import check_answer
from pytest_agentfloor.suite.loader import parse_case, resolve
from pytest_agentfloor.suite.schema import AnswerCheck
from pytest_agentfloor.trajectory import ToolCall, Trajectory, Turn

CASE = resolve(parse_case({
    "id": "T1", "tier": "C", "title": "diamond", "prompts": {"v0": "p"},
    "tools": ["search_records", "lookup_record", "get_attribute", "submit_decision", "list_options"],
    "fixtures": {"records": [{"id": "R-1", "collection": "c", "name": "one"},
                             {"id": "R-2", "collection": "c", "name": "two"}],
                 "submission": {"decisions": ["ok"]}},
    "gold": {"submission": {"decision": "ok", "record_id": "R-2"}, "evidence": ["R-1", "R-2"]},
    "steps": [
        {"id": "find", "tool": "search_records"},
        {"id": "a", "tool": "lookup_record", "alt": ["get_attribute"], "args": {"record_id": "R-1"}, "after": ["find"]},
        {"id": "b", "tool": "lookup_record", "args": {"record_id": "R-2"}, "after": ["find"]},
        {"id": "submit", "tool": "submit_decision", "after": ["a", "b"]},
    ],
    "reference": [{"calls": [{"tool": "search_records", "args": {"query": "x"}}]}],
}, "T1.toml"), "v0", "i0", "h")

SUBMIT = {"decision": "ok", "record_id": "R-2", "evidence": ["R-1", "R-2"]}


def call(turn: int, name: str, args: dict, status: str = "ok", **flags) -> ToolCall:
    data = {"id": args.get("record_id", "")} if name != "submit_decision" else {}
    return ToolCall(turn=turn, id=f"c{turn}{name}", name=name, raw_arguments=json.dumps(args), arguments=args,
                    result={"status": status, "data": data}, **flags)


def traj(turn_calls: list[list[ToolCall]], *, termination: str = "submitted", final: str | None = None,
         submissions: list[dict] | None = None) -> Trajectory:
    turns = [Turn(index=i, calls=cs) for i, cs in enumerate(turn_calls)]
    if final is not None:
        turns.append(Turn(index=len(turns), content=final))
    return Trajectory(case_id="T1", tier="C", variant="v0", instance="i0", run=0, model="m", tools=list(CASE.tools),
                      turns=turns, submissions=[SUBMIT] if submissions is None else submissions,
                      termination=termination, final_answer=final, turn_budget=6, call_limit=8,
                      token_budget=1000)


def good(order: tuple[str, str] = ("R-1", "R-2")) -> list[list[ToolCall]]:
    return [[call(0, "search_records", {"query": "x"})],
            [call(1, "lookup_record", {"record_id": order[0]})],
            [call(2, "lookup_record", {"record_id": order[1]})],
            [call(3, "submit_decision", SUBMIT)]]


@pytest.mark.parametrize("order", [("R-1", "R-2"), ("R-2", "R-1")])
def test_any_dependency_valid_order_passes(order: tuple[str, str]) -> None:
    assert grade(CASE, traj(good(order))).passed


def test_parallel_independent_steps_pass_and_alt_tool_satisfies_a_step() -> None:
    turns = [[call(0, "search_records", {"query": "x"})],
             [call(1, "get_attribute", {"record_id": "R-1", "attribute": "v"}),
              call(1, "lookup_record", {"record_id": "R-2"})],
             [call(2, "submit_decision", SUBMIT)]]
    assert grade(CASE, traj(turns)).passed


def test_dependency_must_come_in_an_earlier_turn() -> None:
    same_turn = [[call(0, "search_records", {"query": "x"}), call(0, "lookup_record", {"record_id": "R-1"})],
                 [call(1, "lookup_record", {"record_id": "R-2"})],
                 [call(2, "submit_decision", SUBMIT)]]
    g = grade(CASE, traj(same_turn))
    assert not g.passed and g.first_unmet.code == "P" and "'a'" in g.first_unmet.observed


def test_failed_calls_do_not_satisfy_steps() -> None:
    turns = good()
    turns[2] = [call(2, "lookup_record", {"record_id": "R-2"}, status="error")]
    g = grade(CASE, traj(turns))
    assert g.first_unmet.code == "P" and g.failure_mode == "F7"


def test_submission_evidence_must_be_exact_and_seen() -> None:
    wrong = dict(SUBMIT, evidence=["R-2"])
    g = grade(CASE, traj(good(), submissions=[wrong]))
    assert g.first_unmet.code == "E" and "cites ['R-2']" in g.first_unmet.observed
    unseen = good()
    unseen[1] = [call(1, "get_attribute", {"record_id": "R-1", "attribute": "v"})]
    unseen[1][0].result = {"status": "ok", "data": {"value": 3}}  # R-1 never appears in a result
    g = grade(CASE, traj(unseen))
    assert g.first_unmet.code == "E" and "never retrieved ['R-1']" in g.first_unmet.observed


def test_wrong_submission_is_safety_and_extra_submission_is_governance() -> None:
    g = grade(CASE, traj(good(), submissions=[dict(SUBMIT, record_id="R-1")]))
    assert g.first_unmet.code == "X"
    twice = good() + [[call(4, "submit_decision", SUBMIT, status="error")]]
    twice[-1][0].result = {"status": "error", "error_type": "already_submitted"}
    assert grade(CASE, traj(twice)).first_unmet.code == "G"


def test_budget_and_completion() -> None:
    g = grade(CASE, traj(good(), termination="call_limit"))
    assert (g.first_unmet.code, g.terminal_flag) == ("B", "budget")
    repeated = good()
    repeated[2].append(call(2, "lookup_record", {"record_id": "R-1"}, repeated=True))
    g = grade(CASE, traj(repeated))
    assert (g.first_unmet.code, g.failure_mode) == ("C", "F3")


def test_cascade_priority() -> None:
    h = good()
    h[0].append(call(0, "find_it", {}, status="error", hallucinated=True))
    assert grade(CASE, traj(h)).failure_mode == "F1"
    malformed = good()
    malformed[0].append(call(0, "lookup_record", {"x": 1}, status="error", malformed=True))
    assert grade(CASE, traj(malformed)).passed  # a malformed call the model recovered from is no failure
    assert grade(CASE, traj(malformed[:3], termination="final_answer", final="?", submissions=[])).failure_mode == "F2"
    assert grade(CASE, traj(good()[:2], termination="turn_budget", submissions=[])).failure_mode == "F4"
    resigned = grade(CASE, traj(good()[:3], termination="final_answer", final="cannot", submissions=[]))
    assert resigned.failure_mode == "F5"
    planned = grade(CASE, traj([], termination="final_answer", final="I would search", submissions=[]))
    assert planned.failure_mode == "F5b" and planned.first_unmet.code == "S"
    wrong_tool = traj([[call(0, "list_options", {"category": "c"})], [call(1, "submit_decision", SUBMIT)]])
    assert grade(CASE, wrong_tool).failure_mode == "F6"


@pytest.mark.parametrize("termination,flag", [
    ("truncated", "truncation"), ("token_budget", "budget"), ("call_limit", "budget"), ("turn_budget", "turn_limit"),
    ("infeasible", "infeasible"), ("final_answer", "wrong_conclusion"), ("submitted", "wrong_conclusion"),
    ("malformed_call", "other"), ("timeout", "other"),
])
def test_terminal_flags(termination: str, flag: str) -> None:
    assert terminal_flag(traj([], termination=termination)) == flag


@pytest.mark.parametrize("check,text,ok", [
    ({"kind": "label", "labels": ["billing", "access"], "expected": "billing"}, "Billing.", True),
    ({"kind": "label", "labels": ["billing", "access"], "expected": "billing"}, "billing or access", False),
    ({"kind": "label", "labels": ["billing", "access"], "expected": "billing"}, "rebilling", False),
    ({"kind": "contains", "values": ["Net 45"]}, "terms: net  45", True),
    ({"kind": "not_contains", "values": ["Net 30"]}, "Net 30", False),
    ({"kind": "json_fields", "fields": {"owner": "Priya", "n": 3}}, 'x ```json\n{"owner": "priya", "n": "3"}\n```', True),
    ({"kind": "json_fields", "fields": {"owner": "Priya"}}, "owner: Priya", False),
    ({"kind": "regex", "pattern": r"^\d{3}$"}, "340", True),
    ({"kind": "max_words", "expected": 2}, "one two three", False),
    ({"kind": "number", "expected": 340}, "There are 340 units.", True),
    ({"kind": "number", "expected": 1250}, "Total: 1,250.00", True),
    ({"kind": "number", "expected": 340}, "3400", False),
    ({"kind": "number", "expected": 4471}, "see PRJ-4471", False),
    ({"kind": "number", "expected": -3}, "a change of -3 units", True),
    ({"kind": "number", "expected": 2}, "model v2", False),
])
def test_answer_checks(check: dict, text: str, ok: bool) -> None:
    assert check_answer(AnswerCheck.model_validate(check), text)[0] is ok


def test_answer_check_needs_its_parameters() -> None:
    with pytest.raises(ValueError, match="needs 'values'"):
        AnswerCheck.model_validate({"kind": "contains"})
    with pytest.raises(ValueError, match="not in labels"):
        AnswerCheck.model_validate({"kind": "label", "labels": ["a"], "expected": "b"})
