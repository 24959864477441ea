"""Failure mode (seed 000's F-cascade) and terminal flag (seed 002) of a failed run.

The failure mode says what went wrong in the model's behaviour; the terminal flag says how the
episode ended. Both are pure functions of the case, the trajectory and the obligation verdicts.
Definitions the paper leaves open follow the AgentFloor authors' harness (harness/metrics.py);
docs/protocol-agentfloor.md lists each choice.
"""

from __future__ import annotations

from ..suite.schema import ResolvedCase
from ..trajectory import Trajectory
from .obligations import Verdict, required_tools, unselected

#: the strict priority order of seed 000
FAILURE_MODES: tuple[str, ...] = ("F1", "F2", "F4", "F5", "F5b", "F6", "F7", "F3")
FAILURE_NAMES: dict[str, str] = {
    "F1": "hallucinated tool", "F2": "malformed call", "F4": "step budget exhausted",
    "F5": "early resignation", "F5b": "plan without execute", "F6": "wrong tool",
    "F7": "partial completion", "F3": "residual",
}
#: seed 002's terminal flags, in order of precedence; context_limit (the prompt did not fit the
#: context window) is a harness budget ranked with "budget", but its runs are not the model's
#: failures and are counted apart from them
TERMINAL_FLAGS: tuple[str, ...] = ("truncation", "budget", "context_limit", "turn_limit", "infeasible",
                                   "wrong_conclusion", "other")
#: obligations that judge the outcome itself (answer, cited evidence, final state)
OUTCOME_OBLIGATIONS = frozenset({"Q", "E", "X"})
#: obligations a run can break while its work and outcome are right (governance, budget, rules)
RULE_OBLIGATIONS = frozenset({"G", "B", "C"})


def quit_in_text(traj: Trajectory) -> bool:
    """The model ended the episode itself with a text reply and took no final action.

    A submission is the task's final action, not a resignation: a wrong one falls through to
    F6/F7, as in the authors' harness, where an accepted submission ends the run.
    """
    return traj.termination == "final_answer" and not traj.submissions


def failure_mode(case: ResolvedCase, traj: Trajectory, verdicts: list[Verdict]) -> str:
    """The first mode of the strict priority cascade that applies."""
    calls = traj.calls
    failed = {v.code for v in verdicts if not v.ok}
    required = required_tools(case)
    if any(c.hallucinated for c in calls):
        return "F1"
    if traj.termination == "malformed_call" or any(c.malformed for c in calls):
        return "F2"
    if traj.termination in ("turn_budget", "call_limit"):  # out of steps: turns, or tbb's calls
        return "F4"
    called = {c.name for c in calls}
    wrong_tool = bool(unselected(case, called)) and bool(called - required - {"submit_decision"})
    needs_work = bool(required) or case.needs_submission
    only_wrong = wrong_tool and not called & required
    if quit_in_text(traj) and needs_work and not (failed <= RULE_OBLIGATIONS) and not only_wrong:
        # >= 2 successful calls then quit is F5, <= 1 is F5b. Not a resignation: a run whose work
        # and outcome were right and that broke only a rule (a repeat: C); a run that called only
        # wrong tools, none a required step needs (F6); a case with nothing to execute (tier A0,
        # which falls through to the residual F3)
        return "F5b" if sum(1 for c in calls if c.ok) <= 1 else "F5"
    if wrong_tool:
        return "F6"
    if failed & {"S", "P", "X"} and (called & required or traj.submissions):
        return "F7"
    return "F3"


def terminal_flag(traj: Trajectory, verdicts: list[Verdict] | None = None) -> str:
    """How the failed episode ended, in seed 002's order of precedence.

    (v) wrong conclusion needs a wrong outcome (Q, E or X unmet) from an episode the model ended;
    a right outcome that broke another term of the contract (a repeated call, an unrequested
    change of state, a skipped step) is (vi) other. Without verdicts, an ended episode is (v).
    """
    t = traj.termination
    if t == "context_limit":  # the cause, whatever else the cut turn shows
        return "context_limit"
    last = traj.requests[-1] if traj.requests else None
    if t == "truncated" or (last is not None and last.finish_reason == "length"):
        return "truncation"
    tokens = traj.tokens_in + traj.tokens_out
    if t in ("token_budget", "call_limit") or (traj.token_budget is not None and tokens > traj.token_budget) \
            or (traj.call_limit is not None and len(traj.calls) > traj.call_limit):
        return "budget"
    if t == "turn_budget" or len(traj.requests) > traj.turn_budget > 0:
        return "turn_limit"
    if t == "infeasible":
        return "infeasible"
    if t in ("final_answer", "submitted"):
        if verdicts is None or any(not v.ok and v.code in OUTCOME_OBLIGATIONS for v in verdicts):
            return "wrong_conclusion"
    return "other"
