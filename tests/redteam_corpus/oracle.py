"""A loopback model that plays each ladder case's reference solution (instance i0), so a scenario can
break exactly one thing (one reply, one status, one header) and leave the rest right."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import Action, reply

from .harness import CASES


class Oracle:
    """responder(body) -> the reference's reply for the request's prompt and turn; `wrong` variants
    answer "I cannot tell." (a failure that is the model's)."""

    def __init__(self, *cases: str, wrong: tuple[str, ...] = ()):
        self.steps: dict[str, tuple[str, Any]] = {}
        for rel in cases or ("tier_A/A1.toml",):
            case, digest = load_case(CASES / rel)
            for variant in case.prompts:
                rc = resolve(case, variant, "i0", digest)
                self.steps[rc.prompt] = (variant, rc.reference)
        self.wrong = wrong
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = self.peak = 0

    def turn_of(self, body: Any) -> int:
        return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")

    def __call__(self, body: Any) -> Action:
        with self.lock:
            self.requests += 1
        msgs = body.get("messages", []) if isinstance(body, dict) else []
        prompt = next((m.get("content") for m in msgs if m.get("role") == "user"), None)
        if prompt not in self.steps:
            # the probe, or a prompt of no known case: one well-formed tool call
            return reply(tool_calls=[("get_attribute", {"record_id": "X", "attribute": "y"})])
        variant, ref = self.steps[prompt]
        if variant in self.wrong:
            return reply(content="I cannot tell.")
        turn = self.turn_of(body)
        step = ref[min(turn, len(ref) - 1)]
        if step.calls:
            return reply(tool_calls=[(c.tool, dict(c.args)) for c in step.calls])
        return reply(content=step.final)


def then(first: Callable[[Any], Action], n: int, rest: Callable[[Any], Action]) -> Callable[[Any], Action]:
    """A responder that answers the first `n` requests with `first` and the rest with `rest`."""
    seen = {"n": 0}
    lock = threading.Lock()

    def respond(body: Any) -> Action:
        with lock:
            seen["n"] += 1
            k = seen["n"]
        return first(body) if k <= n else rest(body)
    return respond
