"""Failure mode (AgentFloor's F1-F7 cascade) and terminal flag of a failed run.

The failure mode says what went wrong in the model's behaviour; the terminal flag says which
harness limit, if any, ended the episode. Both are pure functions of the graded trajectory.
"""

from __future__ import annotations

from ..suite.schema import ResolvedCase
from ..trajectory import Trajectory
from .obligations import Verdict, required_tools, unselected

FAILURE_MODES: tuple[str, ...] = ("F1", "F2", "F4", "F5", "F5b", "F6", "F7", "F3")
FAILURE_NAMES: dict[str, str] = {
    "F1": "hallucinated tool", "F2": "malformed call", "F4": "turn budget exhausted",
    "F5": "resigned after working", "F5b": "planned without executing", "F6": "wrong tool",
    "F7": "partial completion", "F3": "other (wrong conclusion)",
}
TERMINAL_FLAGS: tuple[str, ...] = ("truncation", "budget", "turn_limit", "infeasible", "wrong_conclusion", "other")


def failure_mode(case: ResolvedCase, traj: Trajectory, verdicts: list[Verdict]) -> str:
    """The first mode of the strict priority cascade that applies."""
    calls = traj.calls
    failed = {v.code for v in verdicts if not v.ok}
    required = required_tools(case)
    work_undone = bool(failed & {"S", "P", "X"})
    # quitting: the model stopped in text with neither the work done nor the outcome delivered;
    # a wrong answer after complete work is a wrong conclusion (F3), not a resignation
    quit_early = traj.termination == "final_answer" and work_undone and bool(failed & {"Q", "X"})
    if any(c.hallucinated for c in calls):
        return "F1"
    if traj.termination == "malformed_call" or any(c.malformed for c in calls):
        return "F2"
    if traj.termination == "turn_budget":
        return "F4"
    if quit_early and sum(1 for c in calls if c.ok) >= 2:
        return "F5"
    if quit_early and len(calls) <= 1 and (required or case.needs_submission):
        return "F5b"
    called = {c.name for c in calls}
    if unselected(case, called) and (called - required - {"submit_decision"}):
        return "F6"
    if work_undone and (called & required or traj.submissions):
        return "F7"
    return "F3"


def terminal_flag(traj: Trajectory) -> str:
    """How the failed episode ended, in the precedence order of the harness contract."""
    t = traj.termination
    if t == "truncated":
        return "truncation"
    if t in ("token_budget", "call_limit"):
        return "budget"
    if t == "turn_budget":
        return "turn_limit"
    if t == "infeasible":
        return "infeasible"
    if t in ("final_answer", "submitted"):
        return "wrong_conclusion"
    return "other"
