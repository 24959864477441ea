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
    g = grade(CASE, traj(repeated))  # ended by a submission, not a resignation: the residual
    assert (g.first_unmet.code, g.failure_mode, g.terminal_flag) == ("C", "F3", "other")


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


# -- the cascade table: constructed trajectories and the label seed 000 (and, where the paper is
# silent, the authors' harness/metrics.py) gives them -----------------------------------------------
ANSWER = resolve(parse_case({
    "id": "T2", "tier": "B", "title": "chain answered in text", "prompts": {"v0": "p"},
    "tools": ["search_records", "lookup_record", "list_options"],
    "fixtures": {"records": [{"id": "CUS-1", "collection": "c", "name": "one", "fields": {"terms": "Net 45"}}]},
    "gold": {"answer": [{"kind": "contains", "values": ["Net 45"]}]},
    "steps": [{"id": "find", "tool": "search_records"},
              {"id": "read", "tool": "lookup_record", "args": {"record_id": "CUS-1"}, "after": ["find"]}],
    "reference": [{"calls": [{"tool": "search_records", "args": {"query": "one"}}]},
                  {"calls": [{"tool": "lookup_record", "args": {"record_id": "CUS-1"}}]}, {"final": "Net 45"}],
}, "T2.toml"), "v0", "i0", "h")
DECLARES_REPEATS = ANSWER.model_copy(update={"declared_forbidden": ("repeated_identical_call",), "turn_budget": 6})
NO_TOOLS = resolve(parse_case({
    "id": "T0", "tier": "A0", "title": "no tools", "prompts": {"v0": "p"},
    "gold": {"answer": [{"kind": "contains", "values": ["blue"]}]}, "reference": [{"final": "blue"}],
}, "T0.toml"), "v0", "i0", "h")

SEARCH = ("search_records", {"query": "one"})
READ = ("lookup_record", {"record_id": "CUS-1"})
READ_BAD = ("lookup_record", {"record_id": "CUS-9"})
FAKE = ("fetch_everything", {})
WRONG = ("list_options", {"category": "c"})


def ep(case, turns: list[list[tuple]], *, end: str = "final_answer", final: str | None = None,
       submissions: list[dict] | None = None, budget: int = 4, calls: int | None = None,
       last_finish: str = "stop", protocol: str | None = None) -> Trajectory:
    """A trajectory from (tool, args[, status[, flags]]) tuples per turn, plus an optional final text turn."""
    built = []
    for i, cs in enumerate(turns):
        out = []
        for spec in cs:
            name, args, status, flags = (*spec, "ok", {})[:4] if len(spec) == 2 else (*spec, {})[:4]
            if name == "lookup_record" and args.get("record_id") == "CUS-9":
                status = "error"
            if name == "fetch_everything":
                status, flags = "error", {"hallucinated": True, **flags}
            c = ToolCall(turn=i, id=f"c{i}{len(out)}", name=name, raw_arguments=json.dumps(args), arguments=args,
                         result={"status": status, "data": {"id": args.get("record_id", ""), "terms": "Net 45"}},
                         **flags)
            out.append(c)
        built.append(Turn(index=i, calls=out))
    if final is not None:
        built.append(Turn(index=len(built), content=final))
    if built:
        built[-1].finish_reason = last_finish
    seen: set[str] = set()
    for c in (c for t in built for c in t.calls):
        key = f"{c.name}:{json.dumps(c.arguments, sort_keys=True)}"
        c.repeated = c.repeated or key in seen
        if c.ok:
            seen.add(key)
    return Trajectory(case_id=case.id, tier=case.tier, variant="v0", instance="i0", run=0, model="m",
                      tools=list(case.tools), turns=built, final_answer=final, termination=end,
                      submissions=submissions or [], turn_budget=budget, call_limit=calls, protocol=protocol)


MALFORMED = ("lookup_record", {}, "error", {"malformed": True})
MALFORMED_FAKE = ("fetch_everything", {}, "error", {"malformed": True})
CASCADE = [
    # (row id, case, trajectory, first unmet, failure mode, terminal flag)
    ("full work then a wrong answer", ANSWER, ep(ANSWER, [[SEARCH], [READ]], final="Net 30"), "Q", "F5",
     "wrong_conclusion"),
    ("hallucinated tools until the budget ran out", ANSWER, ep(ANSWER, [[FAKE]] * 4, end="turn_budget"), "S", "F1",
     "turn_limit"),
    ("two failed calls then quit", ANSWER, ep(ANSWER, [[READ_BAD], [READ_BAD]], final="I could not find it."), "S",
     "F5b", "wrong_conclusion"),
    # a right run that only repeated a call did not resign (tbb's any-repeat rule; the trajectory
    # names no protocol, so the strict rule applies)
    ("right answer but a repeated call", ANSWER, ep(ANSWER, [[SEARCH], [READ], [READ]], final="Net 45"), "C", "F3",
     "other"),
    ("agentfloor: three identical calls in a row on a case declaring repeats", DECLARES_REPEATS,
     ep(DECLARES_REPEATS, [[SEARCH], [READ], [READ], [READ]], final="Net 45", budget=6, protocol="agentfloor"),
     "C", "F3", "other"),
    ("only a wrong tool, then an answer", ANSWER, ep(ANSWER, [[WRONG]], final="No idea."), "S", "F6",
     "wrong_conclusion"),
    ("the first step, a wrong tool, then an answer", ANSWER, ep(ANSWER, [[SEARCH], [WRONG]], final="Net 30"), "S",
     "F5", "wrong_conclusion"),
    ("a rejected submission never corrected, then an answer", CASE,
     traj([[call(0, "search_records", {"query": "x"})], [call(1, "lookup_record", {"record_id": "R-1"})],
           [call(2, "lookup_record", {"record_id": "R-2"})],
           [call(3, "submit_decision", dict(SUBMIT, record_id="R-1"), status="error")]],
          termination="final_answer", final="I chose R-1.", submissions=[]), "P", "F5", "wrong_conclusion"),
    ("hallucinated and malformed in one episode", ANSWER, ep(ANSWER, [[MALFORMED], [FAKE]], final="?"), "S", "F1",
     "wrong_conclusion"),
    ("a call both hallucinated and malformed", ANSWER, ep(ANSWER, [[MALFORMED_FAKE]], final="?"), "S", "F1",
     "wrong_conclusion"),
    ("exactly one successful call before quitting", ANSWER, ep(ANSWER, [[SEARCH]], final="No idea."), "S", "F5b",
     "wrong_conclusion"),
    ("exactly two successful calls before quitting", ANSWER, ep(ANSWER, [[SEARCH], [WRONG]], final="No idea."), "S",
     "F5", "wrong_conclusion"),
    ("turn budget used up with a malformed call", ANSWER, ep(ANSWER, [[SEARCH], [MALFORMED]] * 2, end="turn_budget"),
     "P", "F2", "turn_limit"),
    ("working until the turn budget ran out", ANSWER, ep(ANSWER, [[SEARCH], [READ], [WRONG], [WRONG]],
                                                          end="turn_budget"), "Q", "F4", "turn_limit"),
    ("tbb: calls until the call limit", ANSWER, ep(ANSWER, [[SEARCH], [READ], [WRONG]], end="call_limit", calls=2),
     "Q", "F4", "budget"),
    # tier A0 has nothing to execute: its wrong answer is no resignation after working
    ("a wrong answer with no tools to use", NO_TOOLS, ep(NO_TOOLS, [], final="red", budget=1), "Q", "F3",
     "wrong_conclusion"),
    ("agentfloor: a truncated last reply read as the answer", ANSWER,
     ep(ANSWER, [[SEARCH], [READ]], final="The terms are", last_finish="length"), "Q", "F5", "truncation"),
    ("truncation beats the call limit", ANSWER, ep(ANSWER, [[SEARCH], [READ]], end="truncated", calls=1,
                                                   last_finish="length"), "Q", "F3", "truncation"),
    ("wall-clock timeout after the work", ANSWER, ep(ANSWER, [[SEARCH], [READ]], end="timeout"), "Q", "F3", "other"),
    ("tbb: infeasibility stop after a wrong tool", ANSWER, ep(ANSWER, [[WRONG]], end="infeasible", calls=2), "S",
     "F6", "infeasible"),
    # submission cases: a submission is a final action, so a failure falls to F6/F7/F3
    ("wrong tool, then a submission", CASE, traj([[call(0, "search_records", {"query": "x"})],
                                                  [call(1, "list_options", {"category": "c"})],
                                                  [call(2, "submit_decision", SUBMIT)]]), "S", "F6",
     "wrong_conclusion"),  # it cites R-2, which it never read: the outcome itself is wrong
    ("partial work, then a submission", CASE, traj([[call(0, "search_records", {"query": "x"})],
                                                    [call(1, "lookup_record", {"record_id": "R-1"})],
                                                    [call(2, "submit_decision", SUBMIT)]]), "P", "F7",
     "wrong_conclusion"),
    ("full work, then a wrong submission", CASE, traj(good(), submissions=[dict(SUBMIT, record_id="R-1")]), "X",
     "F7", "wrong_conclusion"),
    ("right submission, then an unrequested second one", CASE,
     traj(good() + [[call(4, "submit_decision", SUBMIT, status="error")]]), "G", "F3", "other"),
]


@pytest.mark.parametrize("row,case,trajectory,unmet,mode,flag", CASCADE, ids=[r[0] for r in CASCADE])
def test_cascade_table(row: str, case, trajectory: Trajectory, unmet: str, mode: str, flag: str) -> None:
    if row.startswith("right submission"):
        trajectory.turns[-1].calls[0].result = {"status": "error", "error_type": "already_submitted"}
    g = grade(case, trajectory)
    assert not g.passed
    assert (g.first_unmet.code, g.failure_mode, g.terminal_flag) == (unmet, mode, flag), g.message(trajectory)


def test_the_reference_of_each_table_case_passes() -> None:
    """The table's cases are gradeable: their reference solutions pass, so each row fails for its reason."""
    assert grade(ANSWER, ep(ANSWER, [[SEARCH], [READ]], final="Net 45")).passed
    assert grade(NO_TOOLS, ep(NO_TOOLS, [], final="blue", budget=1)).passed
    assert grade(CASE, traj(good())).passed


def test_budget_checks_only_the_limits_the_protocol_enforced() -> None:
    """No call limit or token budget recorded (agentfloor): many calls and tokens are no B failure."""
    many = ep(ANSWER, [[SEARCH, WRONG, ("list_options", {"category": "d"}), ("list_options", {"category": "e"})],
                       [READ]], final="Net 45", budget=3)
    many.turns[0].tokens_in = 10**6
    assert next(v for v in grade(ANSWER, many).verdicts if v.code == "B").ok
    many.call_limit, many.token_budget = 3, 128_000
    b = next(v for v in grade(ANSWER, many).verdicts if v.code == "B")
    assert not b.ok and "<= 3 calls" in b.expected and "<= 128000 tokens" in b.expected


# -- obligations the tables above leave out ------------------------------------------------------
def test_remaining_steps_counts_the_required_calls_not_yet_made() -> None:
    from pytest_agentfloor.grading import remaining_steps

    assert remaining_steps(CASE, traj([])) == 4
    assert remaining_steps(CASE, traj(good()[:1])) == 3
    assert remaining_steps(CASE, traj(good()[:2])) == 2  # find and a; b and submit left
    assert remaining_steps(CASE, traj(good())) == 0
    failed = good()[:2]
    failed[1] = [call(1, "lookup_record", {"record_id": "R-1"}, status="error")]
    assert remaining_steps(CASE, traj(failed)) == 3


@pytest.mark.parametrize("text,words", [
    ("one two-three four's", 3), ("a, b; c d", 4), ("— 'hi' there, 2-3 x", 4), ("", 0), ("  ...  ", 0),
    ("ONE TWO THREE FOUR", 4), ("Yes", 1),
])
def test_max_words_counts_words_not_punctuation(text: str, words: int) -> None:
    check = AnswerCheck(kind="max_words", expected=3)
    assert check_answer(check, text) == (words <= 3, "at most 3 words", f"{words} words")


ROOMS = resolve(parse_case({
    "id": "T3", "tier": "E", "title": "constraints", "prompts": {"v0": "p"},
    "tools": ["list_options", "check_constraint", "submit_decision"],
    "forbidden": ["partial_constraint_check"],
    "fixtures": {"records": [{"id": "R-1", "collection": "rooms", "name": "one", "fields": {"cap": 4, "video": True}},
                             {"id": "R-2", "collection": "rooms", "name": "two", "fields": {"cap": 20, "video": True}}],
                 "constraints": [{"name": "big", "field": "cap", "op": ">=", "value": 10},
                                 {"name": "video", "field": "video", "op": "==", "value": True}],
                 "submission": {"decisions": ["book"]}},
    "gold": {"submission": {"decision": "book", "record_id": "R-2"}},
    "steps": [{"id": "submit", "tool": "submit_decision"}],
    "reference": [{"calls": [{"tool": "submit_decision", "args": {"decision": "book", "record_id": "R-2"}}]}],
}, "T3.toml"), "v0", "i0", "h")
BOOK = {"decision": "book", "record_id": "R-2"}


def _check(turn: int, constraint: str, rid: str = "R-2", status: str = "ok") -> ToolCall:
    return call(turn, "check_constraint", {"record_id": rid, "constraint": constraint}, status=status)


@pytest.mark.parametrize("checks,observed", [
    ([[_check(0, "big"), _check(0, "video")]], None),
    ([[_check(0, "big")], [_check(1, "video", rid="r-2")]], None),  # ids compare as the matcher does
    ([[_check(0, "big")]], "R-2 submitted without checking ['video']"),
    ([[]], "R-2 submitted without checking ['big', 'video']"),
    ([[_check(0, "big"), _check(0, "video", rid="R-1")]], "R-2 submitted without checking ['video']"),
    ([[_check(0, "big"), _check(0, "video", status="error")]], "R-2 submitted without checking ['video']"),
])
def test_partial_constraint_check_needs_every_constraint_before_the_submission(checks, observed) -> None:
    from pytest_agentfloor.grading.obligations import completion

    t = traj(checks + [[call(len(checks), "submit_decision", BOOK)]], submissions=[BOOK])
    v = completion(ROOMS, t)
    assert v.ok is (observed is None)
    if observed:
        assert (v.code, v.expected, v.observed) == (
            "C", "every submitted candidate checked against every constraint", observed)


def test_a_check_in_the_submissions_own_turn_is_too_late_and_failed_submissions_are_not_judged() -> None:
    from pytest_agentfloor.grading.obligations import completion

    same = traj([[_check(0, "big"), _check(0, "video"), call(0, "submit_decision", BOOK)]], submissions=[BOOK])
    assert completion(ROOMS, same).observed == "R-2 submitted without checking ['big', 'video']"
    rejected = traj([[call(0, "submit_decision", BOOK, status="error")]], submissions=[])
    assert completion(ROOMS, rejected).ok
    first = traj([[_check(0, "big", rid="R-1")], [call(1, "submit_decision", dict(BOOK, record_id="R-1"))],
                  [call(2, "submit_decision", BOOK)]], submissions=[BOOK])
    assert completion(ROOMS, first).observed == "R-1 submitted without checking ['video']"  # the first problem
    no_args = traj([[call(0, "submit_decision", BOOK)]], submissions=[BOOK])
    no_args.turns[0].calls[0].arguments = None
    assert completion(ROOMS, no_args).observed == "None submitted without checking ['big', 'video']"


def test_completion_ends_with_an_answer_and_reads_only_the_forbidden_behaviours() -> None:
    from pytest_agentfloor.grading.obligations import completion

    ended = completion(CASE, traj(good(), termination="turn_budget"))
    assert (ended.code, ended.ok, ended.expected, ended.observed) == (
        "C", False, "the episode ends with an answer or a submission", "ended by turn_budget")
    assert completion(CASE, traj(good(), termination="final_answer", final="done")).ok
    # ROOMS does not forbid repeated calls: a repeat is no C failure there
    rep = [[_check(0, "big"), _check(0, "video"), _check(0, "big", ) ], [call(1, "submit_decision", BOOK)]]
    rep[0][2].repeated = True
    assert completion(ROOMS, traj(rep, submissions=[BOOK])).ok
    # CASE forbids them (the default)
    repeated = good()
    repeated[1].append(call(1, "lookup_record", {"record_id": "R-1"}, repeated=True))
    v = completion(CASE, traj(repeated))
    assert (v.ok, v.expected, v.observed) == (False, "no repeated identical call", "repeated ['lookup_record']")


def test_evidence_in_a_text_answer_matches_whole_ids_in_any_case() -> None:
    from pytest_agentfloor.grading.obligations import evidence

    case = resolve(parse_case({
        "id": "T4", "tier": "B", "title": "cite in text", "prompts": {"v0": "p"},
        "tools": ["lookup_record"],
        "fixtures": {"records": [{"id": "CUS-1", "collection": "c", "name": "one"},
                                 {"id": "CUS-12", "collection": "c", "name": "twelve"}]},
        "gold": {"answer": [{"kind": "contains", "values": ["ok"]}], "evidence": ["CUS-1"]},
        "steps": [{"id": "read", "tool": "lookup_record", "args": {"record_id": "CUS-1"}}],
        "reference": [{"calls": [{"tool": "lookup_record", "args": {"record_id": "CUS-1"}}]}, {"final": "ok CUS-1"}],
    }, "T4.toml"), "v0", "i0", "h")

    def answered(text: str, seen: str = "CUS-1") -> Trajectory:
        t = traj([[call(0, "lookup_record", {"record_id": seen})]], termination="final_answer", final=text,
                 submissions=[])
        t.turns[0].calls[0].result = {"status": "ok", "data": {"id": seen, "name": "x"}}
        return t

    assert evidence(case, answered("ok, see cus-1.")).ok
    v = evidence(case, answered("ok, see CUS-12"))  # CUS-12 is not CUS-1
    assert (v.ok, v.expected, v.observed) == (False, "cites exactly ['CUS-1']", "cites ['CUS-12']")
    assert not evidence(case, answered("ok, see XCUS-1")).ok
    v = evidence(case, answered("ok, CUS-1", seen="CUS-12"))  # cited, but the result showed only CUS-12
    assert (v.ok, v.expected, v.observed) == (False, "cites only records it retrieved", "never retrieved ['CUS-1']")
    two = answered("ok, CUS-1")
    two.turns[0].calls.insert(0, ToolCall(turn=0, id="x", name="lookup_record", raw_arguments="{}", arguments={},
                                          result={"status": "ok", "data": {"id": "CUS-12"}}))
    assert evidence(case, two).ok  # an id seen in any call's result counts
