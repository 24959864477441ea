"""In-process scripted policies: the oracle and one policy per failure mode.

They exist to test the harness and the graders (every case must pass under the oracle, every
fault policy must be classified as intended). They are never a stand-in for a model provider.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..memo import PerObject
from .base import Reply, ToolCallOut

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..suite.schema import ResolvedCase

Call = tuple[str, dict[str, Any]]
Policy = Callable[["ResolvedCase", int], "list[Call] | str"]


def _reference(case: "ResolvedCase") -> list[list[Call] | str]:
    out: list[list[Call] | str] = []
    for t in case.reference:
        if t.calls:
            out.append([(c.tool, dict(c.args)) for c in t.calls])
        else:
            out.append(t.final or "")
    return out


#: the reference solution's turns, read-only: made once per case object (every run of a case, every turn
#: of an episode asks for them; an instant model must not cost the harness's per-item budget)
_ref_turns: "PerObject[ResolvedCase, list[list[Call] | str]]" = PerObject(_reference)
#: a call's arguments as the model's JSON text, once per arguments object (the reference's are read-only)
_arguments_text: "PerObject[dict[str, Any], str]" = PerObject(json.dumps)
#: whether a case type answers for itself (scripted_output): asked per reply, a missing attribute of a
#: pydantic model class costs an exception each time
_answers_itself: "PerObject[type, bool]" = PerObject(lambda kind: callable(getattr(kind, "scripted_output", None)))


def _final_text(case: "ResolvedCase") -> str:
    for t in reversed(case.reference):
        if t.final is not None:
            return t.final
    return "Done."


def _call_turns(case: "ResolvedCase", *, with_submit: bool = True) -> list[list[Call]]:
    turns = []
    for t in case.reference:
        calls = [(c.tool, dict(c.args)) for c in t.calls if with_submit or c.tool != "submit_decision"]
        if calls:
            turns.append(calls)
    return turns


def _explore(case: "ResolvedCase", *, avoid: AbstractSet[str] = frozenset()) -> Iterator[Call]:
    """Distinct, valid calls to exposed tools (never a submission): busy work without progress."""
    tools = [t for t in case.tools if t != "submit_decision" and t not in avoid]
    fx = case.fixtures
    for rec in fx.records:
        for tool in tools:
            if tool == "lookup_record":
                yield tool, {"record_id": rec.id}
            elif tool == "get_attribute":
                for field in rec.fields:
                    yield tool, {"record_id": rec.id, "attribute": field}
            elif tool == "search_records":
                yield tool, {"query": rec.name or rec.id}
            elif tool == "check_constraint":
                for con in fx.constraints:
                    yield tool, {"record_id": rec.id, "constraint": con.name}
    ids = [r.id for r in fx.records]
    for tool in tools:
        if tool == "compare_records":  # every pair of records on every numeric field
            for i, a in enumerate(fx.records):
                for field, value in a.fields.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        for b in ids[i + 1:]:
                            yield tool, {"record_ids": [a.id, b], "attribute": field}
    for tool in tools:
        if tool == "list_options":
            for cat in fx.options:
                yield tool, {"category": cat}
        elif tool == "compute_value":
            for n in range(1, 50):
                yield tool, {"operation": "sum", "operands": [1, n]}
        elif tool == "search_records":
            for n in range(1, 50):
                yield tool, {"query": f"record {n}"}


def _nth(it: Iterator[Call], n: int) -> list[Call]:
    for i, call in enumerate(it):
        if i == n:
            return [call]
    return [("search_records", {"query": f"anything {n}"})]


def oracle(case: "ResolvedCase", t: int) -> "list[Call] | str":
    ref = _ref_turns(case)
    return ref[t] if t < len(ref) else _final_text(case)


def hallucinate(case: "ResolvedCase", t: int) -> "list[Call] | str":
    return [("fetch_all_records", {"scope": "everything"})] if t == 0 else oracle(case, t - 1)


def malformed(case: "ResolvedCase", t: int) -> "list[Call] | str":
    turns = _call_turns(case)
    name = turns[0][0][0] if turns else "lookup_record"
    return [(name, "{\"record_id\": ")]  # type: ignore[list-item]


def exhaust(case: "ResolvedCase", t: int) -> "list[Call] | str":
    turns = _call_turns(case, with_submit=False)
    return turns[t] if t < len(turns) else _nth(_explore(case), t - len(turns))


def resign(case: "ResolvedCase", t: int) -> "list[Call] | str":
    """Engage (the first reference call and one busy-work call, in one turn so that it fits even
    tier A's two turns), then give up in text."""
    turns = _call_turns(case, with_submit=False)
    flat = [turns[0][0]] if turns else []
    required = {name for s in case.steps for name in s.tools}
    extra = (c for c in [*_explore(case, avoid=required), *_explore(case)]
             if c not in [x for turn in turns for x in turn])
    flat += list(itertools.islice(extra, max(0, 2 - len(flat))))  # a case without tools has no busy work
    return flat if t == 0 and flat else "I was not able to finish this task."


def plan_only(case: "ResolvedCase", t: int) -> "list[Call] | str":
    return ("Plan: first I will search the records, then read the relevant attributes, "
            "then check them and record the decision.")


def wrong_tool(case: "ResolvedCase", t: int) -> "list[Call] | str":
    """Use a tool no required step needs, then deliver the reference outcome anyway."""
    required = {name for s in case.steps for name in s.tools}
    submits = [c for turn in _call_turns(case) for c in turn if c[0] == "submit_decision"]
    if t == 0:
        calls = _nth(_explore(case, avoid=required), 0)
        if calls[0][0] in case.tools:
            return calls
    if t <= 1 and submits:
        return submits[:1]
    return _final_text(case)


def partial(case: "ResolvedCase", t: int) -> "list[Call] | str":
    turns = _call_turns(case)
    plain = [i for i, turn in enumerate(turns) if all(c[0] != "submit_decision" for c in turn)]
    if plain:
        del turns[plain[-1]]
    return turns[t] if t < len(turns) else _final_text(case)


def repeat(case: "ResolvedCase", t: int) -> "list[Call] | str":
    """The oracle, except that the first turn sends its first call twice (so it uses no extra turn):
    a right run whose only fault is one repeat, which agentfloor passes unless the case declares
    repeats at a threshold of 2, and tbb fails (C)."""
    ref = _ref_turns(case)
    if t == 0 and ref and not isinstance(ref[0], str) and ref[0]:
        return [ref[0][0], *ref[0]]
    return oracle(case, t)


def always_refuse(case: "ResolvedCase", t: int) -> "list[Call] | str":
    return "I can't do that."


POLICIES: dict[str, Policy] = {
    "oracle": oracle, "hallucinate": hallucinate, "malformed": malformed, "exhaust": exhaust,
    "resign": resign, "plan_only": plan_only, "wrong_tool": wrong_tool, "partial": partial, "repeat": repeat,
    # call-site degenerate policies (call-site cases answer from callsite.policies);
    # on a ladder case the over-actuator does the work and the refuser declines at once
    "over_actuate": oracle, "always_refuse": always_refuse,
    # pressure: the oracle, except that a large menu (more than 32 schemas) takes more thought than a
    # 1,024-token cap holds (MENU_SHY_TOKENS per schema) on most cases (those whose id hashes to a
    # nonzero residue mod 4): it exhausts the cap before any call, unless the cap is larger (the cap
    # sweep) or the router narrowed the menu first
    "menu_shy": oracle,
    # repairs (harness_repairs.py): the oracle, except where the repair's instruction is missing from
    # the system prompt it is shown; what each does then is in `repair_shy_action`
    "workflow_shy": oracle, "guide_shy": oracle,
}
MENU_SHY_LIMIT = 32
#: the policies repair_shy_action may divert from the oracle
REPAIR_SHY = frozenset({"workflow_shy", "guide_shy"})
#: completion tokens menu_shy spends reading each schema of a large menu before its first call
MENU_SHY_TOKENS = 24


def repair_shy_action(policy: str, case: "ResolvedCase", t: int,
                      messages: list[dict[str, Any]]) -> "list[Call] | str | None":
    """What a repair-shy policy does instead of the oracle's move, or None to play the oracle.

    workflow_shy: on a workflow of more than three reference calls, it submits from its third turn on
    while dependent reads are still to be made (skipping them) unless the system prompt holds the
    workflow prompt's verification instruction; reads someone else made (the public-handoff
    controller) are not skipped. guide_shy: once a tool result it read was compact or typed, it
    gives up in plain text unless the system prompt holds the interface guide (canonical delivery
    rescues it too: it then reads raw records). Both read only what a model reads: the messages."""
    from ..harness_repairs import INTERFACE_GUIDE, WORKFLOW_SENTENCE

    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    ref = _ref_turns(case)
    if policy == "workflow_shy" and WORKFLOW_SENTENCE not in system:
        if sum(len(x) for x in ref if not isinstance(x, str)) > 3 and 2 <= t < len(ref) - 1:
            return ref[-1]
    if policy == "guide_shy" and INTERFACE_GUIDE not in system:
        tool_text = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
        if any('"keys":' in c or '"type": "object"' in c for c in tool_text):
            return "I cannot read these records."
    return None


def menu_shy_need(case: "ResolvedCase", n_tools: int) -> int:
    """Completion tokens menu_shy spends before its first call on a menu of `n_tools` (0: none)."""
    import hashlib

    shy = n_tools > MENU_SHY_LIMIT and int(hashlib.sha256(case.id.encode()).hexdigest()[:2], 16) % 4 != 0
    return MENU_SHY_TOKENS * n_tools if shy else 0


def menu_shy_fails(case: "ResolvedCase", n_tools: int, cap: int = 1024) -> bool:
    return menu_shy_need(case, n_tools) > cap


def _progress(case: "ResolvedCase", messages: list[dict[str, Any]]) -> int:
    """The first reference turn whose calls are not all in the transcript yet (whoever made them):
    how far the work is, when a repair (the controller) makes calls of its own."""
    from ..handoffs import call_key

    made = set()
    for m in messages:
        for c in m.get("tool_calls") or ():
            fn = c.get("function") or {}
            try:
                made.add(call_key(str(fn.get("name")), json.loads(fn.get("arguments") or "null")))
            except ValueError:
                continue
    for i, turn in enumerate(_ref_turns(case)):
        if isinstance(turn, str) or any(call_key(n, a) not in made for n, a in turn):
            return i
    return len(case.reference)


class ScriptedProvider:
    """Answers from a policy over the case's reference solution; token counts are estimates."""

    def __init__(self, config: "ModelConfig"):
        self.config = config
        self._policy = POLICIES[config.policy or "oracle"]

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase") -> Reply:
        t = sum(1 for m in messages if m["role"] == "assistant")
        own = getattr(case, "scripted_output") if _answers_itself(type(case)) else None
        thought = 0  # completion tokens spent before the reply (menu_shy on a large menu)
        if own is not None:  # a kind's case answers for itself (the call sites', a plug-in's: docs/kinds.md)
            action: "list[Call] | str" = own(self.config.policy or "oracle")
        else:
            thought = menu_shy_need(case, len(tools)) if self.config.policy == "menu_shy" else 0
            if thought > self.config.max_tokens:
                return Reply(content="", finish_reason="length", tokens_in=40 * len(tools),
                             tokens_out=self.config.max_tokens)
            if "controller" in (self.config.repairs or ()):
                t = _progress(case, messages)
            shy = repair_shy_action(self.config.policy, case, t, messages) if self.config.policy in REPAIR_SHY else None
            action = self._policy(case, t) if shy is None else shy
        tokens_in = sum(len(m.get("content") or "") for m in messages) // 4 + 40 * len(tools)
        if isinstance(action, str):
            return Reply(content=action, tokens_in=tokens_in, tokens_out=len(action) // 4 + 1 + thought)
        calls = [ToolCallOut(id=f"call_{t}_{j}", name=name,
                             arguments=args if isinstance(args, str) else _arguments_text(args))
                 for j, (name, args) in enumerate(action)]
        return Reply(content=None, tool_calls=calls, finish_reason="tool_calls", tokens_in=tokens_in,
                     tokens_out=sum(len(c.arguments) for c in calls) // 4 + 8 + thought)

    def close(self) -> None:
        pass
