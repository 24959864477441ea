"""Hooks a conftest.py (or another plugin) may implement to extend or replace grading.

Implementations in a conftest.py run before the plugin's defaults, so a `firstresult` hook
that returns a value there replaces the default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import pytest

if TYPE_CHECKING:
    from .callsite.graders import Outcome
    from .callsite.schema import CallSiteCase
    from .grading import Verdict
    from .suite.schema import ResolvedCase
    from .trajectory import Trajectory



@pytest.hookspec(firstresult=True)
def pytest_agentfloor_check_obligation(code: str, case: "ResolvedCase", trajectory: "Trajectory",
                                       judgments: "Mapping[str, Any] | None") -> "Verdict | None":
    """Check obligation `code` (one of A S P Q E X G B C) for one episode.

    Return a Verdict to decide it, or None to leave it to the next implementation; the
    plugin's default implements the nine obligations of the benchmark. `judgments` maps each
    semantic predicate of the case to its verdict (judge or keyword stand-in; see docs/judge.md);
    an implementation may leave the argument out.
    """


@pytest.hookspec
def pytest_agentfloor_extra_obligations(case: "ResolvedCase", trajectory: "Trajectory") -> "list[Verdict]":
    """Return further verdicts, checked after the nine (use your own codes, e.g. "Z1")."""
    return []  # a specification: pluggy never calls its body


@pytest.hookspec(firstresult=True)
def pytest_agentfloor_failure_mode(case: "ResolvedCase", trajectory: "Trajectory", verdicts: "list[Verdict]") -> "str | None":
    """Classify a failed run (default: the F1-F7 priority cascade)."""


@pytest.hookspec
def pytest_agentfloor_record(record: "dict[str, Any]") -> None:
    """Called with each run record before it is stored; may add fields (never secrets)."""


@pytest.hookspec(firstresult=True)
def pytest_agentfloor_callsite_grade(case: "CallSiteCase", output: "str") -> "Outcome | None":
    """Grade one call-site output; return an Outcome to decide it, or None for the next implementation.

    Runs in the process that ran the item (an xdist worker or the only process), for call-site
    cases only (``case.kind == "callsite"``). The plugin's graders are ``intent``, ``action_label``,
    ``actuator``, ``planner`` and ``codegen``; a table with ``grader = "mine"`` is graded only here::

        from pytest_agentfloor.callsite.graders import Outcome
        from pytest_agentfloor.grading import Verdict

        def pytest_agentfloor_callsite_grade(case, output):
            if case.grader != "mine":
                return None
            return Outcome([Verdict("mine.upper", output.isupper(), "upper case", output[:40])])
    """
