"""The episode loop: model turn, native tool calls, sandbox results, under a protocol's limits.

Only the provider's native tool-call field counts; a call written in the message text is no
call. Provider failures end the episode as `provider_error` (infrastructure, not the model).
Which limits end an episode is the protocol's business (protocol.py), never the loop's.

The episode's clock is its own time: time queued before a request is sent (a connection slot,
rpm spacing, a Retry-After hold) is counted apart (`queue_s`) and moves the deadline. A deadline
the harness imposes (`--episode-timeout`, a request bound, a hold longer than the time left)
ends the episode as `timeout`, which results.py records as an infrastructure error, never as
the model's failure.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Callable

from .context import prompt_cut
from .handoffs import call_key, next_step
from .harness_repairs import repaired_prompt, route_menu
from .jsontext import sorted_json
from .protocol import DEFAULT_PROTOCOL, PROTOCOLS, Protocol
from .providers.base import ContextLimitError, MalformedReply, Provider, ProviderError, deadline_in
from .providers.endpoints import EpisodeNet, episode_net
from .sandbox import HostileArguments, Sandbox, menu, parse_arguments
from .suite.schema import TOOL_NAMES, ResolvedCase
from .trajectory import MAX_CALLS_PER_TURN, Termination, ToolCall, Trajectory, Turn, plausible_tokens

SYSTEM_PROMPTS: dict[str, str] = {
    "default": (
        "You are an operations assistant working in a sandbox of synthetic business records. "
        "Use the provided tools to look up what you need; never guess record ids or values. "
        "When the task asks for a decision, record it with submit_decision exactly once. "
        "When you have the answer, reply with it in plain text and stop calling tools."
    ),
}
# the two system-prompt ablations of seed 000 section 5.2. explicit_submission extends the default
# (the paper: one added instruction); structured REPLACES it, as the authors' harness does
# (harness/structured_prompt.py, used as system_prompt_override); the wording of both is ours
SYSTEM_PROMPTS["explicit_submission"] = SYSTEM_PROMPTS["default"] + " You MUST call submit_decision to finish."
SYSTEM_PROMPTS["structured"] = (
    "You complete tasks in a sandbox of synthetic business records, in three phases. PLAN: read the request and decide which of the provided tools you need and in"
    " which order; make no tool call yet. EXECUTE: make the calls, one step at a time, through the"
    " tool-calling interface; after each result decide whether you need another call, and never use a"
    " tool that is not provided or guess a record id or value. SUBMIT: when you have what you need,"
    " call submit_decision if the task asks for a decision (the task is finished only once it is"
    " accepted), otherwise reply with a short final answer in plain text. Do not stop after planning."
)
_LEAK = re.compile(r"(<tool_call>|\"(name|function)\"\s*:\s*\"(" + "|".join(TOOL_NAMES) + r")\")")


def plain(result: dict[str, Any]) -> str:
    """A tool's result as the model reads it without pressures: its JSON (keys sorted)."""
    return sorted_json(result)


def _canonical(name: str, args: dict[str, Any] | None) -> str:
    """The call's identity for repetition: tool and arguments in any key order. Refused arguments
    (None) give `name:null`, which no successful call's key equals."""
    return call_key(name, args)


def run_episode(
    case: ResolvedCase,
    provider: Provider,
    *,
    model: str,
    run: int = 0,
    system_prompt: str = "default",
    protocol: Protocol = PROTOCOLS[DEFAULT_PROTOCOL],
    timeout_s: float = 600.0,
    remaining_steps: Callable[[ResolvedCase, Trajectory], int] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    repairs: tuple[str, ...] = (),
) -> Trajectory:
    """Run one episode and return its trajectory; never raises for model or endpoint failures.

    `remaining_steps` is only consulted by protocols with an infeasibility stop.
    """
    with episode_net() as net:
        traj = _play(case, provider, net, model=model, run=run, system_prompt=system_prompt, protocol=protocol,
                     timeout_s=timeout_s, remaining_steps=remaining_steps, clock=clock, repairs=repairs)
    traj.endpoint_wait_s = round(net.waited_s, 6)
    traj.queue_s = round(traj.queue_s + net.queued_s, 6)
    return traj


def _play(case: ResolvedCase, provider: Provider, net: EpisodeNet, *, model: str, run: int, system_prompt: str,
          protocol: Protocol, timeout_s: float, remaining_steps: Callable[[ResolvedCase, Trajectory], int] | None,
          clock: Callable[[], float], repairs: tuple[str, ...] = ()) -> Trajectory:
    start = clock()
    limits = protocol.limits(case)
    pc = case.pressure
    distractors: tuple[str, ...]
    narrow: list[dict[str, Any]] | None
    if pc is None:
        offered, distractors, tools, narrow = case.tools, (), menu(case.tools), None
    else:  # pressures (kindspec.EpisodePressure): its own menu (operational tools among distractors), lane, encoding
        offered, distractors = pc.offered, pc.distractor_names()
        tools, narrow = pc.menu_schemas(), pc.narrowed_menu()
    sandbox = Sandbox(case.fixtures, offered, expected=case.gold.submission,
                      feedback=protocol.submission_feedback)
    router = None
    if "router" in repairs:  # the connector-first router: user text and public descriptions only
        routed, router = route_menu(case.prompt, tools)
        tools = routed if routed is not None else tools
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": repaired_prompt(SYSTEM_PROMPTS[system_prompt], repairs)},
        {"role": "user", "content": case.prompt},
    ]
    traj = Trajectory(
        case_id=case.id, tier=case.tier, variant=case.variant, instance=case.instance, run=run,
        model=model, tools=list(offered), protocol=protocol.name,
        turn_budget=limits.turns, call_limit=limits.calls, token_budget=limits.tokens,
        distractors=list(distractors), lane=pc.lane if pc is not None else None,
        repairs=list(repairs), router=router,
    )
    infeasible = remaining_steps if protocol.infeasibility_stop and limits.calls is not None else None
    canonical = "canonical_delivery" in repairs
    seen: set[str] = set()
    n_calls = 0
    tokens = 0
    termination: Termination = "turn_budget"

    def elapsed() -> float:  # the episode's own time: queued time is not the model's
        return clock() - start - net.queued_s

    def execute(turn: Turn, call_id: str, name: str, raw: str) -> Termination | None:
        """Play one tool call (the model's or the controller's) into `turn`; a Termination ends the episode."""
        nonlocal n_calls, tools
        call = ToolCall(turn=turn.index, id=call_id, name=name, raw_arguments=raw)
        turn.calls.append(call)
        refused: str | None = None
        try:
            parsed = parse_arguments(raw)
        except json.JSONDecodeError:
            parsed = None
        except HostileArguments as exc:  # valid JSON the sandbox will not read: an invalid call
            parsed, refused = {}, str(exc)
        if not isinstance(parsed, dict):
            call.malformed = True
            call.hallucinated = name not in offered and name not in distractors
            call.result = {"status": "error", "error_type": "malformed_call",
                           "message": "arguments are not a JSON object", "hint": ""}
            if protocol.malformed_stop:
                return "malformed_call"
            messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                             "content": sorted_json(call.result)})
            return None
        call.arguments = parsed if refused is None else None
        call.distractor = name in distractors
        call.hallucinated = name not in offered and not call.distractor
        key = _canonical(name, call.arguments)
        call.repeated = key in seen  # retrying after an error is recovery, not repetition
        n_calls += 1
        if limits.calls is not None and n_calls > limits.calls:
            call.result = {"status": "error", "error_type": "call_limit",
                           "message": f"call limit of {limits.calls} reached", "hint": ""}
            return "call_limit"
        if refused is not None:
            call.result = {"status": "error", "error_type": "invalid_arguments", "message": refused,
                           "hint": "check the tool's parameter schema"}
        elif call.distractor and pc is not None:
            call.result = pc.distractor_result(name)
        else:
            try:
                call.result = sandbox.call(name, parsed)
            except Exception as exc:  # no tool input may crash the episode or lose its record
                call.result = {"status": "error", "error_type": "tool_error",
                               "message": f"{name} failed ({type(exc).__name__})", "hint": ""}
            if pc is not None:  # a record of the public handoff chain says which record to read next
                call.result = pc.public_result(name, call.arguments, call.result)
        if call.result.get("status") == "ok":
            seen.add(key)
        call.malformed = call.result.get("error_type") == "invalid_arguments"
        messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                         "content": pc.deliver(call.result) if pc is not None and not canonical
                         else plain(call.result)})
        if narrow is not None and name in offered and call.result.get("error_type") != "invalid_arguments":
            tools = narrow  # routed lane: the first executed operational call narrows the menu
        return None

    def follow(result: dict[str, Any]) -> Termination | None:
        """The public-handoff controller (handoffs.py): it reads the last result, the menu shown and
        the calls made, never the case, and issues each read in a turn of its own (no model request)."""
        while True:
            step = next_step(result, tools, seen, None if limits.calls is None else limits.calls - n_calls)
            if step.tool is None or step.arguments is None:
                traj.controller_stops.append(step.stop or "absent")
                return None
            turn = Turn(index=len(traj.turns), finish_reason="controller", controller=True)
            traj.turns.append(turn)
            call_id, raw = f"ctrl_{turn.index}", json.dumps(step.arguments)
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": step.tool, "arguments": raw}}]})
            stop = execute(turn, call_id, step.tool, raw)
            if stop is not None:
                return stop
            result = turn.calls[-1].result

    for requests in range(1, limits.turns + 1):
        index = len(traj.turns)
        if elapsed() > timeout_s:
            termination = "timeout"
            traj.error = f"episode exceeded {timeout_s:g}s"
            break
        try:
            # a hard bound: every request made for this turn ends by the episode's deadline
            net.endpoint = None
            with deadline_in(timeout_s - elapsed()):
                reply = provider.complete(messages, tools, case=case)
        except ContextLimitError as exc:
            traj.context_window = getattr(provider, "context_window", None)
            termination, traj.error = "context_limit", str(exc)
            break
        except ProviderError as exc:
            if exc.out_of_time or elapsed() > timeout_s:  # the episode's deadline ended it
                termination, traj.error = "timeout", f"episode exceeded {timeout_s:g}s ({exc})"
            else:
                termination, traj.error = "provider_error", str(exc)
            break
        except MalformedReply as exc:  # the model's output could not be read as a call: its turn still counts
            traj.turns.append(Turn(index=index, finish_reason="malformed", endpoint=net.endpoint))
            termination, traj.error = "malformed_call", str(exc)
            break
        if len(reply.tool_calls) > MAX_CALLS_PER_TURN:  # bounded records: the model's malformed turn, counted
            traj.turns.append(Turn(index=index, content=reply.content, finish_reason="malformed",
                                   tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, latency_s=reply.latency_s,
                                   busy_s=reply.busy_s, endpoint=net.endpoint,
                                   calls_rejected=len(reply.tool_calls), usage_invalid=list(reply.usage_invalid)))
            termination = "malformed_call"
            traj.error = (f"turn {index}: {len(reply.tool_calls):,} tool calls in one reply; at most "
                          f"{MAX_CALLS_PER_TURN} are read (the turn is a malformed call)")
            break
        previous = next((t for t in reversed(traj.turns) if not t.controller), None)
        turn = Turn(index=index, content=reply.content, finish_reason=reply.finish_reason,
                    tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, latency_s=reply.latency_s,
                    busy_s=reply.busy_s, reasoning_tokens=reply.reasoning_tokens,
                    menu_size=len(tools) if pc is not None else None, endpoint=net.endpoint, refusal=reply.refusal,
                    usage_invalid=list(reply.usage_invalid))
        traj.turns.append(turn)
        # the episode's token budget counts what a server can have used: a negative or absurd figure it
        # reported neither lowers the count nor ends the episode (never charged to the model)
        tokens += plausible_tokens(reply.tokens_in) + plausible_tokens(reply.tokens_out)
        window = traj.context_window = getattr(provider, "context_window", None)
        cut = prompt_cut(reply.tokens_in, previous.tokens_in if previous is not None else None, window,
                         tokens_out=reply.tokens_out, finish_reason=reply.finish_reason)
        if cut:  # the model answered a prompt it never saw whole: not graded as its failure
            termination = "context_limit"
            traj.error = f"turn {index}: {cut}; " + getattr(
                provider, "context_hint", "raise the model's context window (context_window in models.toml)")
            break
        if reply.finish_reason == "length" and protocol.truncation_stop:
            termination = "truncated"
            break
        if limits.tokens is not None and tokens > limits.tokens:
            termination = "token_budget"
            break
        if not reply.tool_calls:
            turn.leaked_call = bool(reply.content and _LEAK.search(reply.content))
            messages.append({"role": "assistant", "content": reply.content or ""})
            traj.final_answer = reply.content or ""
            termination = "final_answer"
            break
        messages.append({
            "role": "assistant", "content": reply.content or "",
            "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                           for c in reply.tool_calls],
        })
        stop: Termination | None = None
        for out in reply.tool_calls:
            stop = execute(turn, out.id, out.name, out.arguments)
            if stop is not None:
                break
        if stop is None and "controller" in repairs and turn.calls and not sandbox.submissions:
            stop = follow(turn.calls[-1].result)
        if stop is not None:
            termination = stop
            break
        if sandbox.submissions and not case.needs_answer:
            termination = "submitted"
            break
        if infeasible is not None and limits.calls is not None and requests < limits.turns:
            if infeasible(case, traj) > limits.calls - n_calls:
                termination = "infeasible"
                break
    traj.submissions = list(sandbox.submissions)
    traj.messages = messages
    traj.termination = termination
    traj.wall_s = max(0.0, elapsed())
    return traj
