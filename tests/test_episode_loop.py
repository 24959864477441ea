"""run_episode branch by branch: what the model is sent, what the trajectory records, why it ends.

In-process and fast, with a provider that plays back given replies, so the mutation run of
episode.py (scripts/mutation.py episode) can tell which test covers what. Every expected value
is written out by hand from the documented behaviour (docs/protocol-*.md, trajectory.py).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from pytest_agentfloor import episode
from pytest_agentfloor.episode import SYSTEM_PROMPTS, run_episode
from pytest_agentfloor.grading import remaining_steps
from pytest_agentfloor.pressure.compiler import apply_pressure
from pytest_agentfloor.pressure.menu import full_menu, operational_menu
from pytest_agentfloor.protocol import PROTOCOLS
from pytest_agentfloor.providers import endpoints
from pytest_agentfloor.providers.base import (ContextLimitError, MalformedReply, ProviderError, Reply, ToolCallOut,
                                             time_left)
from pytest_agentfloor.sandbox import Sandbox, menu
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.test_episode import REPO, b1

C1 = REPO / "cases" / "tier_C" / "C1.toml"
VENDOR = {"record_id": "VND-H4L9W", "attribute": "payment_terms"}  # B1's read: two arguments
NET45 = {"status": "ok", "data": {"record_id": "VND-H4L9W", "attribute": "payment_terms", "value": "Net 45"}}


def c1() -> Any:
    case, digest = load_case(C1)
    return resolve(case, "v0", "i0", digest)


class Model:
    """Plays back the given replies (or raises the given exceptions); keeps every request."""

    def __init__(self, *replies: Any, **attrs: Any):
        self.replies = list(replies)
        self.sent: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.deadlines: list[float | None] = []
        for k, v in attrs.items():
            setattr(self, k, v)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Any:
        self.sent.append((json.loads(json.dumps(messages)), tools))
        self.deadlines.append(time_left())
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        pass


def call(name: str, args: Any, id: str = "c") -> Reply:
    """One reply with one tool call (args: a dict, or the raw argument text)."""
    raw = args if isinstance(args, str) else json.dumps(args)
    return Reply(content=None, tool_calls=[ToolCallOut(id=id, name=name, arguments=raw)], finish_reason="tool_calls")


def calls(*specs: tuple[str, Any]) -> Reply:
    return Reply(content=None, finish_reason="tool_calls", tool_calls=[
        ToolCallOut(id=f"c{i}", name=n, arguments=a if isinstance(a, str) else json.dumps(a))
        for i, (n, a) in enumerate(specs)])


def answer(text: str = "Net 45", **usage: Any) -> Reply:
    return Reply(content=text, **usage)


def tool_messages(traj: Any) -> list[dict[str, Any]]:
    return [m for m in traj.messages if m["role"] == "tool"]


# -- what a trajectory says about itself --------------------------------------------------------
def test_the_trajectory_carries_the_item_and_the_protocol_limits() -> None:
    traj = run_episode(b1(), Model(answer()), model="m", protocol=PROTOCOLS["tbb"])
    # tbb: turns = call limit + 2; call limit = B1's two reference calls + 2; 128,000 episode tokens
    assert (traj.case_id, traj.variant, traj.instance, traj.run, traj.model) == ("B1", "v0", "i0", 0, "m")
    assert (traj.protocol, traj.turn_budget, traj.call_limit, traj.token_budget) == ("tbb", 6, 4, 128_000)
    assert traj.tools == ["search_records", "get_attribute", "lookup_record", "list_options"]
    assert (traj.distractors, traj.lane, traj.context_window) == ([], None, None)
    assert traj.turns[0].menu_size is None  # only pressure cells record the menu size
    assert traj.submissions == []


def test_a_reply_is_recorded_whole_on_its_turn() -> None:
    traj = run_episode(b1(), Model(answer(tokens_in=11, tokens_out=4, latency_s=0.5, busy_s=0.25,
                                          reasoning_tokens=3, finish_reason="stop")), model="m")
    (t,) = traj.turns
    assert (t.tokens_in, t.tokens_out, t.latency_s, t.busy_s, t.reasoning_tokens) == (11, 4, 0.5, 0.25, 3)


def test_the_default_run_number_and_wall_time_on_a_fake_clock() -> None:
    times = iter([100.0, 100.0, 100.0, 102.5])  # start, timeout check, deadline, end
    traj = run_episode(b1(), Model(answer()), model="m", clock=lambda: next(times))
    assert traj.run == 0 and traj.wall_s == 2.5


def test_the_default_timeout_is_600_seconds() -> None:
    times = iter([0.0, 600.5, 600.5])
    traj = run_episode(b1(), Model(answer()), model="m", clock=lambda: next(times))
    assert (traj.termination, traj.error) == ("timeout", "episode exceeded 600s")
    times = iter([0.0, 600.0, 600.0, 600.0])  # exactly at the limit is not over it
    assert run_episode(b1(), Model(answer()), model="m", clock=lambda: next(times)).termination == "final_answer"


def test_each_request_is_bounded_by_the_time_the_episode_has_left() -> None:
    # the fake clock says 4,000 s of a 10,000 s episode are gone: the request gets the other 6,000
    times = iter([0.0, 4000.0, 4000.0, 4000.0])
    model = Model(answer())
    run_episode(b1(), model, model="m", timeout_s=10_000, clock=lambda: next(times))
    (left,) = model.deadlines
    assert 5_000 < left <= 6_000
    assert time_left() is None  # the bound ends with the request


# -- endpoint failures ----------------------------------------------------------------------------
def test_a_context_overflow_ends_the_episode_as_a_harness_limit() -> None:
    exc = ContextLimitError("http://h", "prompt is too long", hint="raise num_ctx")
    model = Model(call("search_records", {"query": "Halvorsen"}), exc, context_window=4096)
    traj = run_episode(b1(), model, model="m")
    assert (traj.termination, traj.error) == ("context_limit", "http://h: prompt is too long; raise num_ctx")
    assert traj.context_window == 4096 and len(traj.turns) == 1
    assert len(traj.messages) == 4  # system, user, the call and its result: kept although the episode ended


def test_a_context_overflow_without_a_known_window() -> None:
    traj = run_episode(b1(), Model(ContextLimitError("http://h", "too long", hint="h")), model="m")
    assert (traj.termination, traj.context_window, traj.turns) == ("context_limit", None, [])


def test_a_provider_error_after_the_deadline_is_a_timeout() -> None:
    err = ProviderError("http://h", "read timed out", transient=True)
    times = iter([0.0, 10.0, 10.0, 700.0, 700.0])  # start, check, deadline, after the failure, end
    traj = run_episode(b1(), Model(err), model="m", clock=lambda: next(times))
    assert (traj.termination, traj.error) == ("timeout", "episode exceeded 600s (http://h: read timed out)")


def test_a_provider_error_the_deadline_cut_short_is_a_timeout_even_early() -> None:
    err = ProviderError("http://h", "read timed out", transient=True)
    err.out_of_time = True  # the retry loop gave up because the episode's time ran out
    traj = run_episode(b1(), Model(err), model="m", clock=lambda: 0.0)
    assert (traj.termination, traj.error) == ("timeout", "episode exceeded 600s (http://h: read timed out)")


def test_a_provider_error_exactly_at_the_deadline_is_the_endpoints() -> None:
    err = ProviderError("http://h", "HTTP 502", transient=True)
    times = iter([0.0, 10.0, 10.0, 600.0, 600.0])
    traj = run_episode(b1(), Model(err), model="m", clock=lambda: next(times))
    assert (traj.termination, traj.error) == ("provider_error", "http://h: HTTP 502")


# -- the context window ---------------------------------------------------------------------------
HINT = "raise the model's context window (context_window in models.toml)"


def test_the_providers_context_window_is_recorded() -> None:
    traj = run_episode(b1(), Model(answer(tokens_in=100), context_window=1000), model="m")
    assert (traj.termination, traj.context_window) == ("final_answer", 1000)


def test_a_prompt_that_fills_the_window_ends_the_episode() -> None:
    traj = run_episode(b1(), Model(answer(tokens_in=1000), context_window=1000), model="m")
    assert traj.termination == "context_limit" and traj.final_answer is None
    assert traj.error == f"turn 0: the prompt filled the 1000-token context window (1000 prompt tokens); {HINT}"


def test_the_providers_own_hint_names_its_setting() -> None:
    model = Model(answer(tokens_in=1000), context_window=1000, context_hint="raise num_ctx in models.toml")
    traj = run_episode(b1(), model, model="m")
    assert traj.error.endswith("(1000 prompt tokens); raise num_ctx in models.toml")


def test_a_reply_cut_at_the_end_of_the_window() -> None:
    # 900 prompt + 100 completion tokens reach the 1,000-token window, and the reply was cut ("length")
    model = Model(answer(tokens_in=900, tokens_out=100, finish_reason="length"), context_window=1000)
    traj = run_episode(b1(), model, model="m")
    assert traj.termination == "context_limit"
    assert traj.error == ("turn 0: the reply ran into the end of the 1000-token context window "
                          f"(900 prompt + 100 completion tokens); {HINT}")
    # the same counts with a reply that ended by itself: not cut
    done = run_episode(b1(), Model(answer(tokens_in=900, tokens_out=100), context_window=1000), model="m")
    assert done.termination == "final_answer"


def test_a_prompt_that_stops_growing_near_the_window_was_cut() -> None:
    # turn 1's prompt holds turn 0's and more messages, yet counts the same 600 of a 1,000 window
    replies = (Reply(content=None, tool_calls=[ToolCallOut(id="a", name="search_records",
                                                             arguments='{"query": "Halvorsen"}')], tokens_in=600),
               answer(tokens_in=600))
    traj = run_episode(b1(), Model(*replies, context_window=1000), model="m")
    assert (traj.termination, len(traj.turns)) == ("context_limit", 2)
    assert traj.error.startswith("turn 1: the prompt stopped growing near the 1000-token context window "
                                 "(600 then 600 tokens)")
    # the first turn has no previous prompt to compare with
    grow = (Reply(content=None, tool_calls=[ToolCallOut(id="a", name="search_records",
                                                          arguments='{"query": "Halvorsen"}')], tokens_in=600),
            Reply(content=None, tool_calls=[ToolCallOut(id="b", name="list_options",
                                                          arguments='{"category": "payment_terms"}')], tokens_in=700),
            answer(tokens_in=700))
    traj = run_episode(b1(), Model(*grow, context_window=1000), model="m")
    assert (traj.termination, len(traj.turns)) == ("context_limit", 3)  # turn 2 compared with turn 1, not turn 0
    assert traj.error.startswith("turn 2: the prompt stopped growing")


# -- truncation, tokens, turns --------------------------------------------------------------------
def test_a_truncated_reply_ends_an_episode_only_where_the_protocol_says() -> None:
    cut = Reply(content="Net", finish_reason="length")
    tbb = run_episode(b1(), Model(cut), model="m", protocol=PROTOCOLS["tbb"])
    assert (tbb.termination, tbb.final_answer, len(tbb.turns)) == ("truncated", None, 1)
    af = run_episode(b1(), Model(cut), model="m")
    assert (af.termination, af.final_answer) == ("final_answer", "Net")
    whole = run_episode(b1(), Model(answer()), model="m", protocol=PROTOCOLS["tbb"])
    assert whole.termination == "final_answer"


def test_the_turn_budget_ends_an_aimless_episode() -> None:
    # B1 is tier B: a step budget of four turns under agentfloor
    aimless = [call("list_options", {"category": f"x{t}"}) for t in range(4)]
    traj = run_episode(b1(), Model(*aimless), model="m")
    assert (traj.termination, len(traj.turns), traj.error) == ("turn_budget", 4, None)


# -- tool calls -----------------------------------------------------------------------------------
def test_a_tool_call_with_no_message_text_sends_an_empty_content() -> None:
    model = Model(call("get_attribute", VENDOR), answer())
    traj = run_episode(b1(), model, model="m")
    assert model.sent[1][0][2]["content"] == ""
    assert traj.calls[0].result == NET45 and traj.calls[0].arguments == VENDOR
    assert not (traj.calls[0].malformed or traj.calls[0].hallucinated or traj.calls[0].distractor)


def test_repetition_is_the_same_tool_with_the_same_arguments_in_any_key_order() -> None:
    reordered = json.dumps({"attribute": "payment_terms", "record_id": "VND-H4L9W"})
    model = Model(call("get_attribute", VENDOR), call("get_attribute", reordered),
                  call("get_attribute", {"record_id": "VND-H4L9W", "attribute": "region"}),
                  call("lookup_record", {"record_id": "VND-H4L9W"}))
    traj = run_episode(b1(), model, model="m")
    assert [c.repeated for c in traj.calls] == [False, True, False, False]
    assert all(c.ok for c in traj.calls)


def test_a_different_tool_with_the_same_arguments_is_no_repeat() -> None:
    args = {"query": "Halvorsen"}
    # search_records and a hallucinated tool of the same arguments; the second search repeats the first
    model = Model(call("search_records", args), call("find_records", args), call("search_records", args), answer())
    traj = run_episode(b1(), model, model="m")
    assert [(c.name, c.ok, c.repeated) for c in traj.calls] == [
        ("search_records", True, False), ("find_records", False, False), ("search_records", True, True)]


def test_a_failed_call_is_never_what_a_later_call_repeats() -> None:
    bad = {"record_id": "VND-NOPE", "attribute": "payment_terms"}
    model = Model(call("get_attribute", bad), call("get_attribute", bad), answer())
    traj = run_episode(b1(), model, model="m")
    assert [c.repeated for c in traj.calls] == [False, False]


def test_refused_arguments_are_an_invalid_call_with_the_reason() -> None:
    # valid JSON the sandbox will not read (NaN): an error result the model can learn from
    model = Model(call("get_attribute", '{"record_id": NaN, "attribute": "payment_terms"}'),
                  call("get_attribute", '{"record_id": NaN, "attribute": "payment_terms"}'), answer())
    traj = run_episode(b1(), model, model="m")
    first = traj.calls[0]
    assert first.result == {"status": "error", "error_type": "invalid_arguments",
                            "message": "NaN is not a number the tools accept",
                            "hint": "check the tool's parameter schema"}
    assert (first.arguments, first.malformed, first.hallucinated, first.repeated) == (None, True, False, False)
    assert not traj.calls[1].repeated
    assert json.loads(tool_messages(traj)[0]["content"]) == first.result


def test_refused_arguments_to_an_unknown_tool_are_a_hallucination_too() -> None:
    traj = run_episode(b1(), Model(call("delete_vendor", '{"id": Infinity}'), answer()), model="m")
    assert (traj.calls[0].hallucinated, traj.calls[0].malformed) == (True, True)
    assert traj.calls[0].result["error_type"] == "invalid_arguments"


def test_arguments_the_schema_rejects_make_a_malformed_call() -> None:
    traj = run_episode(b1(), Model(call("get_attribute", {"record_id": "VND-H4L9W"}), answer()), model="m")
    c = traj.calls[0]
    assert c.result["error_type"] == "invalid_arguments" and c.malformed and c.arguments == {"record_id": "VND-H4L9W"}


def test_non_json_arguments_under_agentfloor_are_an_error_result_and_the_turn_goes_on() -> None:
    # two calls in one turn: the unreadable one gets an error, the next one still runs
    model = Model(calls(("get_attribute", '{"record_id": '), ("get_attribute", VENDOR)), answer())
    traj = run_episode(b1(), model, model="m")
    bad, good = traj.calls
    expected = {"status": "error", "error_type": "malformed_call", "message": "arguments are not a JSON object",
                "hint": ""}
    assert (bad.malformed, bad.hallucinated, bad.arguments, bad.result) == (True, False, None, expected)
    assert good.ok and not good.malformed
    assert tool_messages(traj) == [
        {"role": "tool", "tool_call_id": "c0", "name": "get_attribute", "content": json.dumps(expected, sort_keys=True)},
        {"role": "tool", "tool_call_id": "c1", "name": "get_attribute", "content": json.dumps(NET45, sort_keys=True)}]
    assert traj.termination == "final_answer"


def test_json_that_is_not_an_object_is_a_malformed_call() -> None:
    traj = run_episode(b1(), Model(call("nonexistent_tool", "[1, 2]"), answer()), model="m")
    assert (traj.calls[0].malformed, traj.calls[0].hallucinated) == (True, True)
    assert traj.calls[0].result["error_type"] == "malformed_call"


def test_non_json_arguments_end_a_tbb_episode_at_that_call() -> None:
    model = Model(calls(("get_attribute", "{oops"), ("get_attribute", VENDOR)), answer())
    traj = run_episode(b1(), model, model="m", protocol=PROTOCOLS["tbb"])
    assert (traj.termination, len(traj.calls), traj.calls[0].malformed) == ("malformed_call", 1, True)
    assert tool_messages(traj) == []  # the episode ended before a result was sent
    assert len(model.sent) == 1


def test_a_tool_that_crashes_gives_the_model_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(self: Sandbox, name: str, args: dict[str, Any]) -> Any:
        raise KeyError(name)

    monkeypatch.setattr(episode.Sandbox, "call", crash)
    traj = run_episode(b1(), Model(call("get_attribute", VENDOR), answer()), model="m")
    assert traj.calls[0].result == {"status": "error", "error_type": "tool_error",
                                    "message": "get_attribute failed (KeyError)", "hint": ""}
    assert not traj.calls[0].malformed and traj.termination == "final_answer"


# -- the call limit and the infeasibility stop ----------------------------------------------------
def test_the_call_limit_allows_exactly_its_calls() -> None:
    # tbb on B1: a call limit of 4; the fifth call is refused and ends the episode
    five = calls(*[("list_options", {"category": f"x{i}"}) for i in range(5)])
    traj = run_episode(b1(), Model(five), model="m", protocol=PROTOCOLS["tbb"])
    assert (traj.termination, len(traj.calls)) == ("call_limit", 5)
    assert [c.ok or c.result.get("status") == "not_found" for c in traj.calls[:4]] == [True] * 4
    assert traj.calls[4].result == {"status": "error", "error_type": "call_limit",
                                    "message": "call limit of 4 reached", "hint": ""}
    four = calls(*[("list_options", {"category": f"x{i}"}) for i in range(4)])
    traj = run_episode(b1(), Model(four, answer()), model="m", protocol=PROTOCOLS["tbb"])
    assert traj.termination == "final_answer" and len(traj.calls) == 4


def test_calls_add_up_across_turns_towards_the_limit() -> None:
    replies = [calls(("list_options", {"category": f"a{t}"}), ("list_options", {"category": f"b{t}"}))
               for t in range(3)]
    proto = dataclasses.replace(PROTOCOLS["tbb"], infeasibility_stop=False)
    traj = run_episode(b1(), Model(*replies), model="m", protocol=proto)
    assert (traj.termination, len(traj.turns), len(traj.calls)) == ("call_limit", 3, 5)


def test_non_json_arguments_do_not_count_towards_the_call_limit() -> None:
    # agentfloor's malformed handling with a call limit: five unreadable calls, then four good ones
    proto = dataclasses.replace(PROTOCOLS["tbb"], malformed_stop=False, infeasibility_stop=False)
    replies = calls(*[("list_options", "{")] * 5, *[("list_options", {"category": f"x{i}"}) for i in range(4)])
    traj = run_episode(b1(), Model(replies, answer()), model="m", protocol=proto)
    assert traj.termination == "final_answer" and len(traj.calls) == 9


def stall(n: int, progress: bool = False) -> list[Reply]:
    """n turns of one useless call each (after one useful search, with progress)."""
    useless = [call("list_options", {"category": f"x{t}"}) for t in range(n)]
    return ([call("search_records", {"query": "Halvorsen"})] if progress else []) + useless


def test_the_infeasibility_stop_comes_when_the_required_calls_no_longer_fit() -> None:
    # legacy on B1: 4 turns, 4 calls, 2 required calls (find, read). After k useless calls the
    # required 2 no longer fit into 4 - k once k = 3: the episode stops after the third turn
    traj = run_episode(b1(), Model(*stall(4)), model="m", protocol=PROTOCOLS["legacy"],
                       remaining_steps=remaining_steps)
    assert (traj.termination, len(traj.turns)) == ("infeasible", 3)


def test_no_infeasibility_stop_on_the_last_turn() -> None:
    # a search (1 required call left), then useless calls: 1 > 4 - 4 only after the last turn, where
    # the turn budget, not the infeasibility stop, ends the episode
    traj = run_episode(b1(), Model(*stall(3, progress=True)), model="m", protocol=PROTOCOLS["legacy"],
                       remaining_steps=remaining_steps)
    assert (traj.termination, len(traj.turns)) == ("turn_budget", 4)


def test_the_infeasibility_stop_only_where_the_protocol_has_one_and_a_counter_is_given() -> None:
    no_stop = dataclasses.replace(PROTOCOLS["legacy"], infeasibility_stop=False)
    traj = run_episode(b1(), Model(*stall(4)), model="m", protocol=no_stop, remaining_steps=remaining_steps)
    assert (traj.termination, len(traj.turns)) == ("turn_budget", 4)
    traj = run_episode(b1(), Model(*stall(4)), model="m", protocol=PROTOCOLS["legacy"])
    assert (traj.termination, len(traj.turns)) == ("turn_budget", 4)
    af = run_episode(b1(), Model(*stall(4)), model="m", remaining_steps=remaining_steps)
    assert (af.termination, len(af.turns)) == ("turn_budget", 4)


def test_the_counter_sees_the_case_and_the_trajectory_so_far() -> None:
    seen: list[tuple[str, int]] = []

    def counter(case: Any, traj: Any) -> int:
        seen.append((case.id, len(traj.calls)))
        return 0

    run_episode(b1(), Model(*stall(2), answer()), model="m", protocol=PROTOCOLS["legacy"], remaining_steps=counter)
    assert seen == [("B1", 1), ("B1", 2)]


# -- submissions ----------------------------------------------------------------------------------
def test_an_accepted_submission_ends_a_case_that_needs_no_answer() -> None:
    read = call("get_attribute", {"record_id": "ACR-T5W3N", "attribute": "risk_score"})
    submit = call("submit_decision", {"decision": "escalate", "record_id": "ACR-T5W3N"})
    traj = run_episode(c1(), Model(read, submit, answer("done")), model="m")
    assert (traj.termination, len(traj.turns)) == ("submitted", 2)
    assert len(traj.submissions) == 1 and traj.submissions[0]["decision"] == "escalate"


def test_a_submission_does_not_end_a_case_that_needs_an_answer() -> None:
    plain = c1()  # C1 with an answer check too (B1's), so it needs an answer besides the decision
    case = plain.model_copy(update={"gold": plain.gold.model_copy(update={"answer": b1().gold.answer})})
    assert case.needs_answer
    submit = call("submit_decision", {"decision": "escalate", "record_id": "ACR-T5W3N"})
    traj = run_episode(case, Model(submit, answer("escalated")), model="m")
    assert (traj.termination, traj.final_answer, len(traj.submissions)) == ("final_answer", "escalated", 1)


# -- pressure cells -------------------------------------------------------------------------------
def pressured(lane: str = "fixed", encoding: str = "raw") -> Any:
    return apply_pressure(b1(), size=8, lane=lane, encoding=encoding)


def test_a_pressure_cell_shows_its_whole_menu_and_records_it() -> None:
    case = pressured()
    pc = case.pressure
    distractors = [n for n in pc.menu if n not in pc.offered]
    model = Model(answer())
    traj = run_episode(case, model, model="m")
    assert model.sent[0][1] == full_menu(pc) and len(model.sent[0][1]) == 8
    assert (traj.distractors, traj.lane, traj.turns[0].menu_size) == (distractors, "fixed", 8)
    assert traj.tools == list(pc.offered) and len(distractors) == 4


def test_a_call_to_a_distractor_gets_a_useless_result() -> None:
    case = pressured()
    name = "marketing_get_campaign"
    assert name in case.pressure.menu and name not in case.pressure.offered
    traj = run_episode(case, Model(call(name, {"campaign_id": "X"}), answer()), model="m")
    c = traj.calls[0]
    assert (c.distractor, c.hallucinated, c.malformed) == (True, False, False)
    assert c.result == {"status": "not_found", "error_type": "not_found",
                        "message": "no such item in the marketing system", "hint": ""}


def test_unreadable_arguments_to_a_distractor_are_no_hallucination() -> None:
    traj = run_episode(pressured(), Model(call("marketing_get_campaign", "{"), answer()), model="m")
    assert (traj.calls[0].malformed, traj.calls[0].hallucinated) == (True, False)


def test_the_cells_encoding_shapes_every_tool_result() -> None:
    traj = run_episode(pressured(encoding="compact"), Model(call("get_attribute", VENDOR), answer()), model="m")
    content = tool_messages(traj)[0]["content"]
    assert content.startswith('{"status":"ok","keys":{') and '"Net 45"' in content
    assert traj.calls[0].result == NET45  # the record keeps the raw result


def test_the_routed_lane_narrows_the_menu_after_the_first_executed_operational_call() -> None:
    case = pressured(lane="routed")
    pc = case.pressure
    model = Model(call("marketing_get_campaign", {"campaign_id": "X"}),  # a distractor: no narrowing
                  call("get_attribute", {"record_id": "VND-H4L9W"}),  # refused by the schema: none either
                  call("get_attribute", VENDOR),  # executed: the menu narrows
                  answer())
    traj = run_episode(case, model, model="m")
    sent = [tools for _, tools in model.sent]
    assert sent[:3] == [full_menu(pc)] * 3 and sent[3] == operational_menu(pc)
    assert [t.menu_size for t in traj.turns] == [8, 8, 8, 4]
    assert traj.lane == "routed"


def test_a_not_found_result_is_still_an_executed_call_on_the_routed_lane() -> None:
    case = pressured(lane="routed")
    model = Model(call("lookup_record", {"record_id": "VND-NOPE"}), answer())
    run_episode(case, model, model="m")
    assert model.sent[1][1] == operational_menu(case.pressure)


def test_the_fixed_lane_never_narrows() -> None:
    case = pressured()
    model = Model(call("get_attribute", VENDOR), answer())
    run_episode(case, model, model="m")
    assert model.sent[1][1] == full_menu(case.pressure)


def test_without_pressure_the_menu_is_the_cases_tools() -> None:
    model = Model(call("get_attribute", VENDOR), answer())
    run_episode(b1(), model, model="m", system_prompt="explicit_submission")
    assert model.sent[0][1] == model.sent[1][1] == menu(b1().tools)
    assert model.sent[0][0][0] == {"role": "system", "content": SYSTEM_PROMPTS["explicit_submission"]}


# -- where each turn was served (endpoint pools) and the time held by Retry-After -----------------
class ServedBy(Model):
    """A Model whose requests note the endpoint that served them and the seconds held, as providers do."""

    def __init__(self, *plays: tuple[str | None, float, Any]):
        super().__init__(*[reply for _, _, reply in plays])
        self.plays = [(url, held) for url, held, _ in plays]

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Any:
        url, held = self.plays.pop(0)
        if url is not None:
            endpoints.note_served(url)
        endpoints.note_waited(held)
        return super().complete(messages, tools, case=case)


def test_each_turn_names_its_endpoint_and_the_episode_sums_the_time_held() -> None:
    traj = run_episode(b1(), ServedBy(("http://a/v1", 0.1234564, call("get_attribute", VENDOR)),
                                      (None, 0.0, call("get_attribute", {**VENDOR, "attribute": "x"})),
                                      ("http://b/v1", 1.0000004, answer())), model="m")
    # a turn whose request named no endpoint does not inherit the previous turn's
    assert [t.endpoint for t in traj.turns] == ["http://a/v1", None, "http://b/v1"]
    assert traj.endpoint_wait_s == 1.123457  # 1.1234568 s held in all, rounded to the microsecond


def test_a_malformed_reply_still_names_the_endpoint_that_sent_it() -> None:
    traj = run_episode(b1(), ServedBy(("http://a/v1", 0.0, call("get_attribute", VENDOR)),
                                      ("http://b/v1", 0.0, MalformedReply("not a call"))), model="m")
    assert traj.termination == "malformed_call"
    assert [(t.finish_reason, t.endpoint) for t in traj.turns][-1] == ("malformed", "http://b/v1")
    assert traj.endpoint_wait_s == 0.0
