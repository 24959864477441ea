"""The public handoffs and the public-handoff controller.

* the compiler's handoffs: every record of the reference chain names the next one, the last an
  empty handoff, other records none, and every encoding delivers the handoff as it is;
* the controller's decision rule (handoffs.next_step) on valid, empty and invalid handoffs;
* the audit seed 002 asks for: in real episodes the controller follows the handoffs, its calls do
  not change when the hidden program (reference, required steps, gold) is perturbed while the
  public surface stays, and it stops safely (no call, the model asked again) on an invalid or
  empty handoff, over every family cell and every 30-call frontier cell.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.grading import grade
from pytest_agentfloor.handoffs import READ_TOOLS, call_key, next_step
from pytest_agentfloor.pressure.encoding import decode
from pytest_agentfloor.protocol import PROTOCOLS
from pytest_agentfloor.providers.base import Reply, ToolCallOut
from pytest_agentfloor.sandbox.schemas import TOOL_SCHEMAS

from .helpers import entries, families, frontier_families, play

CAPACITY = entries()
FRONTIER = entries(frontier=True)
MENU = [TOOL_SCHEMAS[n] for n in ("search_records", "lookup_record", "get_attribute", "submit_decision")]


def ok(handoff: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "ok", "data": {"id": "A"}, **extra}
    if handoff is not None:
        out["next_handoff"] = handoff
    return out


def read(rid: str) -> dict[str, Any]:
    return {"tool": "lookup_record", "arguments": {"record_id": rid}}


def test_the_controller_follows_a_valid_handoff() -> None:
    step = next_step(ok(read("B")), MENU, set(), None)
    assert (step.tool, step.arguments, step.stop) == ("lookup_record", {"record_id": "B"}, None)
    step = next_step(ok({"tool": "get_attribute", "arguments": {"record_id": "B", "attribute": "x"}}), MENU, set(), 1)
    assert step.tool == "get_attribute"


@pytest.mark.parametrize(("result", "stop"), [
    ({"status": "ok", "data": {}}, "absent"),                                         # nothing to follow
    ({"status": "not_found", "next_handoff": read("B")}, "absent"),                   # a failed call's block
    (ok({}), "empty"), ({"status": "ok", "next_handoff": None}, "empty"),             # the chain ends
    (ok({"tool": "submit_decision", "arguments": {"decision": "x"}}), "invalid"),     # never a change of state
    (ok({"tool": "delete_everything", "arguments": {}}), "invalid"),                  # not on the menu
    (ok({"tool": "lookup_record", "arguments": "B"}), "invalid"),                     # arguments not an object
    (ok({"tool": "lookup_record", "arguments": {}}), "invalid"),                      # a required argument missing
    (ok({"tool": "lookup_record", "arguments": {"record_id": "B", "x": 1}}), "invalid"),  # an unknown argument
    (ok({"tool": "lookup_record", "arguments": {"record_id": True}}), "invalid"),     # the wrong type
    (ok({"tool": "lookup_record", "arguments": {"record_id": "B"}, "then": "C"}), "invalid"),  # extra keys
    (ok("lookup_record B"), "invalid"), (ok([read("B")]), "invalid"),
])
def test_the_controller_stops_on_an_absent_empty_or_invalid_handoff(result: dict[str, Any], stop: str) -> None:
    step = next_step(result, MENU, set(), 5)
    assert (step.tool, step.stop) == (None, stop)


def test_the_controller_stops_on_a_loop_and_at_the_call_limit() -> None:
    assert next_step(ok(read("B")), MENU, {call_key("lookup_record", {"record_id": "B"})}, 5).stop == "loop"
    assert next_step(ok(read("B")), MENU, set(), 0).stop == "limit"
    narrowed = [t for t in MENU if t["function"]["name"] != "lookup_record"]  # a tool no longer shown
    assert next_step(ok(read("B")), narrowed, set(), 5).stop == "invalid"
    assert READ_TOOLS == {"search_records", "lookup_record", "get_attribute"}


@pytest.mark.parametrize("entry", CAPACITY, ids=lambda e: e.id)
def test_every_chain_record_hands_off_to_the_next_and_encodings_keep_the_handoff(entry: Any) -> None:
    for v, lane in entry.specs[::2]:
        case = entry.resolve(v, lane)
        traj, g = play(case)
        assert g.passed
        reads = [c for c in traj.calls if c.name == "lookup_record"]
        chain = [c.arguments["record_id"] for c in reads]
        assert [c.result["next_handoff"] for c in reads] == [
            {"tool": "lookup_record", "arguments": {"record_id": n}} for n in chain[1:]] + [{}]
        assert all("next_handoff" not in c.result for c in traj.calls if c.name != "lookup_record")
        for c in reads:  # the model reads the same handoff under every encoding
            msg = next(m for m in traj.messages if m.get("tool_call_id") == c.id)
            assert decode(msg["content"], case.pressure.encoding)["next_handoff"] == c.result["next_handoff"]
    subject = families()[entry.id][1].subject.id
    low = entry.resolve("V8-low-raw", "fixed").pressure.public_result(
        "lookup_record", {}, {"status": "ok", "data": {"id": subject}})
    assert low["next_handoff"] == {}  # low workflow: the subject is the whole chain
    decoy = families()[entry.id][1].others[0].id if families()[entry.id][1].others else None
    if decoy:
        assert "next_handoff" not in entry.resolve("V8-high-raw", "fixed").pressure.public_result(
            "lookup_record", {}, {"status": "ok", "data": {"id": decoy}})


class Script:
    """A fixed model: the same public moves whatever the case holds (no access to its program)."""

    def __init__(self, moves: list[Any]):
        self.moves = moves
        self.requests: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Reply:
        self.requests.append(json.loads(json.dumps(messages)))
        n = len(self.requests) - 1
        move = self.moves[n] if n < len(self.moves) else "I have read what the handoffs named."
        if isinstance(move, str):
            return Reply(content=move, tokens_in=100, tokens_out=10)
        name, args = move
        return Reply(content=None, tool_calls=[ToolCallOut(id=f"m{n}", name=name, arguments=json.dumps(args))],
                     finish_reason="tool_calls", tokens_in=100, tokens_out=10)

    def close(self) -> None:
        pass


def _controlled(case: Any, moves: list[Any]) -> tuple[Any, Script]:
    provider = Script(moves)
    traj = run_episode(case, provider, model="m", protocol=PROTOCOLS["tbb"], repairs=("controller",))
    return traj, provider


def _perturbed(case: Any) -> Any:
    """The hidden program changed, the public surface (request, menu, records, handoffs) kept."""
    gold = case.gold.model_copy(update={"evidence": list(reversed(case.gold.evidence)) + ["ZZZZ-0000"],
                                        "submission": {"decision": "something else", "record_id": "ZZZZ-0000"}})
    return case.model_copy(update={"reference": tuple(reversed(case.reference)), "steps": case.steps[:1],
                                   "gold": gold})


def _controller_calls(traj: Any) -> list[tuple[str, str]]:
    return [(c.name, c.raw_arguments) for t in traj.turns if t.controller for c in t.calls]


def _moves(entry: Any, case: Any) -> list[Any]:
    if case.pressure.calls is not None:  # a frontier cell: the request names the start
        return [("lookup_record", {"record_id": case.pressure.handoffs[0][0]})]
    fam = families()[entry.id][1]
    return [("search_records", {"query": fam.search}), ("lookup_record", {"record_id": fam.subject.id})]


@pytest.mark.parametrize("entry", CAPACITY + FRONTIER, ids=lambda e: e.id)
def test_the_controller_follows_the_handoffs_and_never_depends_on_the_hidden_program(entry: Any) -> None:
    for v, lane in entry.specs:
        if lane != "fixed":
            continue
        case = entry.resolve(v, lane)
        traj, provider = _controlled(case, _moves(entry, case))
        chain = [rid for rid, _ in case.pressure.handoffs]
        issued = _controller_calls(traj)
        # it follows the chain past the record the model read, as far as the call limit allows
        want = [("lookup_record", json.dumps({"record_id": rid})) for rid in chain[1:]]
        room = case.call_limit - sum(1 for t in traj.turns if not t.controller for _ in t.calls)
        assert issued == want[:room], (v, issued)
        assert traj.controller_stops and traj.controller_stops[-1] in ("empty", "limit")
        assert len(traj.requests) == len(provider.requests) == len(_moves(entry, case)) + 1
        again, provider2 = _controlled(_perturbed(case), _moves(entry, case))
        assert _controller_calls(again) == issued and again.controller_stops == traj.controller_stops
        assert provider2.requests == provider.requests  # the model saw exactly the same transcript


def test_the_controller_completes_the_frontier_where_the_model_loop_meets_the_budget() -> None:
    for entry in FRONTIER:
        case = entry.resolve("calls30", "fixed")
        plain, g = play(case)
        assert (g.passed, plain.termination, g.terminal_flag) == (False, "token_budget", "budget")
        assert len(plain.calls) < case.call_limit  # the budget fired before the call limit
        from pytest_agentfloor.config import ModelConfig
        from pytest_agentfloor.providers.scripted import ScriptedProvider

        oracle = ScriptedProvider(ModelConfig(name="o", provider="scripted", policy="oracle", repairs=["controller"]))
        traj = run_episode(case, oracle, model="o", protocol=PROTOCOLS["tbb"], repairs=("controller",))
        assert grade(case, traj).passed and len(traj.requests) == 2 and len(traj.calls) == 30


@pytest.mark.parametrize("bad", [{"tool": "submit_decision", "arguments": {"decision": "flag"}},
                                 {"tool": "lookup_record", "arguments": {"id": "x"}}, "next", {}])
def test_the_controller_stops_safely_on_an_invalid_or_empty_handoff_in_every_30_call_cell(
        bad: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agentfloor.pressure.cell import PressureCell

    def broken(self: Any, name: str, args: Any, result: dict[str, Any]) -> dict[str, Any]:
        return {**result, "next_handoff": bad} if result.get("status") == "ok" else result

    monkeypatch.setattr(PressureCell, "public_result", broken)
    for entry in FRONTIER:
        case = entry.resolve("calls30", "fixed")
        start = frontier_families()[entry.id]
        traj, provider = _controlled(case, _moves(entry, case))
        assert _controller_calls(traj) == [] and traj.controller_stops == ["empty" if bad == {} else "invalid"]
        assert not traj.submissions and len(traj.calls) == 1  # no state changed, nothing guessed
        assert len(provider.requests) == 2 and traj.termination == "final_answer"  # the model was asked again
        assert start.final.id not in json.dumps(provider.requests[-1])
