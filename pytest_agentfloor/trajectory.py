"""The Trajectory: the one record of an episode that every later stage reads.

Plain, JSON-serialisable data, so a run can be stored, replayed, re-graded and reported
without a model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Termination = Literal[
    "final_answer",  # the model answered in text without calling a tool
    "submitted",  # submit_decision was accepted and no answer text is needed
    "turn_budget",  # the protocol's turn limit (AgentFloor: the tier's step budget) was used up
    "call_limit",  # more tool calls than the case allows (protocols with a call limit)
    "token_budget",  # the episode token budget was exceeded (protocols with one)
    "truncated",  # a response was cut off at the completion cap (protocols where that ends the episode)
    "infeasible",  # success became impossible within the call limit (protocols with that stop)
    "malformed_call",  # output that is no readable call, or (where the protocol stops on it) non-JSON arguments
    "timeout",  # a deadline the harness imposed (--episode-timeout, a request bound): infrastructure
    "provider_error",  # the endpoint failed after its retries (infrastructure)
    "context_limit",  # the prompt did not fit the model's context window (a harness limit)
]


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters; a cut is marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ToolCall(BaseModel):
    turn: int
    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None = None
    result: dict[str, Any] = Field(default_factory=dict)
    hallucinated: bool = False
    malformed: bool = False
    repeated: bool = False
    distractor: bool = Field(False, description="a call to a distractor schema of a pressure menu")

    @property
    def ok(self) -> bool:
        return self.result.get("status") == "ok"


#: the most tool calls one reply may make: 10,000 calls in a turn must not make a 7 MB record
MAX_CALLS_PER_TURN = 64
#: the most tokens one request can plausibly use (a larger reported figure is the server's error)
PLAUSIBLE_TOKENS = 100_000_000


def plausible_tokens(value: object) -> int:
    """A server-reported token count fit to be counted against a budget: an int in [0, PLAUSIBLE_TOKENS], else 0."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= PLAUSIBLE_TOKENS:
        return value
    return 0


class Turn(BaseModel):
    index: int
    content: str | None = None
    finish_reason: str = "stop"
    calls: list[ToolCall] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    busy_s: float | None = Field(None, description="server-reported processing time (None: not reported)")
    reasoning_tokens: int | None = Field(None, description="reasoning tokens, where the server reports them")
    cost_usd: float | None = Field(None, description="the call's cost as recorded by its source (bring your own "
                                   "outputs); None: priced from the model's pricing")
    leaked_call: bool = Field(False, description="text that looks like a tool call (counted as no call)")
    refusal: str | None = Field(None, description="the server's message when it refused to parse this turn's "
                                "output into tool calls; the content is then the model's raw text, read as text")
    menu_size: int | None = Field(None, description="tool schemas shown in this request (pressure cells)")
    endpoint: str | None = Field(None, description="the endpoint (redacted URL) that answered this turn "
                                 "(replayed: the recording's, when its cassette says); None for in-process answers")
    calls_rejected: int = Field(0, description="tool calls in this reply beyond MAX_CALLS_PER_TURN: the turn "
                                "is the model's malformed call, and none of them is kept")
    controller: bool = Field(False, description="a turn of the public-handoff controller (handoffs.py): the call "
                             "it issued itself, with no model request")
    usage_invalid: list[str] = Field(default_factory=list, description="usage figures the server sent that are "
                                     "no count (read as 0 here): the turn's cost is unknown, never charged")


class Trajectory(BaseModel):
    case_id: str
    tier: str
    variant: str
    instance: str
    run: int
    model: str
    tools: list[str]
    messages: list[dict[str, Any]] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    submissions: list[dict[str, Any]] = Field(default_factory=list, description="accepted state changes")
    final_answer: str | None = None
    termination: Termination = "final_answer"
    error: str | None = None
    wall_s: float = Field(0.0, description="the episode's own time, from its first request on; queue_s excluded")
    protocol: str | None = Field(None, description="the protocol's name; None in records older than protocols")
    turn_budget: int = 0
    call_limit: int | None = Field(None, description="None: the protocol enforces no call limit")
    token_budget: int | None = Field(None, description="None: the protocol enforces no episode token budget")
    context_window: int | None = Field(None, description="tokens of context in force, when known")
    distractors: list[str] = Field(default_factory=list, description="distractor schemas on a pressure menu")
    lane: str | None = Field(None, description="pressure menu lane: fixed, or routed (oracle-assisted)")
    repairs: list[str] = Field(default_factory=list, description="repair switches in force (harness_repairs.py)")
    router: str | None = Field(None, description="the router's outcome: narrowed, absent, ambiguous or no-change")
    cap_scale: int | None = Field(None, description="the completion cap's multiplier (the cap sweep's high arm); "
                                  "None: the cap in force as configured")
    controller_stops: list[str] = Field(default_factory=list, description="why the public-handoff controller "
                                        "handed back to the model, each time it was consulted (handoffs.STOPS)")
    endpoint_wait_s: float = Field(0.0, description="seconds the episode waited because an endpoint asked for a "
                                   "pause (Retry-After), its own retries' pauses included")
    queue_s: float = Field(0.0, description="seconds the episode queued and that were not its own: waiting for "
                           "a place (a local server slot, max_connections), a connection slot, rpm spacing or a "
                           "Retry-After hold; not part of wall_s, latency_s or the episode's deadline")

    @property
    def calls(self) -> list[ToolCall]:
        return [c for t in self.turns for c in t.calls]

    @property
    def requests(self) -> list[Turn]:
        """The turns that were model requests (the turn limit counts these; a controller turn is none)."""
        return [t for t in self.turns if not t.controller]

    @property
    def tokens_in(self) -> int:
        return sum(t.tokens_in for t in self.turns)

    @property
    def tokens_out(self) -> int:
        return sum(t.tokens_out for t in self.turns)

    @property
    def reasoning_tokens(self) -> int | None:
        """Summed over the turns whose server reported them; None if none did."""
        known = [t.reasoning_tokens for t in self.turns if t.reasoning_tokens is not None]
        return sum(known) if known else None

    @property
    def endpoint(self) -> str | list[str | None] | None:
        """The endpoint that served the episode, or each turn's when they differ (an endpoint pool)."""
        seen = [t.endpoint for t in self.turns]
        if not any(seen):
            return None
        return seen[0] if len(set(seen)) == 1 else seen

    @property
    def latency_s(self) -> float:
        return sum(t.latency_s for t in self.turns)

    @property
    def busy_s(self) -> float:
        """Time the model was busy serving this episode: the server's own processing time of each
        request where it reports one, else the request's latency (which then includes any queueing)."""
        return sum(t.latency_s if t.busy_s is None else t.busy_s for t in self.turns)

    def compact(self, limit: int = 12) -> str:
        """One line per turn, for failure messages."""
        lines = []
        for t in self.turns[:limit]:
            calls = ", ".join(
                f"{c.name}({_cut(c.raw_arguments, 60)})->{c.result.get('status', '?')}"
                + ("[hallucinated]" if c.hallucinated else "")
                + ("[malformed]" if c.malformed else "")
                + ("[repeat]" if c.repeated else "")
                for c in t.calls
            )
            text = (t.content or "").strip().replace("\n", " ")
            body = calls if calls else f"text: {_cut(text, 100)!r}"
            lines.append(f"  turn {t.index}: {body}" + (f" [{t.finish_reason}]" if t.finish_reason == "length" else ""))
        if len(self.turns) > limit:
            lines.append(f"  ... {len(self.turns) - limit} more turns")
        lines.append(f"  end: {self.termination}" + (f" ({self.error})" if self.error else ""))
        return "\n".join(lines)
