"""Grading: obligations, failure cascade and terminal flags, combined into one Grade."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..render import safe_text
from ..suite.schema import ResolvedCase
from ..trajectory import Trajectory
from .failure import FAILURE_MODES, FAILURE_NAMES, TERMINAL_FLAGS, failure_mode, terminal_flag
from .obligations import ORDER, Verdict, check, first_unmet, remaining_steps

__all__ = ["FAILURE_MODES", "FAILURE_NAMES", "ORDER", "TERMINAL_FLAGS", "Grade", "Verdict", "grade",
           "remaining_steps"]


@dataclass(frozen=True)
class Grade:
    passed: bool
    verdicts: list[Verdict] = field(default_factory=list)
    first_unmet: Verdict | None = None
    failure_mode: str | None = None
    terminal_flag: str | None = None

    def message(self, traj: Trajectory) -> str:
        """Cause first: the headline (harness limit or failure mode, then what is unmet), the first
        unmet obligation in full, each failed call's error, then the trajectory."""
        if self.passed or self.first_unmet is None:
            return "passed"
        from .headline import failed_calls, headline

        calls = [c.model_dump() for c in traj.calls]
        head = headline(failure_mode=self.failure_mode, unmet=[v.code for v in self.verdicts if not v.ok],
                        first_unmet_text=self.first_unmet.describe(), termination=traj.termination,
                        limits=[traj.turn_budget, traj.call_limit, traj.token_budget], turns=len(traj.requests),
                        calls=calls)
        mode = f"failure mode {self.failure_mode} ({FAILURE_NAMES.get(self.failure_mode or '', 'custom')}), " \
               f"terminal flag {self.terminal_flag}"
        errors = failed_calls(calls)
        failed = "failed calls:\n" + "\n".join(f"  {e}" for e in errors) + "\n" if errors else ""
        # tool names, arguments and answers are the model's: never let them drive the terminal
        return safe_text(f"{head}\nunmet obligation {self.first_unmet.describe()}\n{mode}\n{failed}"
                         f"trajectory:\n{traj.compact()}")


def grade(case: ResolvedCase, traj: Trajectory, hook: Any = None, judgments: Mapping[str, Any] | None = None) -> Grade:
    """Check the obligations in order; `hook` is pytest's hook relay, or None for the defaults.

    `judgments`: the item's semantic verdicts by predicate id (judge.assess); without them the
    semantic checks use their keyword rules.
    """
    verdicts: list[Verdict] = []
    # a hook only the plugin's defaults implement is their result: called directly, per item it is
    # ten hook calls fewer (the same verdicts: the default obligation hook *is* check)
    checks = hook.pytest_agentfloor_check_obligation if hook and _others(hook.pytest_agentfloor_check_obligation) \
        else None
    for code in ORDER:
        v = checks(code=code, case=case, trajectory=traj, judgments=judgments) if checks else None
        verdicts.append(v if v is not None else check(code, case, traj, judgments))
    if hook and _others(hook.pytest_agentfloor_extra_obligations):
        for extra in hook.pytest_agentfloor_extra_obligations(case=case, trajectory=traj):
            verdicts.extend(extra or [])
    first = first_unmet(verdicts)
    if first is None:
        return Grade(True, verdicts)
    mode = hook.pytest_agentfloor_failure_mode(case=case, trajectory=traj, verdicts=verdicts) \
        if hook and _others(hook.pytest_agentfloor_failure_mode) else None
    return Grade(False, verdicts, first, mode or failure_mode(case, traj, verdicts),
                 terminal_flag(traj, verdicts))


def _others(caller: Any) -> bool:
    """Whether a hook has an implementation besides the plugin's own default (grading/defaults.py).

    A relay that is not pluggy's (no get_hookimpls: a test's stand-in) is always called."""
    impls = getattr(caller, "get_hookimpls", None)
    return impls is None or any(impl.plugin is not defaults for impl in impls())


from . import defaults  # noqa: E402 - it imports the obligations above; _others compares plugins to it
