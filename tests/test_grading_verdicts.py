"""Each obligation's verdict in full (code, ok, expected, observed) and the cascade's edges.

A failed item shows the first unmet verdict's expected and observed text, so their wording is
behaviour: each expected value below is written out by hand from the obligation's rule.
"""

from __future__ import annotations

import pytest

from pytest_agentfloor.grading import Grade, grade
from pytest_agentfloor.grading.failure import failure_mode, terminal_flag
from pytest_agentfloor.grading.obligations import (
    Verdict, availability, budget, check, completion, evidence, first_unmet, governance, safety, selection, workflow,
)
from pytest_agentfloor.judge.client import Judgment
from pytest_agentfloor.suite.loader import parse_case, resolve
from pytest_agentfloor.trajectory import Trajectory, Turn

from .test_grading import ANSWER, CASE, READ, SEARCH, SUBMIT, WRONG, call, ep, good, traj

V = Verdict


def _v(v: Verdict) -> tuple:
    return (v.code, v.ok, v.expected, v.observed)


def test_availability() -> None:
    t = traj(good())
    assert _v(availability(CASE, t)) == ("A", True, "", "")
    t.tools = ["search_records", "get_attribute", "submit_decision"]  # a: get_attribute serves; b needs lookup_record
    assert _v(availability(CASE, t)) == ("A", False, "every required tool on the menu", "not offered: ['lookup_record']")
    t.tools = []
    assert _v(availability(CASE, t)) == ("A", False, "every required tool on the menu",
                                         "not offered: ['lookup_record', 'search_records', 'submit_decision']")


ALL_STEPS = "calls to ['lookup_record', 'lookup_record|get_attribute', 'search_records', 'submit_decision']"


def test_selection() -> None:
    assert _v(selection(CASE, traj(good()))) == ("S", True, "", "")
    h = good()
    h[1].append(call(1, "zap", {}, status="error", hallucinated=True))
    h[2].append(call(2, "beam", {}, status="error", hallucinated=True))
    assert _v(selection(CASE, traj(h))) == ("S", False, f"only tools from {list(CASE.tools)}",
                                            "called unknown tool(s) ['beam', 'zap']")
    assert _v(selection(CASE, traj(good()[:1]))) == (
        "S", False, ALL_STEPS,
        "never called ['lookup_record', 'lookup_record|get_attribute', 'submit_decision']; called ['search_records']")
    assert _v(selection(CASE, traj([]))) == (
        "S", False, ALL_STEPS,
        "never called ['lookup_record', 'lookup_record|get_attribute', 'search_records', 'submit_decision']; no calls")
    failed = traj([[call(0, "search_records", {"query": "x"}, status="error")]])  # a failed call still selects
    assert selection(CASE, failed).observed.endswith("; called ['search_records']")


def test_workflow() -> None:
    assert _v(workflow(CASE, traj(good()))) == ("P", True, "", "")
    assert _v(workflow(CASE, traj([]))) == ("P", False, "a successful search_records({})",
                                            "4 of 4 required step(s) not done, first: 'find'")
    assert _v(workflow(CASE, traj(good()[:1]))) == (
        "P", False, 'a successful lookup_record({"record_id": "R-1"}) after [\'find\']',
        "3 of 4 required step(s) not done, first: 'a'")
    # arguments shown with sorted keys
    attr = _chain([{"id": "a", "tool": "get_attribute", "args": {"record_id": "R-1", "attribute": "x"}}])
    assert workflow(attr, ep(attr, [], final="one")).expected == \
        'a successful get_attribute({"attribute": "x", "record_id": "R-1"})'
    # a call without parsed arguments satisfies no step
    t = traj(good())
    t.turns[0].calls[0].arguments = None
    assert workflow(CASE, t).observed == "4 of 4 required step(s) not done, first: 'find'"


SEMANTIC = resolve(parse_case({
    "id": "T5", "tier": "A0", "title": "judged", "prompts": {"v0": "p"},
    "gold": {"answer": [{"kind": "contains", "values": ["blue"], "semantic": True, "predicate": "colour",
                         "rubric": "names the colour"},
                        {"kind": "max_words", "expected": 5}]},
    "reference": [{"final": "blue"}],
}, "T5.toml"), "v0", "i0", "h")


def _judged(final: str | None) -> Trajectory:
    return ep(SEMANTIC, [], final=final, budget=1)


def test_answer_without_text_or_with_a_failed_check() -> None:
    assert _v(check("Q", ANSWER, ep(ANSWER, [[SEARCH], [READ]], final="Net 45"))) == ("Q", True, "", "")
    for final in (None, "", " \n "):
        assert _v(check("Q", ANSWER, ep(ANSWER, [[SEARCH]], final=final))) == (
            "Q", False, "a final answer", "no final answer text")
    assert _v(check("Q", ANSWER, ep(ANSWER, [[SEARCH]], final="Net 30"))) == (
        "Q", False, "mentions ['Net 45']", "missing ['Net 45']")
    assert check("Q", CASE, traj(good())).ok  # no answer asked for


def test_answer_takes_the_judges_verdict_for_a_semantic_check() -> None:
    said_no = {"colour": Judgment("colour", "judge", False, "says red", rubric="names the colour")}
    said_yes = {"colour": Judgment("colour", "judge", True, "fine")}
    keyword = {"colour": Judgment("colour", "keyword", True, "stand-in")}
    # the judge overrules the keyword rule both ways
    assert _v(check("Q", SEMANTIC, _judged("blue"), said_no)) == ("Q", False, "colour: names the colour",
                                                                  "the judge says fail: says red")
    assert check("Q", SEMANTIC, _judged("azure"), said_yes).ok
    # ... but not the deterministic checks after it
    assert _v(check("Q", SEMANTIC, _judged("azure is the colour of it"), said_yes)) == (
        "Q", False, "at most 5 words", "6 words")
    # a keyword stand-in or no judgment: the keyword rule decides
    assert _v(check("Q", SEMANTIC, _judged("azure"), keyword)) == ("Q", False, "mentions ['blue']", "missing ['blue']")
    assert not check("Q", SEMANTIC, _judged("azure"), {}).ok
    assert not check("Q", SEMANTIC, _judged("azure"), None).ok
    assert not check("Q", SEMANTIC, _judged("azure"), {"other": said_yes["colour"]}).ok
    # grade() hands the judgments to Q
    assert grade(SEMANTIC, _judged("azure"), judgments=said_yes).passed
    assert not grade(SEMANTIC, _judged("azure")).passed


def test_a_judgment_never_decides_a_deterministic_check() -> None:
    judged = {"required_elements": Judgment("required_elements", "judge", True, "ok")}
    assert _v(check("Q", ANSWER, ep(ANSWER, [[SEARCH], [READ]], final="Net 30"), judged)) == (
        "Q", False, "mentions ['Net 45']", "missing ['Net 45']")


def test_evidence_of_a_submission() -> None:
    assert _v(evidence(CASE, traj(good()))) == ("E", True, "", "")
    assert _v(evidence(CASE, traj(good(), submissions=[dict(SUBMIT, evidence=["R-2"])]))) == (
        "E", False, "cites exactly ['R-1', 'R-2']", "cites ['R-2']")
    assert _v(evidence(CASE, traj(good(), submissions=[]))) == ("E", False, "cites exactly ['R-1', 'R-2']", "cites []")
    # evidence from every submission counts; order and duplicates do not matter
    split = [dict(SUBMIT, evidence=["R-2"]), dict(SUBMIT, evidence=["R-1", "R-2"])]
    assert evidence(CASE, traj(good(), submissions=split)).ok
    assert evidence(CASE, traj(good(), submissions=[dict(SUBMIT, evidence=["R-2", "R-1"])])).ok
    # ids compare case-insensitively in both checks: "r-1" is the retrieved R-1
    assert evidence(CASE, traj(good(), submissions=[dict(SUBMIT, evidence=["r-1", "R-2"])])).ok
    no_key = traj(good(), submissions=[{"decision": "ok", "record_id": "R-2"}])
    assert evidence(CASE, no_key).observed == "cites []"
    assert _v(evidence(ANSWER, ep(ANSWER, [[SEARCH]], final="x"))) == ("E", True, "", "")  # no evidence asked for


def test_safety() -> None:
    gold = "a submission {'decision': 'ok', 'record_id': 'R-2'}"
    assert _v(safety(CASE, traj(good()))) == ("X", True, "", "")
    assert _v(safety(CASE, traj(good(), submissions=[]))) == ("X", False, gold, "no submission")
    wrong = [{"decision": "no", "record_id": "R-1", "evidence": []}, SUBMIT]
    assert safety(CASE, traj(good(), submissions=wrong)).ok  # any submission that matches
    assert _v(safety(CASE, traj(good(), submissions=wrong[:1]))) == (
        "X", False, gold, "submitted {'decision': 'no', 'record_id': 'R-1'}")
    assert _v(safety(CASE, traj(good(), submissions=[{"decision": "ok"}]))) == (
        "X", False, gold, "submitted {'decision': 'ok', 'record_id': None}")
    assert _v(safety(ANSWER, ep(ANSWER, [[SEARCH]], final="x"))) == ("X", True, "", "")


def test_governance() -> None:
    assert _v(governance(CASE, traj(good()))) == ("G", True, "", "")
    twice = good() + [[call(4, "submit_decision", SUBMIT, status="error")]]
    twice[-1][0].result = {"status": "error", "error_type": "already_submitted"}
    assert _v(governance(CASE, traj(twice))) == ("G", False, "at most 1 change(s) of state",
                                                 "2 submission attempt(s)")
    rejected = good() + [[call(4, "submit_decision", SUBMIT, status="error")]]
    rejected[-1][0].result = {"status": "error", "error_type": "invalid_argument"}
    assert governance(CASE, traj(rejected)).ok  # a rejected call changed nothing
    # a case that asks for no submission allows none
    submitted = ep(ANSWER, [[SEARCH], [("submit_decision", {"decision": "x"})]], final="Net 45")
    assert _v(governance(ANSWER, submitted)) == ("G", False, "at most 0 change(s) of state", "1 submission attempt(s)")


LIMITS = "<= 6 turns, <= 8 calls, <= 1000 tokens"


@pytest.mark.parametrize("termination,observed", [
    ("turn_budget", "turn budget used up"), ("call_limit", "call limit reached"),
    ("token_budget", "episode token budget exceeded"), ("truncated", "a reply truncated at the completion cap"),
    ("timeout", "episode wall-clock safety limit reached"),
    ("context_limit", "the prompt did not fit the context window"),
])
def test_budget_names_the_limit_that_ended_the_episode(termination: str, observed: str) -> None:
    assert _v(budget(CASE, traj(good()[:1], termination=termination))) == ("B", False, LIMITS, observed)


def test_budget_counts_turns_calls_and_tokens_against_their_limits() -> None:
    t = traj(good())
    assert _v(budget(CASE, t)) == ("B", True, "", "")
    t.turns[0].tokens_in, t.turns[1].tokens_out = 700, 300  # exactly the budget
    assert budget(CASE, t).ok
    t.turns[1].tokens_out = 301
    assert _v(budget(CASE, t)) == ("B", False, LIMITS, "4 turns, 4 calls, 1001 tokens")
    many = traj([[call(0, "search_records", {"query": str(i)}) for i in range(8)]])
    assert budget(CASE, many).ok  # 8 calls: exactly the limit
    many.turns[0].calls.append(call(0, "search_records", {"query": "9"}))
    assert budget(CASE, many).observed == "1 turns, 9 calls, 0 tokens"
    long = traj([[call(i, "search_records", {"query": str(i)})] for i in range(6)])
    assert budget(CASE, long).ok  # 6 turns: exactly the budget
    long.turns.append(Turn(index=6, content="x"))
    assert budget(CASE, long).observed == "7 turns, 6 calls, 0 tokens"
    free = traj(good())
    free.call_limit, free.token_budget = None, None
    free.turns[0].tokens_in = 10**6
    assert budget(CASE, free).ok
    free.turns.extend(Turn(index=i) for i in range(4, 7))
    assert _v(budget(CASE, free)) == ("B", False, "<= 6 turns", "7 turns, 4 calls, 1000000 tokens")


def test_completion_needs_an_answer_where_stopping_without_one_is_forbidden() -> None:
    case = resolve(parse_case({
        "id": "T6", "tier": "B", "title": "answer", "prompts": {"v0": "p"},
        "tools": ["search_records"], "forbidden": ["terminate_without_answer"],
        "gold": {"answer": [{"kind": "contains", "values": ["x"]}]},
        "steps": [{"id": "find", "tool": "search_records"}],
        "reference": [{"calls": [{"tool": "search_records", "args": {"query": "x"}}]}, {"final": "x"}],
    }, "T6.toml"), "v0", "i0", "h")
    assert completion(case, ep(case, [[SEARCH]], final="x")).ok
    assert _v(completion(case, ep(case, [[SEARCH]], final="  "))) == ("C", False, "a final answer before stopping",
                                                                      "stopped without one")
    assert _v(completion(case, ep(case, [[SEARCH]], final=None))) == ("C", False, "a final answer before stopping",
                                                                      "stopped without one")
    assert completion(case, ep(case, [[SEARCH], [SEARCH]], final="x")).ok  # repeats are not forbidden here
    # a case that asks for no answer may stop without one
    assert completion(CASE, traj(good(), termination="final_answer", final=None)).ok


def test_first_unmet_and_check_dispatch() -> None:
    assert first_unmet([V("A", True), V("S", False, "e"), V("P", False)]) == V("S", False, "e")
    assert first_unmet([V("A", True)]) is None and first_unmet([]) is None
    t = traj(good()[:1])
    for code, fn in (("A", availability), ("S", selection), ("P", workflow), ("E", evidence), ("X", safety),
                     ("G", governance), ("B", budget), ("C", completion)):
        assert check(code, CASE, t) == fn(CASE, t)


# -- the cascade's edges -----------------------------------------------------------------------
def test_an_episode_ended_by_a_malformed_call_is_f2_even_without_a_flagged_call() -> None:
    assert failure_mode(ANSWER, ep(ANSWER, [[SEARCH]], end="malformed_call"), [V("P", False)]) == "F2"


def test_wrong_tool_needs_both_a_skipped_step_and_an_extra_tool() -> None:
    # every required tool called, plus an extra one, then a wrong submission: partial completion, not F6
    extra = good()
    extra[1].append(call(1, "list_options", {"category": "c"}))
    t = traj(extra, submissions=[dict(SUBMIT, record_id="R-1")])
    g = grade(CASE, t)
    assert (g.first_unmet.code, g.failure_mode) == ("X", "F7")


def test_a_submission_is_no_wrong_tool_where_the_case_asks_for_none() -> None:
    submitting = resolve(parse_case({
        "id": "T7", "tier": "B", "title": "no submission", "prompts": {"v0": "p"},
        "tools": ["search_records", "lookup_record", "submit_decision"],
        "fixtures": {"records": [{"id": "CUS-1", "collection": "c", "name": "one"}],
                     "submission": {"decisions": ["x"]}},
        "gold": {"answer": [{"kind": "contains", "values": ["one"]}]},
        "steps": [{"id": "find", "tool": "search_records"},
                  {"id": "read", "tool": "lookup_record", "args": {"record_id": "CUS-1"}, "after": ["find"]}],
        "reference": [{"calls": [{"tool": "search_records", "args": {"query": "one"}}]},
                      {"calls": [{"tool": "lookup_record", "args": {"record_id": "CUS-1"}}]}, {"final": "one"}],
    }, "T7.toml"), "v0", "i0", "h")
    t = ep(submitting, [[SEARCH], [("submit_decision", {"decision": "x"})]], end="submitted",
           submissions=[{"decision": "x"}])
    g = grade(submitting, t)
    assert (g.first_unmet.code, g.failure_mode) == ("S", "F7")


def test_partial_completion_needs_a_failed_s_p_or_x_and_some_of_the_work() -> None:
    # a plugin may override P through the hook: S alone failed still means partial completion
    t = ep(ANSWER, [[SEARCH]], end="timeout")
    assert failure_mode(ANSWER, t, [V("S", False), V("Q", False)]) == "F7"
    assert failure_mode(ANSWER, t, [V("X", False)]) == "F7"
    assert failure_mode(ANSWER, t, [V("Q", False), V("C", False)]) == "F3"
    # work done but no submission and no answer (a timeout): still partial completion
    assert grade(ANSWER, t).failure_mode == "F7"
    # nothing required called and nothing submitted: the residual
    assert failure_mode(ANSWER, ep(ANSWER, [], end="timeout"), [V("P", False)]) == "F3"


def _ended(termination: str, **kw) -> Trajectory:
    t = ep(ANSWER, [[SEARCH], [READ], [WRONG]], end=termination, final="x" if termination == "final_answer" else None)
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def test_terminal_flag_edges() -> None:
    assert terminal_flag(_ended("context_limit")) == "context_limit"
    assert terminal_flag(_ended("context_limit", call_limit=1)) == "context_limit"  # the cause comes first
    over = _ended("final_answer", token_budget=100)
    over.turns[0].tokens_in, over.turns[0].tokens_out = 60, 41
    assert terminal_flag(over) == "budget"
    over.turns[0].tokens_out = 40  # exactly the budget
    assert terminal_flag(over) == "wrong_conclusion"
    assert terminal_flag(_ended("final_answer", call_limit=3)) == "wrong_conclusion"  # 3 calls: the limit
    assert terminal_flag(_ended("final_answer", call_limit=2)) == "budget"
    assert terminal_flag(_ended("final_answer", turn_budget=4)) == "wrong_conclusion"  # 4 turns
    assert terminal_flag(_ended("final_answer", turn_budget=3)) == "turn_limit"
    assert terminal_flag(_ended("final_answer", turn_budget=1)) == "turn_limit"
    assert terminal_flag(_ended("final_answer", turn_budget=0)) == "wrong_conclusion"  # 0: no budget recorded
    # a right outcome that broke another term: other; without verdicts an ended episode is a wrong conclusion
    assert terminal_flag(_ended("final_answer"), [V("Q", True), V("C", False)]) == "other"
    assert terminal_flag(_ended("submitted"), [V("E", False)]) == "wrong_conclusion"
    assert terminal_flag(_ended("submitted"), [V("X", False), V("Q", True)]) == "wrong_conclusion"


# -- grade() with plugin hooks -----------------------------------------------------------------
class Hooks:
    """pytest's hook relay as grade() calls it: keyword arguments, None to defer to the defaults."""

    def __init__(self, override: dict[str, Verdict] | None = None, extra: list | None = None,
                 mode: str | None = None) -> None:
        self.override, self.extra, self.mode, self.seen = override or {}, extra or [], mode, []

    def pytest_agentfloor_check_obligation(self, *, code, case, trajectory, judgments):
        self.seen.append((code, case.id, trajectory.case_id, judgments))
        return self.override.get(code)

    def pytest_agentfloor_extra_obligations(self, *, case, trajectory):
        self.seen.append(("extra", case.id, trajectory.case_id))
        return self.extra

    def pytest_agentfloor_failure_mode(self, *, case, trajectory, verdicts):
        self.seen.append(("mode", case.id, trajectory.case_id, [v.code for v in verdicts]))
        return self.mode


def test_grade_asks_the_hook_for_each_obligation_and_uses_its_verdict() -> None:
    hooks = Hooks({"Q": V("Q", False, "a haiku", "prose")})
    judgments = {"colour": Judgment("colour", "judge", True, "ok")}
    g = grade(CASE, traj(good()), hooks, judgments)
    assert [c for c, *_ in hooks.seen] == ["A", "S", "P", "Q", "E", "X", "G", "B", "C", "extra", "mode"]
    assert all(s[1:] == ("T1", "T1", judgments) for s in hooks.seen[:9])
    assert hooks.seen[9:] == [("extra", "T1", "T1"), ("mode", "T1", "T1", ["A", "S", "P", "Q", "E", "X", "G", "B", "C"])]
    assert [_v(v) for v in g.verdicts][3] == ("Q", False, "a haiku", "prose")
    assert g == Grade(False, g.verdicts, V("Q", False, "a haiku", "prose"), "F3", "wrong_conclusion")
    assert all(v.ok for v in g.verdicts if v.code != "Q")


def test_grade_appends_extra_obligations_and_takes_the_hooks_failure_mode() -> None:
    extra = V("Z", False, "no emoji", "🙂")
    g = grade(CASE, traj(good()), Hooks(extra=[[extra], None, []], mode="F9"))
    assert [v.code for v in g.verdicts] == ["A", "S", "P", "Q", "E", "X", "G", "B", "C", "Z"]
    assert (g.passed, g.first_unmet, g.failure_mode, g.terminal_flag) == (False, extra, "F9", "other")
    # a hook that leaves the mode to the defaults
    g = grade(CASE, traj(good(), submissions=[dict(SUBMIT, record_id="R-1")]), Hooks())
    assert (g.first_unmet.code, g.failure_mode, g.terminal_flag) == ("X", "F7", "wrong_conclusion")
    assert grade(CASE, traj(good()), Hooks()) == Grade(True, grade(CASE, traj(good())).verdicts)


def test_grade_without_hooks_is_the_defaults() -> None:
    g = grade(CASE, traj(good()[:2], termination="turn_budget", submissions=[]))
    assert (g.passed, g.first_unmet.code, g.failure_mode, g.terminal_flag) == (False, "S", "F4", "turn_limit")
    assert g.first_unmet is g.verdicts[1]  # submit_decision never called and len(g.verdicts) == 9
    ok = grade(CASE, traj(good()))
    assert (ok.passed, ok.first_unmet, ok.failure_mode, ok.terminal_flag) == (True, None, None, None)


# -- answer checks ----------------------------------------------------------------------------
from pytest_agentfloor.grading.obligations import _json_object, check_answer, remaining_steps  # noqa: E402
from pytest_agentfloor.suite.schema import AnswerCheck  # noqa: E402

LABELS = AnswerCheck(kind="label", labels=["approve", "reject", "escalate"], expected="approve")
LABELS_TEXT = "exactly the label 'approve' from ['approve', 'reject', 'escalate']"
REOPEN = AnswerCheck(kind="label", labels=["Re-open", "open"], expected="Re-open")
LONG = "x" * 100


@pytest.mark.parametrize("check,text,result", [
    (LABELS, "Approve.", (True, LABELS_TEXT, "labels ['approve']")),
    (LABELS, "My decision: approve", (True, LABELS_TEXT, "labels ['approve']")),
    (LABELS, "I would approve, not reject", (False, LABELS_TEXT, "labels ['approve', 'reject']")),
    (LABELS, "**reject**", (False, LABELS_TEXT, "labels ['reject']")),
    (LABELS, "approved", (False, LABELS_TEXT, "no valid label in 'approved'")),
    (LABELS, "pre_approve", (False, LABELS_TEXT, "no valid label in 'pre_approve'")),
    (LABELS, LONG, (False, LABELS_TEXT, f"no valid label in {'x' * 80!r}")),
    # the whole answer being one label wins over the labels found inside it
    (REOPEN, "'Re-open'.", (True, "exactly the label 'Re-open' from ['Re-open', 'open']", "labels ['Re-open']")),
    (REOPEN, "re-open it", (False, "exactly the label 'Re-open' from ['Re-open', 'open']", "labels ['Re-open', 'open']")),
    (REOPEN, "open", (False, "exactly the label 'Re-open' from ['Re-open', 'open']", "labels ['open']")),
    (AnswerCheck(kind="contains", values=["Net 45", "EUR"]), "net  45\nin eur", (True, "mentions ['Net 45', 'EUR']",
                                                                                "all present")),
    (AnswerCheck(kind="contains", values=["Net 45", "EUR"]), "Net 45", (False, "mentions ['Net 45', 'EUR']",
                                                                        "missing ['EUR']")),
    (AnswerCheck(kind="not_contains", values=["guess", "maybe"]), "I GUESS so, maybe",
     (False, "never mentions ['guess', 'maybe']", "mentions ['guess', 'maybe']")),
    (AnswerCheck(kind="not_contains", values=["guess"]), "certain", (True, "never mentions ['guess']", "none")),
    (AnswerCheck(kind="json_fields", fields={"total": 12.5, "currency": "EUR"}),
     'Result: {"total": 12.50, "currency": "eur"}', (True, "fields {'total': 12.5, 'currency': 'EUR'}", "all match")),
    (AnswerCheck(kind="json_fields", fields={"total": 12.5, "currency": "EUR"}), '{"total": 13}',
     (False, "fields {'total': 12.5, 'currency': 'EUR'}", "wrong {'total': 13, 'currency': '<missing>'}")),
    (AnswerCheck(kind="json_fields", fields={"total": 1}), "no object " + LONG,
     (False, "a JSON object with {'total': 1}", f"no JSON object in {('no object ' + LONG)[:80]!r}")),
    (AnswerCheck(kind="regex", pattern="^A.*Z$"), "A\nZ", (True, "text matching /^A.*Z$/", "A\nZ")),
    (AnswerCheck(kind="regex", pattern="^A.*Z$"), "A\nZ!" + LONG, (False, "text matching /^A.*Z$/", ("A\nZ!" + LONG)[:80])),
    (AnswerCheck(kind="number", expected=1250), "Total: 1,250.00 EUR", (True, "the number 1250", "numbers [1250.0]")),
    (AnswerCheck(kind="number", expected=1250), "PRJ-1250 and v1250 cost 1249",
     (False, "the number 1250", "numbers [1249.0]")),
    (AnswerCheck(kind="number", expected=1250, tolerance=1), "1249", (True, "the number 1250", "numbers [1249.0]")),
    (AnswerCheck(kind="number", expected=10, tolerance=0.5), "10.5", (True, "the number 10", "numbers [10.5]")),
    (AnswerCheck(kind="number", expected=10, tolerance=0.5), "10.6", (False, "the number 10", "numbers [10.6]")),
    (AnswerCheck(kind="number", expected=-5), "-5 3 4 5 6 7 8", (True, "the number -5",
                                                                 "numbers [-5.0, 3.0, 4.0, 5.0, 6.0, 7.0]")),
])
def test_check_answer(check: AnswerCheck, text: str, result: tuple) -> None:
    assert check_answer(check, text) == result


def test_json_object_takes_the_first_fenced_object_or_the_outermost_braces() -> None:
    assert _json_object('a {"x": {"y": 1}} b') == {"x": {"y": 1}}
    assert _json_object('x{"a": 1}') == {"a": 1}
    assert _json_object('{"a": 1}x') == {"a": 1}
    assert _json_object('{"note": "```{oops}```", "a": 1}') == {"note": "```{oops}```", "a": 1}
    assert _json_object('see ```x}``` and ```{"c": 3}``` }') == {"c": 3}
    assert _json_object('```json\n["a"]\n```') is None and _json_object("[1, 2]") is None
    assert _json_object("} {") is None


# -- workflow order ----------------------------------------------------------------------------
def _chain(steps: list[dict]) -> object:
    return resolve(parse_case({
        "id": "T8", "tier": "B", "title": "order", "prompts": {"v0": "p"},
        "tools": ["search_records", "lookup_record", "get_attribute"],
        "fixtures": {"records": [{"id": "R-1", "collection": "c", "name": "one"}]},
        "gold": {"answer": [{"kind": "contains", "values": ["one"]}]},
        "steps": steps,
        "reference": [{"calls": [{"tool": "search_records", "args": {"query": "one"}}]}, {"final": "one"}],
    }, "T8.toml"), "v0", "i0", "h")


def test_steps_listed_before_their_dependencies_are_still_ordered() -> None:
    case = _chain([{"id": "c", "tool": "get_attribute", "after": ["b"]},
                   {"id": "b", "tool": "lookup_record", "after": ["a"]},
                   {"id": "a", "tool": "search_records"}])
    t = ep(case, [[SEARCH], [READ], [("get_attribute", {"record_id": "CUS-1", "attribute": "x"})]], final="one")
    assert remaining_steps(case, t) == 0 and workflow(case, t).ok
    assert remaining_steps(case, ep(case, [[SEARCH], [READ]], final="one")) == 1
    assert remaining_steps(case, ep(case, [], final="one")) == 3


def test_a_dependency_cycle_leaves_its_steps_undone_and_the_rest_graded() -> None:
    """Case files with a cycle are rejected at load; a ResolvedCase built in code (a compiler, a
    plugin) is not validated, and grading it must still end."""
    from pytest_agentfloor.suite.schema import Step

    case = _chain([{"id": "a", "tool": "search_records"}]).model_copy(update={"steps": (
        Step(id="a", tool="search_records"), Step(id="x", tool="lookup_record", after=["y"]),
        Step(id="y", tool="get_attribute", after=["x"]))})
    t = ep(case, [[SEARCH], [READ], [("get_attribute", {"record_id": "CUS-1", "attribute": "x"})]], final="one")
    assert remaining_steps(case, t) == 2
    assert workflow(case, t).observed == "2 of 3 required step(s) not done, first: 'x'"
