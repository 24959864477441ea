"""A case kind of its own: each case is one request whose reply must be a given word."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentfloor.grading import Grade, Verdict
from pytest_agentfloor.kindspec import Entry
from pytest_agentfloor.suite.loader import CaseError
from pytest_agentfloor.trajectory import Trajectory, Turn


@dataclass(frozen=True)
class WordCase:
    id: str
    prompt: str
    answer: str
    content_hash: str
    kind: str = "wordcheck"
    tier: str = "wordcheck"  # records group by tier; a kind names its own group
    variant: str = "v0"
    instance: str = "i0"
    tools: tuple[str, ...] = ()

    def facets(self) -> dict[str, Any]:  # scalar facts the record carries for statistics
        return {"answer": self.answer}

    def scripted_output(self, policy: str) -> str:  # what the scripted models (--model oracle) reply
        return self.answer if policy == "oracle" else "no idea"


class WordCheckKind:
    name = "wordcheck"  # the case file's `kind` key, and the entry point's name
    markers = {"wordcheck": "a one-word answer case"}

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        cases = data.get("case")
        if not isinstance(cases, list) or not cases:
            raise CaseError(path, ["case: give at least one [[case]] with id, prompt and answer"])
        out = []
        for n, c in enumerate(cases):
            if not all(isinstance(c.get(k), str) for k in ("id", "prompt", "answer")):
                raise CaseError(path, [f"case[{n}]: needs the strings id, prompt and answer"])
            case = WordCase(c["id"], c["prompt"], c["answer"], content_hash)
            out.append(Entry(case.id, content_hash, (("v0", "i0"),), ("wordcheck",), lambda v, i, _c=case: _c))
        return out

    def play(self, options: Any, case: WordCase, model: Any, provider: Any, run: int) -> Trajectory:
        messages = [{"role": "user", "content": case.prompt}]
        traj = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant, instance=case.instance, run=run,
                          model=model.name, tools=[], messages=messages, turn_budget=1, call_limit=0)
        start = time.perf_counter()
        reply = provider.complete(messages, [], case=case)  # a ProviderError makes the item an error
        traj.turns.append(Turn(index=0, content=reply.content, finish_reason=reply.finish_reason,
                               tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, latency_s=reply.latency_s))
        traj.final_answer = reply.content or ""
        traj.wall_s = time.perf_counter() - start
        return traj

    def grade(self, case: WordCase, trajectory: Trajectory, hook: Any) -> Grade:
        said = (trajectory.final_answer or "").strip().lower()
        verdict = Verdict("wordcheck.answer", said == case.answer.lower(), repr(case.answer), repr(said))
        return Grade(verdict.ok, [verdict], None if verdict.ok else verdict, None,
                     None if verdict.ok else "wrong_conclusion")
