"""The cause-first headline and failure message of a failed run, on hand-built inputs.

Every expected string is written out by hand from the rules in grading/headline.py's docstrings:
the cause (harness limit or failure mode) first, then the unmet obligations.
"""

from __future__ import annotations

import json

import pytest

from pytest_agentfloor.grading import Grade, Verdict
from pytest_agentfloor.grading.headline import cut, failed_calls, headline, record_headline
from pytest_agentfloor.trajectory import ToolCall, Trajectory, Turn


def test_cut_joins_whitespace_and_cuts_with_an_ellipsis() -> None:
    assert cut("a  b\n\t c") == "a b c"
    assert cut("x" * 40) == "x" * 40
    assert cut("x" * 41) == "x" * 39 + "…"
    assert cut("abcdef", 4) == "abc…"
    assert cut("abc", 1) == "a…" and cut("abc", 0) == "a…"  # never an empty cut
    assert cut(12345, 3) == "12…"


def _head(**kw) -> str:
    args = {"failure_mode": None, "unmet": ["Q"], "first_unmet_text": None, "termination": None,
            "limits": [None, None, None], "turns": 0, "calls": []}
    return headline(**{**args, **kw})


@pytest.mark.parametrize("termination,limits,turns,cause", [
    ("turn_budget", [4, None, None], 3, "turn budget exhausted (3 of 4 turns)"),
    ("turn_budget", [None, 5, 100], 3, "turn budget exhausted"),
    ("turn_budget", [], 3, "turn budget exhausted"),
    ("call_limit", [4, 7, None], 3, "call limit of 7 reached"),
    ("call_limit", [4], 3, "call limit reached"),
    ("token_budget", [4, 7, 900], 3, "token budget of 900 exceeded"),
    ("token_budget", [4, 7], 3, "token budget exceeded"),
    ("truncated", [4, 7, 900], 3, "reply truncated at the completion cap"),
    ("timeout", [4, 7, 900], 3, "episode timed out"),
    ("context_limit", [4, 7, 900], 3, "prompt outgrew the context window"),
    ("infeasible", [4, 7, 900], 3, "stopped: the work left exceeds the call limit"),
])
def test_a_harness_limit_is_the_cause(termination: str, limits: list, turns: int, cause: str) -> None:
    assert _head(termination=termination, limits=limits, turns=turns, unmet=["Q", "B"]) == f"{cause} — unmet: Q, B"
    assert _head(termination=termination, limits=limits, turns=turns, failure_mode="F4", unmet=["B"]) \
        == f"{cause} (F4) — unmet: B"


@pytest.mark.parametrize("mode,cause", [
    ("F5", "resigned after working"), ("F5b", "planned without executing"), ("F6", "wrong tool"),
    ("F7", "partial completion"),
])
def test_a_failure_mode_is_the_cause_without_a_limit(mode: str, cause: str) -> None:
    assert _head(failure_mode=mode, unmet=["S", "P"], termination="final_answer") == f"{cause} ({mode}) — unmet: S, P"
    # a limit outranks these modes
    assert _head(failure_mode=mode, termination="timeout") == f"episode timed out ({mode}) — unmet: Q"


def test_a_hallucinated_or_malformed_call_outranks_the_limit_it_ran_into() -> None:
    calls = [{"name": "search_records", "raw_arguments": "{}"},
             {"name": "fetch_" + "x" * 30, "raw_arguments": "{}", "hallucinated": True, "malformed": True},
             {"name": "lookup_record", "raw_arguments": '{"record_id": ' + "9" * 50 + "}", "malformed": True}]
    assert _head(failure_mode="F1", unmet=["S"], calls=calls, termination="turn_budget", limits=[4], turns=4) \
        == "hallucinated tool fetch_xxxxxxxxxxxxxxxxx… (F1); turn budget exhausted (4 of 4 turns) — unmet: S"
    # the first malformed call, its name and its arguments cut
    assert _head(failure_mode="F2", unmet=["P"], calls=calls) \
        == "malformed call fetch_xxxxxxxxxxxxxxxxx…({}) (F2) — unmet: P"
    assert _head(failure_mode="F2", unmet=["P"], calls=calls[2:]) \
        == 'malformed call lookup_record({"record_id": ' + "9" * 25 + '…) (F2) — unmet: P'
    assert _head(failure_mode="F2", unmet=["P"], calls=[{"malformed": True}]) == "malformed call ?() (F2) — unmet: P"
    assert _head(failure_mode="F1", unmet=["S"], calls=[{"hallucinated": True}]) == "hallucinated tool ? (F1) — unmet: S"
    # the mode without the offending call (a custom cascade): the mode's name alone
    assert _head(failure_mode="F1", unmet=[], calls=calls[:1]) == "hallucinated tool (F1) — unmet: ?"
    assert _head(failure_mode="F2", calls=calls[:1], termination="call_limit", limits=[4, 6]) \
        == "malformed call (F2); call limit of 6 reached — unmet: Q"


def test_without_a_cause_the_first_unmet_obligation_leads() -> None:
    text = "Q (answer): expected the number 42; observed numbers [41.0]"
    assert _head(failure_mode="F3", unmet=["Q", "C", "B"], first_unmet_text=text) \
        == f"unmet {text} (F3) — also unmet: C, B"
    assert _head(unmet=["Q"], first_unmet_text=text) == f"unmet {text}"
    assert _head(unmet=["Q", "C"]) == "unmet Q, C — also unmet: C"
    assert _head(unmet=[], failure_mode="custom") == "unmet ? (custom)"
    long = "E (evidence): " + "word " * 40
    assert _head(unmet=["E"], first_unmet_text=long) == "unmet " + cut(long, 100)
    assert len(cut(long, 100)) == 100


def test_the_headline_is_one_line_with_controls_made_visible() -> None:
    head = _head(unmet=["Q"], first_unmet_text="Q: observed \x1b[2Jline\nnext")
    assert "\x1b" not in head and "\n" not in head and head.startswith("unmet Q: observed ")
    # a plugin's obligation codes and failure mode are text too
    assert _head(unmet=["Q", "Z\n1"], termination="timeout") == "episode timed out — unmet: Q, Z\\x0a1"
    assert _head(unmet=["Z\t1"], failure_mode="F\n9") == "unmet Z\\x091 (F\\x0a9)"
    assert failed_calls([{"result": {"status": "error", "error_type": "bad\ntype"}}]) == ["turn ?: ?() -> bad\\x0atype: "]


def _call(turn: object, status: object, **extra) -> dict:
    c = {"turn": turn, "name": "lookup_record", "raw_arguments": '{"record_id": "R-1"}', **extra}
    if status is not None:
        c["result"] = {"status": status, **({"error_type": "not_found", "message": "no record R-1"}
                                            if status == "error" else {})}
    return c


def test_failed_calls_lists_each_error_once() -> None:
    calls = [_call(0, "ok"), _call(1, None), _call(2, "error"), {"name": "x", "raw_arguments": "",
                                                                  "result": {"status": "rejected", "message": "m" * 200}}]
    assert failed_calls(calls) == [
        'turn 2: lookup_record({"record_id": "R-1"}) -> not_found: no record R-1',
        f"turn ?: x() -> rejected: {'m' * 119}…",
    ]
    assert failed_calls([{"result": {"status": "error"}}]) == ["turn ?: ?() -> error: "]


def test_failed_calls_stops_at_the_limit_and_counts_the_rest() -> None:
    calls = [_call(i, "error") for i in range(11)]
    lines = failed_calls(calls)
    assert len(lines) == 9 and lines[7].startswith("turn 7: ") and lines[8] == "... 3 more failed call(s)"
    assert failed_calls(calls, limit=2)[2:] == ["... 9 more failed call(s)"]
    assert failed_calls(calls[:8]) == failed_calls(calls)[:8] and len(failed_calls(calls[:8])) == 8


def _record(**kw) -> dict:
    traj = {"turn_budget": 4, "call_limit": 6, "token_budget": 900,
            "turns": [{"calls": [{"name": "search_records", "raw_arguments": "{}"}]}, "junk",
                      {"calls": ["junk", {"name": "fetch_all", "raw_arguments": "{}", "hallucinated": True}]},
                      {"calls": None}, {}]}
    return {"trajectory": traj, "turns": 4, **kw}


def test_record_headline_reads_a_stored_record() -> None:
    verdicts = [{"code": "A", "ok": True}, {"code": "S", "ok": False, "expected": "known tools", "observed": "fetch_all"},
                {"code": "Q", "ok": False}, "junk"]
    assert record_headline(_record(verdicts=verdicts, failure_mode="F1", termination="turn_budget")) \
        == "hallucinated tool fetch_all (F1); turn budget exhausted (4 of 4 turns) — unmet: S, Q"
    assert record_headline(_record(verdicts=verdicts, termination="final_answer")) \
        == "unmet S: expected known tools; observed fetch_all — also unmet: Q"
    assert record_headline(_record(verdicts=[{"code": "C", "ok": False}], termination="final_answer")) \
        == "unmet C: expected ; observed"  # cut() trims the empty tail
    assert record_headline(_record(termination="call_limit", verdicts=verdicts)) == "call limit of 6 reached — unmet: S, Q"
    assert record_headline(_record(termination="token_budget", verdicts=verdicts)) \
        == "token budget of 900 exceeded — unmet: S, Q"
    assert record_headline({"termination": "turn_budget", "turns": "3", "trajectory": "junk", "obligations": {}}) \
        == "turn budget exhausted — unmet: ?"


def test_record_headline_falls_back_to_obligations_and_first_unmet() -> None:
    obligations = {"A": True, "S": True, "P": False, "Q": False}
    assert record_headline({"obligations": obligations, "termination": "final_answer"}) == "unmet P, Q — also unmet: Q"
    assert record_headline({"obligations": "junk", "first_unmet": "G"}) == "unmet G"
    assert record_headline({"obligations": {"A": True}, "first_unmet": "B", "failure_mode": "F3"}) == "unmet B (F3)"
    assert record_headline({"verdicts": [{"code": "A", "ok": True}], "first_unmet": "C"}) == "unmet C"
    assert record_headline({"obligations": {"P": False}, "first_unmet": "Q"}) == "unmet P"
    assert record_headline({"termination": "turn_budget", "turns": 2, "trajectory": {"turn_budget": 3}}) \
        == "turn budget exhausted (2 of 3 turns) — unmet: ?"
    assert record_headline({"termination": "turn_budget", "trajectory": {"turn_budget": 3}}) \
        == "turn budget exhausted (0 of 3 turns) — unmet: ?"


def test_record_headline_of_an_infrastructure_error() -> None:
    assert record_headline({"infra_error": True, "error": "HTTP 503 " + "x" * 200, "failure_mode": "F1"}) \
        == "infrastructure error: HTTP 503 " + "x" * 90 + "…"
    assert record_headline({"infra_error": True}) == "infrastructure error: endpoint failed"
    assert record_headline({"infra_error": True, "error": ""}) == "infrastructure error: endpoint failed"
    assert record_headline({"infra_error": True, "error": "a\x1b[2Jb\nc"}) == "infrastructure error: a\\x1b[2Jb c"


# -- Grade.message ------------------------------------------------------------------------------
def _traj() -> Trajectory:
    bad = ToolCall(turn=0, id="c0", name="lookup_record", raw_arguments='{"record_id": "R-9"}',
                   arguments={"record_id": "R-9"},
                   result={"status": "error", "error_type": "not_found", "message": "no record R-9"})
    good = ToolCall(turn=0, id="c1", name="search_records", raw_arguments="{}", arguments={},
                    result={"status": "ok", "data": {}})
    return Trajectory(case_id="T", tier="B", variant="v0", instance="i0", run=0, model="m", tools=[],
                      turns=[Turn(index=0, calls=[bad, good]), Turn(index=1, content="done \x1b[2J")],
                      final_answer="done", termination="turn_budget", turn_budget=2, call_limit=5, token_budget=None)


def test_message_puts_the_cause_first_then_the_unmet_obligation_calls_and_trajectory() -> None:
    t = _traj()
    q = Verdict("Q", False, "the number 42", "numbers []")
    g = Grade(False, [Verdict("A", True), q, Verdict("B", False, "<= 2 turns", "turn budget used up")], q, "F4",
              "turn_limit")
    assert g.message(t) == (
        "turn budget exhausted (2 of 2 turns) (F4) — unmet: Q, B\n"
        "unmet obligation Q (answer): expected the number 42; observed numbers []\n"
        "failure mode F4 (step budget exhausted), terminal flag turn_limit\n"
        "failed calls:\n"
        '  turn 0: lookup_record({"record_id": "R-9"}) -> not_found: no record R-9\n'
        "trajectory:\n"
        + t.compact().replace("\x1b", "\\x1b"))
    assert "\x1b" not in g.message(t)


def test_message_of_a_hallucinated_call_names_it_and_lists_every_failed_call() -> None:
    t = _traj()
    t.turns[0].calls.append(ToolCall(turn=0, id="c2", name="fetch_all", raw_arguments="{}", arguments={},
                                     result={"status": "error", "error_type": "unknown_tool", "message": "no such tool"},
                                     hallucinated=True))
    s = Verdict("S", False, "known tools", "fetch_all")
    lines = Grade(False, [s], s, "F1", "turn_limit").message(t).splitlines()
    assert lines[:6] == [
        "hallucinated tool fetch_all (F1); turn budget exhausted (2 of 2 turns) — unmet: S",
        "unmet obligation S (selection): expected known tools; observed fetch_all",
        "failure mode F1 (hallucinated tool), terminal flag turn_limit",
        "failed calls:",
        '  turn 0: lookup_record({"record_id": "R-9"}) -> not_found: no record R-9',
        "  turn 0: fetch_all({}) -> unknown_tool: no such tool"]
    assert lines[6] == "trajectory:"


def test_message_without_failed_calls_and_with_a_custom_mode() -> None:
    t = _traj()
    t.turns[0].calls = t.turns[0].calls[1:]
    t.termination = "final_answer"
    c = Verdict("C7", False, "x", "y")
    msg = Grade(False, [c], c, "F9", "other").message(t)
    assert msg.splitlines()[:4] == ["unmet C7 (C7): expected x; observed y (F9)", "unmet obligation C7 (C7): expected x; "
                                    "observed y", "failure mode F9 (custom), terminal flag other", "trajectory:"]
    msg = Grade(False, [c], c, None, None).message(t)
    assert msg.splitlines()[2] == "failure mode None (custom), terminal flag None"


def test_message_of_a_passed_grade() -> None:
    assert Grade(True).message(_traj()) == "passed"
    assert Grade(False).message(_traj()) == "passed"  # nothing unmet to show (a hook's odd grade)
    assert json.dumps(Grade(True).verdicts) == "[]"
