"""Call-site items through real pytest runs (pytester): ids, markers, records, xdist, offline report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.callsite.stats import summarise
from pytest_agentfloor.kinds import load_file

REPO = Path(__file__).resolve().parents[2]
CALLSITE = REPO / "cases" / "callsite"
MODELS = """
[models.big]
provider = "scripted"
policy = "oracle"
pricing = { input_per_mtok = 3.0, output_per_mtok = 15.0 }
[models.eager]
provider = "scripted"
policy = "over_actuate"
params_b = 2
[models.shy]
provider = "scripted"
policy = "always_refuse"
params_b = 4
"""


def n_cases(path: Path = CALLSITE) -> int:
    return sum(len(load_file(p)[1]) for p in sorted(path.glob("*.toml")))


@pytest.fixture
def sites(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(CALLSITE, pytester.path / "cases" / "callsite")
    pytester.makefile(".toml", models=MODELS)
    return pytester


def records(pytester: pytest.Pytester) -> list[dict]:
    return [json.loads(line) for line in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]


def test_oracle_passes_every_call_site_case(sites: pytest.Pytester) -> None:
    result = sites.runpytest("cases/callsite", "--model", "oracle", "--strict-markers")
    result.assert_outcomes(passed=n_cases())
    recs = records(sites)
    assert len(recs) == n_cases() and all(r["passed"] for r in recs)
    r = next(x for x in recs if x["task"] == "actuator-b_flip-01")
    assert r["kind"] == "callsite" and r["turns"] == 1 and r["calls"] == 0
    assert r["facets"]["site"] == "actuator" and r["facets"]["installation"] == "site_b"
    assert r["facets"]["cross_site"] == "flip" and r["facets"]["refused"] is True
    assert r["trajectory"]["messages"][1]["content"].startswith("Turn off the TV.")
    assert "AVAILABLE HA ENTITIES (office)" in r["trajectory"]["messages"][1]["content"]


def test_markers_select_site_installation_and_sub_group(sites: pytest.Pytester) -> None:
    result = sites.runpytest("cases/callsite", "--model", "oracle", "-m", "actuator and site_b", "--co", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids and all("::actuator-b_" in i for i in ids)
    assert len(ids) == sum(1 for line in (CALLSITE / "actuator.toml").read_text().splitlines()
                           if line.startswith('group = "b_'))
    result = sites.runpytest("cases/callsite", "--model", "oracle", "-m", "codegen and subscribe", "--co", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids == [f"cases/callsite/codegen.toml::codegen-subscribe-0{n}[v0-i0-r0-oracle]" for n in (1, 2, 3)]
    result = sites.runpytest("cases/callsite", "--model", "oracle", "-k", "planner and infeasible", "--co", "-q")
    assert sum("planner-infeasible" in line for line in result.stdout.lines) == 4


def test_degenerate_policies_land_where_the_paper_puts_them(sites: pytest.Pytester) -> None:
    result = sites.runpytest("cases/callsite/actuator.toml", "cases/callsite/planner.toml",
                             "--model", "big,eager,shy", "--agentfloor-reference", "big", "-p", "no:randomly")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] > 0 and "error" not in outcomes and "errors" not in outcomes
    s = summarise(records(sites), reference="big")
    act = {a.model: a for a in s.actuation}
    # the over-actuator: right on every actionable request, acts on every impossible one, by substitution
    assert act["eager"].execution_accuracy == 1.0 and act["eager"].over_actuation == 1.0
    assert act["eager"].substitution_share == 1.0 and act["eager"].hallucinations == 0
    # the refuser: a perfect over-actuation rate, and no execution at all
    assert act["shy"].execution_accuracy == 0.0 and act["shy"].over_actuation == 0.0
    assert act["shy"].refused_actionable == act["shy"].n_actionable
    assert act["big"].execution_accuracy == 1.0 and act["big"].over_actuation == 0.0
    # aggregate actuator accuracy alone hides which way each one fails
    acc = s.accuracy["actuator"]
    assert acc["eager"].accuracy == pytest.approx(act["eager"].n_actionable / (act["eager"].n_actionable
                                                                             + act["eager"].n_impossible))
    assert acc["shy"].accuracy == pytest.approx(1 - acc["eager"].accuracy)
    tests = {(t.model, t.site): t for t in s.tests}
    assert tests[("eager", "actuator")].only_model == 0
    assert tests[("eager", "actuator")].only_reference == act["eager"].n_impossible
    result.stdout.fnmatch_lines(["*Actuator: acting versus refusing*", "*routing policies*"])


def test_xdist_and_the_offline_report_give_the_same_files(sites: pytest.Pytester) -> None:
    args = ["cases/callsite", "--model", "big,eager", "--agentfloor-reference", "big", "--agentfloor-report", "all"]
    sites.runpytest(*args)
    serial = json.loads((sites.path / "reports" / "summary.json").read_text())
    sites.runpytest(*args, "-n", "2")
    files = {n: (sites.path / "reports" / n).read_text() for n in ("summary.json", "report.md", "report.html")}
    assert json.loads(files["summary.json"])["callsite"] == serial["callsite"]
    assert "# Call sites" in files["report.md"] and 'id="callsite"' in files["report.html"]
    assert "<svg" in files["report.html"].split('id="callsite"')[1]
    out = sites.path / "rebuilt"
    proc = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "report", str(sites.path / "reports" / "runs.jsonl"),
                           "--reference", "big", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for name, text in files.items():
        assert (out / name).read_text() == text, name


def test_a_broken_site_table_is_a_clear_collection_error_and_the_rest_runs(sites: pytest.Pytester) -> None:
    path = sites.path / "cases" / "callsite" / "intent.toml"
    path.write_text(path.read_text().replace('label = "actuate"', 'label = "act_now"', 1))
    (sites.path / "cases" / "callsite" / "ghost.toml").write_text(
        'kind = "callsite"\nsite = "ghost"\ngrader = "actuator"\nsystem_prompt = "x"\n'
        '[[case]]\ngroup = "a_control"\ninstallation = "site_z"\nprompt = "p"\nactions = []\n')
    result = sites.runpytest("cases/callsite", "--model", "oracle")
    result.stdout.fnmatch_lines(["*invalid case file *ghost.toml:*",
                                 "*installation: no file installations/site_z.toml for 'site_z'; available: site_a, "
                                 "site_b*",
                                 "*invalid case file *intent.toml:*", "*label 'act_now' is not in labels*"])
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == n_cases() - 24 and outcomes["errors"] == 2


def test_the_gate_checks_ladder_tiers_and_sets_call_sites_aside(sites: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", sites.path / "cases" / "tier_A0")
    # 5 tasks x 5 variants x 2 runs = 50 pairs: the gate's guarded interval needs 35 to certify -10 pp
    sites.runpytest("cases", "--model", "oracle", "--agentfloor-runs", "2")
    shutil.copy(sites.path / "reports" / "runs.jsonl", sites.path / "baseline.jsonl")
    result = sites.runpytest("cases", "--model", "oracle", "--agentfloor-runs", "2", "--agentfloor-baseline", "baseline.jsonl")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*gate tier A0: *", f"*gate: {2 * n_cases()} call-site record(s) are reported but not "
                                 "gated*", "*agentfloor gate: PASSED*"])


def test_only_declared_call_site_tables_are_collected(sites: pytest.Pytester) -> None:
    (sites.path / "cases" / "callsite" / "notes.toml").write_text('title = "not a case"\n')
    result = sites.runpytest("cases/callsite", "--model", "oracle")
    result.assert_outcomes(passed=n_cases())
    result = sites.runpytest("cases/callsite/installations", "--model", "oracle")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_callsite_weights_option_reaches_the_routing_table(sites: pytest.Pytester) -> None:
    args = ["cases/callsite/intent.toml", "cases/callsite/codegen.toml", "--model", "shy", "--agentfloor-report", "all"]
    sites.runpytest(*args, "--callsite-weights", "intent=3,codegen=1")
    cs = json.loads((sites.path / "reports" / "summary.json").read_text())["callsite"]
    assert cs["weights"] == {"intent": 0.75, "codegen": 0.25}
    out = sites.path / "rebuilt"
    proc = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "report", str(sites.path / "reports" / "runs.jsonl"),
                           "--callsite-weights", "intent=3,codegen=1", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["callsite"] == cs
    result = sites.runpytest(*args, "--callsite-weights", "intent=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--callsite-weights: expected SITE=WEIGHT pairs*got 'intent=lots'*"])


def test_regrade_rereads_call_site_tables(sites: pytest.Pytester) -> None:
    sites.runpytest("cases/callsite/intent.toml", "cases/callsite/actuator.toml", "--model", "oracle")
    path = sites.path / "cases" / "callsite" / "intent.toml"
    path.write_text(path.read_text().replace('label = "home_assistant"', 'label = "other"', 1))  # the gold moves
    proc = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "regrade", str(sites.path / "reports" / "runs.jsonl"),
                           "--cases", str(sites.path / "cases"), "--write", str(sites.path / "regraded.jsonl")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "intent-crud-01" in proc.stdout and "failed (intent.label, None)" in proc.stdout
    assert "1 outcome(s) changed" in proc.stdout
    new = [json.loads(line) for line in (sites.path / "regraded.jsonl").read_text().splitlines()]
    changed = next(r for r in new if r["task"] == "intent-crud-01")
    assert changed["passed"] is False and changed["facets"]["rule"] == "intent.label"


ROUTER = '''kind = "callsite"
site = "router"
grader = "intent"
labels = ["actuate", "other"]
system_prompt = "Reply with one word."
{parser}
[[case]]
group = "chat"
prompt = "How are you?"
label = "other"
reference = "OTHER\\n\\nThis is small talk."
'''


def _recorded_reply(pytester: pytest.Pytester) -> None:
    """A model that answers the reference's reply (a model, not the oracle: under the strict parser
    the oracle's own reference failing its case is a case error, not a model failure)."""
    pytester.makefile(".toml", models='[models.m]\nprovider = "recorded"\npath = "outputs.jsonl"\n')
    (pytester.path / "outputs.jsonl").write_text(json.dumps(
        {"case_id": "router-chat-01", "model": "m", "output": "OTHER\n\nThis is small talk."}) + "\n")


@pytest.mark.parametrize("option, field, passed", [
    ((), "", True),                                                   # default: the deployed parser
    (("--agentfloor-callsite-parser", "strict"), "", False),          # the option, for tables naming none
    (("--agentfloor-callsite-parser", "deployed"), 'parser = "strict"', False),  # a table's own field wins
    ((), 'parser = "deployed"', True),
    (("--agentfloor-callsite-parser", "harness"), "", True),         # the authors' harness: first word too
    (("--agentfloor-callsite-parser", "strict"), 'parser = "harness"', True),
])
def test_the_parser_option_and_the_table_field(pytester: pytest.Pytester, option: tuple, field: str,
                                               passed: bool) -> None:
    (pytester.path / "cases" / "callsite").mkdir(parents=True)
    (pytester.path / "cases" / "callsite" / "router.toml").write_text(ROUTER.format(parser=field))
    _recorded_reply(pytester)
    result = pytester.runpytest("cases/callsite", "--model", "m", *option)
    result.assert_outcomes(passed=int(passed), failed=int(not passed))
    if not passed:
        result.stdout.fnmatch_lines(["*failed rule intent.valid_label*"])


def test_a_bad_parser_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases" / "callsite").mkdir(parents=True)
    (pytester.path / "cases" / "callsite" / "router.toml").write_text(ROUTER.format(parser=""))
    result = pytester.runpytest("cases/callsite", "--model", "oracle", "--agentfloor-callsite-parser", "lenient")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-callsite-parser: expected one of deployed, strict, harness, got 'lenient'*"])


def test_records_carry_the_parser_and_regrade_reads_replies_as_the_run_did(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases" / "callsite").mkdir(parents=True)
    (pytester.path / "cases" / "callsite" / "router.toml").write_text(ROUTER.format(parser=""))
    _recorded_reply(pytester)
    pytester.runpytest("cases/callsite", "--model", "m", "--agentfloor-callsite-parser", "strict")
    (rec,) = records(pytester)
    assert rec["facets"]["parser"] == "strict" and rec["passed"] is False
    runs = str(pytester.path / "reports" / "runs.jsonl")
    proc = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "regrade", runs, "--cases", str(pytester.path / "cases")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "0 outcome(s) changed" in proc.stdout
