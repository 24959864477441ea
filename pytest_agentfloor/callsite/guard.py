"""Totality at the call-site graders' boundary: any output gets a verdict, or a kept-record error.

The graders parse what the model wrote (``json``, ``ast``). Hostile output can make a parser
raise instead of answering: JSON nested 100,000 deep (RecursionError), an integer of 5,000
digits (ValueError: Python's int-from-string limit), ``"1+" * 4000`` or ``"not " * 20000``
(RecursionError or MemoryError in the compiler). A deployed parser fails on the same text, so
that is the model's output failing the site's first rule (its format or parse rule), with the
reason. Any *other* exception is a bug of the grader, not the model's doing: it becomes
:class:`GraderCrashed`, which the item turns into an infrastructure error with its record kept.

Outputs longer than :data:`MAX_GRADED_CHARS` are failed on the first rule without parsing, so
grading time and memory stay bounded whatever the model sends.
"""

from __future__ import annotations

from typing import Any, Callable

from ..grading.obligations import Verdict

#: longest output a grader parses (characters); longer ones fail the site's first rule unread
MAX_GRADED_CHARS = 256 * 1024
#: the first rule of each shipped grader: an output it cannot read fails this rule
FIRST_RULE: dict[str, tuple[str, str]] = {
    "intent": ("intent.valid_label", "one label"),
    "action_label": ("action_label.valid_label", "one label"),
    "actuator": ("actuator.format", "a JSON array of service calls"),
    "planner": ("planner.format", "a JSON array of pipeline steps"),
    "codegen": ("codegen.parse", "Python source"),
}
#: what hostile input makes a parser raise (the output's fault, graded as unreadable)
UNREADABLE: tuple[type[BaseException], ...] = (RecursionError, MemoryError, ValueError, OverflowError)


class GraderCrashed(Exception):
    """A grader raised on an output for a reason that is not the output's: an infrastructure error."""


def _unreadable(grader: str, expected: str, observed: str) -> Any:
    from .graders import Outcome

    code, _ = FIRST_RULE.get(grader, (f"{grader}.format", expected))
    return Outcome([Verdict(code, False, expected, observed)], {"unreadable": True})


def guarded(grader_name: str, grade: Callable[[Any, str], Any], case: Any, output: str) -> Any:
    """``grade(case, output)``, total: an Outcome for every string, or GraderCrashed.

    Only the exceptions hostile *input* causes become verdicts; the grader's own bugs do not.
    """
    expected = FIRST_RULE.get(grader_name, ("", "an output the grader can read"))[1]
    if len(output) > MAX_GRADED_CHARS:
        return _unreadable(grader_name, f"{expected} (at most {MAX_GRADED_CHARS:,} characters)",
                           f"{len(output):,} characters: not read")
    try:
        return grade(case, output)
    except UNREADABLE as exc:
        what = type(exc).__name__
        detail = " ".join(str(exc).split())[:120]
        return _unreadable(grader_name, expected,
                           f"output no parser can read ({what}{': ' + detail if detail else ''})")
    except Exception as exc:  # the grader's bug: never charged to the model, never losing the record
        raise GraderCrashed(f"grader {grader_name!r} crashed: {type(exc).__name__}: "
                            f"{' '.join(str(exc).split())[:200]}") from exc
