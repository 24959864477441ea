"""The agentfloor protocol's rules where the paper is silent, as the authors' harness settles them.

Repeats break a run only where the case declares repeated_identical_call, and only at its
consecutive threshold (harness/eval_checks/forbidden.py); a rejected submission is a tool error
the model may act on (harness/db.py's submission validator); the structured prompt replaces the
system prompt; step x2 gives D and E the authors' 20 turns. `tbb` keeps seed 002's rules.
Expected values are written out by hand from docs/protocol-agentfloor.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentfloor.episode import SYSTEM_PROMPTS, run_episode
from pytest_agentfloor.grading import grade
from pytest_agentfloor.protocol import PROTOCOLS, resolve_protocol
from pytest_agentfloor.sandbox import Sandbox
from pytest_agentfloor.suite.loader import load_case, parse_case, resolve
from tests.test_episode import REPO, b1
from tests.test_episode_loop import VENDOR, Model, answer, c1, call

AGENTFLOOR, TBB = PROTOCOLS["agentfloor"], PROTOCOLS["tbb"]


def _declaring(case: Any, threshold: int | None = None) -> Any:
    """The resolved case as if its file declared repeated_identical_call (at `threshold`)."""
    update: dict[str, Any] = {"declared_forbidden": ("repeated_identical_call",), "turn_budget": 10}
    if threshold is not None:
        update["repeat_threshold"] = threshold
    return case.model_copy(update=update)


def _reads(n: int) -> list[Any]:
    return [call("get_attribute", VENDOR) for _ in range(n)]


def _b1_run(n_reads: int, protocol: Any) -> Any:
    case = b1()
    model = Model(call("search_records", {"query": "Halvorsen"}), *_reads(n_reads), answer())
    assert n_reads + 2 <= case.turn_budget
    return case, run_episode(case, model, model="m", protocol=protocol)


# -- repeated identical calls ----------------------------------------------------------------------
def test_undeclared_repeats_pass_under_agentfloor_and_fail_under_tbb() -> None:
    case, traj = _b1_run(2, AGENTFLOOR)  # B1 names no forbidden behaviour: only the schema default
    assert case.declared_forbidden == () and "repeated_identical_call" in case.forbidden
    assert grade(case, traj).passed
    case, traj = _b1_run(2, TBB)
    g = grade(case, traj)
    assert not g.passed and g.first_unmet is not None and g.first_unmet.code == "C"


@pytest.mark.parametrize("reads,threshold,passed", [(2, 3, True), (3, 3, False), (3, 4, True), (2, 2, False)])
def test_a_declared_repeat_fails_only_at_its_consecutive_threshold(reads: int, threshold: int, passed: bool) -> None:
    case = _declaring(b1(), threshold)
    model = Model(call("search_records", {"query": "Halvorsen"}), *_reads(reads), answer())
    traj = run_episode(case, model, model="m", protocol=AGENTFLOOR)
    g = grade(case, traj)
    assert g.passed is passed
    if not passed:
        assert g.first_unmet is not None and g.first_unmet.code == "C"
        assert f"called {reads} times in a row" in g.first_unmet.observed


def test_identical_calls_that_are_not_consecutive_are_no_run() -> None:
    case = _declaring(b1(), 3)
    other = call("lookup_record", {"record_id": "VND-H4L9W"})
    model = Model(call("search_records", {"query": "Halvorsen"}), call("get_attribute", VENDOR), other,
                  call("get_attribute", VENDOR), other, call("get_attribute", VENDOR), answer())
    assert grade(case, run_episode(case, model, model="m", protocol=AGENTFLOOR)).passed


def test_the_threshold_is_read_from_the_case_file() -> None:
    text = (REPO / "cases" / "tier_B" / "B1.toml").read_text()
    text = text.replace('tools = [', 'forbidden = ["repeated_identical_call"]\nrepeat_threshold = 4\ntools = [', 1)
    import tomllib

    case = parse_case(tomllib.loads(text), REPO / "B1.toml")
    rc = resolve(case, "v0", "i0", "x")
    assert (rc.declared_forbidden, rc.repeat_threshold) == (("repeated_identical_call",), 4)
    with pytest.raises(Exception, match="repeat_threshold"):
        parse_case(tomllib.loads(text.replace("repeat_threshold = 4", "repeat_threshold = 1")), REPO / "B1.toml")


# -- submissions: rejected with feedback, retried --------------------------------------------------
WRONG = {"decision": "approve", "record_id": "ACR-T5W3N"}  # C1's gold escalates ACR-T5W3N
RIGHT = {"decision": "escalate", "record_id": "ACR-T5W3N"}
READ = {"record_id": "ACR-T5W3N", "attribute": "risk_score"}


@pytest.mark.parametrize("feedback,message", [
    ("expected", "decision mismatch: expected 'escalate', got 'approve'"),
    ("field", "decision is not correct for this task"),
    ("verdict", "the submission was not accepted"),
])
def test_a_wrong_submission_is_rejected_saying_what_the_feedback_level_allows(feedback: str, message: str) -> None:
    box = Sandbox(c1().fixtures, c1().tools, expected=dict(RIGHT), feedback=feedback)
    out = box.call("submit_decision", WRONG)
    assert (out["status"], out["error_type"], out["message"]) == ("error", "submission_rejected", message)
    assert box.submissions == []
    assert "escalate" not in out["message"] or feedback == "expected"  # only `expected` names the value
    assert box.call("submit_decision", RIGHT)["status"] == "ok" and len(box.submissions) == 1


def test_under_agentfloor_a_rejected_submission_can_be_retried_and_the_run_passes() -> None:
    case = c1()
    model = Model(call("get_attribute", READ), call("submit_decision", WRONG), call("submit_decision", RIGHT))
    traj = run_episode(case, model, model="m", protocol=AGENTFLOOR)
    assert [c.result["status"] for c in traj.calls] == ["ok", "error", "ok"]
    assert traj.termination == "submitted" and traj.submissions == [
        {"decision": "escalate", "record_id": "ACR-T5W3N", "evidence": [], "note": ""}]
    assert grade(case, traj).passed


def test_under_tbb_the_first_allowed_submission_is_final() -> None:
    case = c1()
    model = Model(call("get_attribute", READ), call("submit_decision", WRONG), call("submit_decision", RIGHT))
    traj = run_episode(case, model, model="m", protocol=TBB)
    assert traj.termination == "submitted" and len(traj.calls) == 2
    g = grade(case, traj)
    assert not g.passed and g.first_unmet is not None and g.first_unmet.code == "P"  # its decide step


def test_a_rejected_submission_that_is_never_fixed_fails_on_the_outcome() -> None:
    case = c1()
    model = Model(call("get_attribute", READ), call("submit_decision", WRONG), answer("I approved it."))
    traj = run_episode(case, model, model="m", protocol=AGENTFLOOR)
    g = grade(case, traj)
    assert traj.submissions == [] and not g.passed and g.first_unmet is not None and g.first_unmet.code == "P"


def test_submission_feedback_is_a_protocol_parameter_and_tbb_refuses_it() -> None:
    assert resolve_protocol("agentfloor", submission_feedback="verdict").params()["submission_feedback"] == "verdict"
    with pytest.raises(ValueError, match="expected one of expected, field, verdict"):
        resolve_protocol("agentfloor", submission_feedback="loud")
    with pytest.raises(ValueError, match="applies to agentfloor"):
        resolve_protocol("tbb", submission_feedback="field")
    # the rules added for agentfloor never appear in tbb's or legacy's parameters (old fingerprints hold)
    assert not {"repeat_rule", "submission_feedback", "extended_steps"} & set(TBB.params())
    assert not {"repeat_rule", "submission_feedback", "extended_steps"} & set(PROTOCOLS["legacy"].params())


# -- ablations -------------------------------------------------------------------------------------
def test_the_structured_prompt_replaces_the_system_prompt() -> None:
    assert SYSTEM_PROMPTS["default"] not in SYSTEM_PROMPTS["structured"]
    assert SYSTEM_PROMPTS["explicit_submission"].startswith(SYSTEM_PROMPTS["default"])


def _tier(tier: str) -> Any:
    path = next((REPO / "cases" / f"tier_{tier}").glob("*.toml"))
    case, digest = load_case(path)
    return resolve(case, "v0", "i0", digest)


@pytest.mark.parametrize("tier,x1,x2", [("A", 2, 4), ("C", 6, 12), ("D", 8, 20), ("E", None, 20)])
def test_step_x2_gives_d_and_e_the_authors_20_turns(tier: str, x1: int | None, x2: int) -> None:
    case = _tier(tier)
    doubled = resolve_protocol("agentfloor", step_budget_scale=2)
    assert doubled.limits(case).turns == x2
    if x1 is not None:
        assert AGENTFLOOR.limits(case).turns == x1
    assert doubled.completion_cap == 4096 and AGENTFLOOR.completion_cap is None
    # legacy has no such setting: its x2 doubles every budget
    assert resolve_protocol("legacy", step_budget_scale=2).limits(case).turns == 2 * case.turn_budget
