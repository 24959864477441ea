"""Worked example of docs/callsite.md: a team evaluates two calls of its own agent.

One call reuses a built-in grader (a label router with the team's production prompt); the other
has a contract of its own, graded by a conftest.py hook. Run through pytest as a user would.
"""

from __future__ import annotations

import json

import pytest

ROUTER = '''
kind = "callsite"
site = "ticket_router"
grader = "intent"
max_tokens = 10
labels = ["billing", "outage", "other"]
system_prompt = """(the agent's production prompt, pasted verbatim)
Route the customer message to one queue. Reply with billing, outage or other only."""

[[case]]
group = "billing"
prompt = "I was charged twice this month."
label = "billing"

[[case]]
group = "outage"
prompt = "Your API returns 503 since noon."
label = "outage"
'''

SUMMARY = '''
kind = "callsite"
site = "ticket_summary"
grader = "summary"
system_prompt = "Summarise the ticket as JSON: {\\"queue\\": ..., \\"words\\": <at most 12 words>}."

[[case]]
group = "short"
prompt = "Customer says the invoice PDF is blank when downloaded from the portal."
reference = '{"queue": "billing", "words": "invoice PDF downloads blank from portal"}'
'''

CONFTEST = '''
import json

from pytest_agentfloor.callsite.graders import Outcome
from pytest_agentfloor.grading import Verdict


def pytest_agentfloor_callsite_grade(case, output):
    if case.grader != "summary":
        return None  # the plugin's graders handle the rest
    try:
        data = json.loads(output)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Outcome([Verdict("summary.json", False, "a JSON object", output[:60])])
    words = len(str(data.get("words", "")).split())
    return Outcome([Verdict("summary.json", True),
                    Verdict("summary.queue", data.get("queue") in ("billing", "outage", "other"),
                            "a known queue", repr(data.get("queue"))),
                    Verdict("summary.length", 0 < words <= 12, "1-12 words", f"{words} words")])
'''

MODELS = '''
[models.good]
provider = "scripted"
policy = "oracle"
[models.lazy]
provider = "scripted"
policy = "always_refuse"
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "cases" / "callsite").mkdir(parents=True)
    (pytester.path / "cases" / "callsite" / "ticket_router.toml").write_text(ROUTER)
    (pytester.path / "cases" / "callsite" / "ticket_summary.toml").write_text(SUMMARY)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".toml", models=MODELS)
    return pytester


def test_own_call_sites_with_a_builtin_and_a_hook_grader(project: pytest.Pytester) -> None:
    result = project.runpytest("cases/callsite", "--model", "good,lazy", "--agentfloor-reference", "good", "--strict-markers")
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines([
        "*ticket_router-billing-01*lazy*", "failed rule intent.valid_label: expected one of billing, outage, other; "
        "observed []",
        "*ticket_summary-short-01*lazy*", "failed rule summary.json: expected a JSON object; observed []",
    ])
    result.stdout.fnmatch_lines(["*Call sites: accuracy per site and model*", "*ticket_router*good*100.0%*"])
    summary = json.loads((project.path / "reports" / "summary.json").read_text())["callsite"]
    assert summary["sites"] == ["ticket_router", "ticket_summary"]
    assert {r["policy"] for r in summary["routing"]} >= {"all_on_reference", "local_best_per_site"}


def test_a_table_naming_an_unregistered_grader_fails_its_items_with_a_hint(project: pytest.Pytester) -> None:
    (project.path / "conftest.py").unlink()
    result = project.runpytest("cases/callsite/ticket_summary.toml", "--model", "good")
    # the model answers the table's reference: a grader nobody registered makes it a case error (the
    # harness's, never the model's failure), and the hint says what to implement
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["case error: *summary.grader: none registered "
                                 "(implement pytest_agentfloor_callsite_grade)*"])
