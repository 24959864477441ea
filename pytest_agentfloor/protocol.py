"""Episode protocols as data: which harness limits an episode runs under.

A protocol is the set of rules one paper's numbers were measured under; a run record carries
the whole `Protocol` (`params()`), so it says by itself which rules produced it. Where each
number comes from: docs/protocol-agentfloor.md, docs/protocol-tbb.md, docs/protocol-legacy.md.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

from .suite.schema import ResolvedCase

TBB_COMPLETION_CAP = 1024
TBB_EPISODE_TOKENS = 128_000
#: the authors' extended-steps ablation (rkarmaka/AgentFloor sweep_configs/gpt5_de_max_steps.yaml):
#: `max_steps_override: 20` for every D and E task, with `max_output_tokens: 4096`
AUTHORS_EXTENDED_STEPS = {"D": 20, "E": 20}
AUTHORS_EXTENDED_COMPLETION_CAP = 4096
#: what a rejected submission tells the model (agentfloor's submission check):
#: expected = the field and its expected value, as the authors' harness; field = only which field is
#: wrong; verdict = only that the submission was rejected
SUBMISSION_FEEDBACK = ("expected", "field", "verdict")


@dataclass(frozen=True)
class Limits:
    """The limits one episode of one case runs under (None = not enforced)."""

    turns: int
    calls: int | None
    tokens: int | None


@dataclass(frozen=True)
class Protocol:
    name: str
    #: "tier": the case's step budget (1/2/4/6/8/10 by tier) times step_budget_scale;
    #: "calls+2": the call limit plus two (seed 002)
    turn_limit: Literal["tier", "calls+2"]
    #: enforce the case's call limit (the certified minimum, i.e. the reference's calls, plus two)
    call_limit: bool
    #: episode budget in reported tokens (prompt + completion, summed over requests)
    token_budget: int | None
    #: forced per-request completion cap; None keeps each model's `max_tokens`
    completion_cap: int | None
    #: a reply cut off at the completion cap ends the episode
    truncation_stop: bool
    #: a tool call whose arguments are not a JSON object ends the episode (else the model
    #: gets an error result and may correct itself, as in the AgentFloor authors' harness)
    malformed_stop: bool
    #: stop once the remaining required calls no longer fit the call limit
    infeasibility_stop: bool
    #: infrastructure failures count as failures of their configuration in TCR
    infra_as_failure: bool
    step_budget_scale: float = 1.0
    #: "any": every repeat of a successful call breaks a case that forbids repeats (the default
    #: forbids them); "declared": only a case that declares repeated_identical_call itself, and only
    #: a run of `repeat_threshold` consecutive identical calls (the authors' harness)
    repeat_rule: Literal["any", "declared"] = "any"
    #: None: any allowed submission is recorded once (one shot); else a submission that does not
    #: match the case's gold is rejected with a tool error saying this much, and may be retried
    submission_feedback: Literal["expected", "field", "verdict"] | None = None
    #: tier -> turn budget under step_budget_scale 2 (the authors' extended-steps settings); other
    #: tiers and scales use ceil(budget x scale)
    extended_steps: tuple[tuple[str, int], ...] = ()

    def limits(self, case: ResolvedCase) -> Limits:
        calls = case.call_limit if self.call_limit else None
        if self.turn_limit == "calls+2":
            turns = case.call_limit + 2
        elif self.step_budget_scale == 2 and case.tier in dict(self.extended_steps):
            turns = dict(self.extended_steps)[case.tier]
        else:
            turns = max(1, math.ceil(case.turn_budget * self.step_budget_scale))
        return Limits(turns=turns, calls=calls, tokens=self.token_budget)

    def params(self) -> dict[str, Any]:
        """Every parameter, for run records, report headers and the resume fingerprint (as JSON
        reads it back). The rules added for agentfloor are left out where they are off, so tbb and
        legacy records keep the parameters, and the fingerprints, they always had.

        Computed once (asdict walks every field; a record is built per item) and copied per call.
        """
        cached = self.__dict__.get("_params")
        if cached is None:
            cached = dataclasses.asdict(self)
            for key, off in _OFF.items():
                if cached[key] == off:
                    del cached[key]
            if "extended_steps" in cached:
                cached["extended_steps"] = {tier: n for tier, n in self.extended_steps}
            object.__setattr__(self, "_params", cached)  # frozen: not a field, so eq/hash/replace ignore it
        return dict(cached)

    def describe(self) -> str:
        """One line for report headers."""
        turns = ("tier step budget" + (f" x{self.step_budget_scale:g}" if self.step_budget_scale != 1 else "")
                 if self.turn_limit == "tier" else "call limit + 2 turns")
        if self.step_budget_scale == 2 and self.extended_steps:
            turns += " (" + ", ".join(f"{t} {n}" for t, n in self.extended_steps) + " turns, as the authors)"
        parts = [turns]
        if self.repeat_rule == "declared":
            parts.append("repeats checked where declared")
        if self.submission_feedback:
            parts.append(f"rejected submissions retried ({self.submission_feedback} feedback)")
        if self.call_limit:
            parts.append("call limit = reference calls + 2")
        if self.token_budget:
            parts.append(f"{self.token_budget:,} episode tokens")
        if self.completion_cap:
            parts.append(f"completion cap {self.completion_cap:,}")
        if self.truncation_stop:
            parts.append("truncation ends the episode")
        if self.infeasibility_stop:
            parts.append("infeasibility stop")
        parts.append("infra errors count as failures" if self.infra_as_failure else "infra errors excluded from TCR")
        return f"{self.name}: " + ", ".join(parts)


_OFF: dict[str, Any] = {"repeat_rule": "any", "submission_feedback": None, "extended_steps": ()}

PROTOCOLS: dict[str, Protocol] = {
    # seed 000 (AgentFloor): the step budget is the only episode limit
    "agentfloor": Protocol(
        name="agentfloor", turn_limit="tier", call_limit=False, token_budget=None, completion_cap=None,
        truncation_stop=False, malformed_stop=False, infeasibility_stop=False, infra_as_failure=False,
        repeat_rule="declared", submission_feedback="expected",
        extended_steps=tuple(AUTHORS_EXTENDED_STEPS.items()),
    ),
    # seed 002 (ToolBottleneckBench): the frozen harness contract
    "tbb": Protocol(
        name="tbb", turn_limit="calls+2", call_limit=True, token_budget=TBB_EPISODE_TOKENS,
        completion_cap=TBB_COMPLETION_CAP, truncation_stop=True, malformed_stop=True, infeasibility_stop=True,
        infra_as_failure=True,
    ),
    # this plugin before protocols existed: AgentFloor's tier budgets plus TBB's other limits
    "legacy": Protocol(
        name="legacy", turn_limit="tier", call_limit=True, token_budget=TBB_EPISODE_TOKENS, completion_cap=None,
        truncation_stop=True, malformed_stop=True, infeasibility_stop=True, infra_as_failure=False,
    ),
}
DEFAULT_PROTOCOL = "agentfloor"


def resolve_protocol(name: str, *, step_budget_scale: float = 1.0, token_budget: int | None = None,
                     infra_as_failure: bool = False, submission_feedback: str | None = None) -> Protocol:
    """The named protocol with the session's overrides; ValueError names what is valid."""
    if name not in PROTOCOLS:
        raise ValueError(f"expected one of {', '.join(PROTOCOLS)}, got {name!r}")
    base = PROTOCOLS[name]
    if step_budget_scale != 1.0 and base.turn_limit != "tier":
        raise ValueError(f"the {name} protocol's turn limit is the call limit plus two, not a step budget; "
                         "--step-budget-scale applies to agentfloor and legacy")
    changes: dict[str, Any] = {"step_budget_scale": float(step_budget_scale)}
    if token_budget is not None:
        changes["token_budget"] = token_budget
    if infra_as_failure:
        changes["infra_as_failure"] = True
    if submission_feedback is not None:
        if submission_feedback not in SUBMISSION_FEEDBACK:
            raise ValueError(f"submission feedback: expected one of {', '.join(SUBMISSION_FEEDBACK)}, "
                             f"got {submission_feedback!r}")
        if base.submission_feedback is None:
            raise ValueError(f"the {name} protocol records the first allowed submission without checking it; "
                             "--submission-feedback applies to agentfloor")
        changes["submission_feedback"] = submission_feedback
    if step_budget_scale == 2 and base.extended_steps and base.completion_cap is None:
        changes["completion_cap"] = AUTHORS_EXTENDED_COMPLETION_CAP  # the authors' cap for that ablation
    return dataclasses.replace(base, **changes)

