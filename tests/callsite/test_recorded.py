"""Bring your own outputs (issue 25, point 12): recorded outputs graded through the normal items, no model call.

Also the call-site context block: its default template gives the same bytes as before, and a site
table can replace it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.byo import model_names, models_toml
from pytest_agentfloor.callsite.kind import CONTEXT_TEMPLATES, _context, check_template, expand_table, load_installation
from pytest_agentfloor.config import ModelConfig, load_models, tomllib
from pytest_agentfloor.corpus import config_fingerprint
from pytest_agentfloor.providers.base import ProviderError
from pytest_agentfloor.providers.recorded import RecordedOutputsError, RecordedProvider, read_outputs
from pytest_agentfloor.suite.loader import CaseError

REPO = Path(__file__).resolve().parents[2]
INSTALLATIONS = REPO / "cases" / "callsite" / "installations"

INTENT = '''
kind = "callsite"
site = "intent"
grader = "intent"
max_tokens = 10
labels = ["actuate", "other"]
system_prompt = "Reply with actuate or other."

[[case]]
id = "k-1"
group = "g"
label = "actuate"
prompt = "Switch the kettle on."

[[case]]
id = "k-2"
group = "g"
label = "other"
prompt = "Tell me a joke."

[[case]]
id = "k-3"
group = "g"
label = "other"
prompt = "What is the capital of France?"
'''


def line(**kw) -> str:
    return json.dumps(kw)


# -- the file format ------------------------------------------------------------------------
def test_lines_are_read_with_their_usage(tmp_path: Path) -> None:
    f = tmp_path / "out.jsonl"
    f.write_text(line(case_id="k-1", model="m", output="actuate", latency_s=0.5, input_tokens=12, output_tokens=1,
                      cost_usd=0.002, score=1) + "\n\n" + line(case_id="k-2", model="m", output="") + "\n")
    got = read_outputs(f)
    assert set(got) == {("m", "k-1"), ("m", "k-2")}
    a = got[("m", "k-1")]
    assert (a.output, a.latency_s, a.tokens_in, a.tokens_out, a.cost_usd, a.line) == ("actuate", 0.5, 12, 1, 0.002, 1)
    b = got[("m", "k-2")]
    assert (b.output, b.tokens_in, b.cost_usd, b.line) == ("", 0, None, 3)


@pytest.mark.parametrize("text,words", [
    ("{not json", ":1: not JSON"),
    ("[1, 2]", ":1: expected a JSON object with case_id, model, output, got list"),
    (line(case_id="k-1", model="m"), ":1: missing field 'output'"),
    (line(case_id="", model="m", output="x"), ":1: field 'case_id' must be a non-empty string"),
    (line(case_id="k-1", model="m", output=None), ":1: field 'output' must be a string, not null"),
    (line(case_id="k-1", model="m", output="x", input_tokens=1.5), ":1: field 'input_tokens' must be a whole number"),
    (line(case_id="k-1", model="m", output="x", cost_usd=-1), ":1: field 'cost_usd' must be a number >= 0, not -1"),
    (line(case_id="k-1", model="m", output="x", latency_s="fast"), ":1: field 'latency_s' must be a number >= 0"),
    (line(case_id="k-1", model="m", output="x", output_tokens=True), ":1: field 'output_tokens' must be a whole"),
])
def test_a_bad_line_names_file_line_and_field(tmp_path: Path, text: str, words: str) -> None:
    f = tmp_path / "out.jsonl"
    f.write_text(text + "\n")
    with pytest.raises(RecordedOutputsError) as err:
        read_outputs(f)
    assert str(err.value).startswith(f"{f}{words}")


def test_a_case_recorded_twice_names_both_lines(tmp_path: Path) -> None:
    f = tmp_path / "out.jsonl"
    f.write_text("\n".join([line(case_id="k-1", model="m", output="a"), line(case_id="k-1", model="n", output="a"),
                            line(case_id="k-1", model="m", output="b")]))
    with pytest.raises(RecordedOutputsError, match=r"out.jsonl:3: case_id 'k-1' of model 'm' is recorded twice "
                                                   r"\(first on line 1\)"):
        read_outputs(f)


def test_the_configuration_needs_a_path_and_keeps_old_resume_keys(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs 'path'"):
        ModelConfig(name="r", provider="recorded")
    with pytest.raises(ValueError, match="for provider \"recorded\" only"):
        ModelConfig(name="o", provider="openai", model="x", path="a.jsonl")
    plain = ModelConfig(name="o", provider="openai", model="x")
    assert "hosted" not in plain.public() and "path" not in plain.public()  # earlier records' keys stay
    marked = ModelConfig(name="o", provider="openai", model="x", hosted=True)
    assert marked.public()["hosted"] is True
    assert config_fingerprint(marked.public()) == config_fingerprint(plain.public())  # a label, not a condition
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "models.toml").write_text('[models.r]\nprovider = "recorded"\npath = "out.jsonl"\n')
    assert load_models(tmp_path / "sub" / "models.toml")["r"].path == str((tmp_path / "sub" / "out.jsonl").resolve())


def test_the_provider_answers_call_sites_only_and_names_a_missing_case(tmp_path: Path) -> None:
    from types import SimpleNamespace

    f = tmp_path / "out.jsonl"
    f.write_text(line(case_id="k-1", model="claude x", output="actuate", cost_usd=0.5))
    p = RecordedProvider(ModelConfig(name="x", provider="recorded", model="claude x", path=str(f)))
    reply = p.complete([], [], case=SimpleNamespace(kind="callsite", id="k-1"))
    assert (reply.content, reply.cost_usd, reply.tool_calls) == ("actuate", 0.5, [])
    with pytest.raises(ProviderError, match="no recorded output for case 'k-2' of model 'claude x'"):
        p.complete([], [], case=SimpleNamespace(kind="callsite", id="k-2"))
    with pytest.raises(ProviderError, match="call-site cases only"):
        p.complete([], [], case=SimpleNamespace(kind="episode", id="A01"))


def test_a_failed_recorded_call_is_an_infrastructure_error(tmp_path: Path) -> None:
    from types import SimpleNamespace

    f = tmp_path / "out.jsonl"
    f.write_text(line(case_id="k-1", model="m", output=None, error="HTTP 529 overloaded", latency_s=30.0) + "\n")
    rec = read_outputs(f)[("m", "k-1")]
    assert (rec.error, rec.output, rec.latency_s) == ("HTTP 529 overloaded", "", 30.0)
    p = RecordedProvider(ModelConfig(name="m", provider="recorded", path=str(f)))
    with pytest.raises(ProviderError, match="the recorded call of case 'k-1' failed: HTTP 529 overloaded"):
        p.complete([], [], case=SimpleNamespace(kind="callsite", id="k-1"))
    f.write_text(line(case_id="k-1", model="m", output=None, error="") + "\n")  # no error text: a bad line
    with pytest.raises(RecordedOutputsError, match="output null with its 'error' text"):
        read_outputs(f)


def test_import_names_fit_model_lists() -> None:
    names = model_names(["claude haiku 4.5", "gemma4:26b", "claude/haiku/4.5", "a::b"])
    assert names["gemma4:26b"] == "gemma4:26b"
    assert names["claude haiku 4.5"] == "claude-haiku-4.5" and names["claude/haiku/4.5"] == "claude-haiku-4.5-2"
    assert "::" not in names["a::b"]
    data = tomllib.loads(models_toml(Path("/x/o \"q\".jsonl"), names, {"gemma4:26b"}))
    assert data["models"]["gemma4:26b"] == {"provider": "recorded", "path": '/x/o "q".jsonl', "model": "gemma4:26b",
                                            "hosted": True}


# -- through pytest -------------------------------------------------------------------------
@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "cases" / "callsite").mkdir(parents=True)
    (pytester.path / "cases" / "callsite" / "intent.toml").write_text(INTENT)
    (pytester.path / "outputs.jsonl").write_text("\n".join([
        line(case_id="k-1", model="prod", output="actuate", latency_s=0.9, input_tokens=348, output_tokens=2,
             cost_usd=0.0004),
        line(case_id="k-2", model="prod", output="actuate", cost_usd=0.0003),
        line(case_id="k-3", model="prod", output="other"),
        line(case_id="k-1", model="small", output="actuate"), line(case_id="k-2", model="small", output="other"),
    ]) + "\n")
    pytester.makefile(".toml", models='[models.prod]\nprovider = "recorded"\npath = "outputs.jsonl"\nhosted = true\n'
                                      '[models.small]\nprovider = "recorded"\npath = "outputs.jsonl"\n')
    return pytester


def records(pytester: pytest.Pytester) -> list[dict]:
    return [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]


def test_recorded_outputs_are_graded_recorded_and_reported(project: pytest.Pytester) -> None:
    result = project.runpytest("--model", "prod,small", "--agentfloor-reference", "prod")
    # prod: k-1 and k-3 right, k-2 wrong; small: k-1, k-2 right, k-3 not recorded (an infra error)
    result.assert_outcomes(passed=4, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*no recorded output for case 'k-3' of model 'small'*"])
    recs = {(r["model"], r["task"]): r for r in records(project)}
    k1 = recs[("prod", "k-1")]
    assert (k1["passed"], k1["cost_usd"], k1["tokens_in"], k1["tokens_out"], k1["latency_s"]) == (True, 0.0004, 348,
                                                                                                 2, 0.9)
    assert recs[("prod", "k-2")]["passed"] is False and recs[("prod", "k-3")]["cost_usd"] is None
    assert recs[("small", "k-3")]["infra_error"] is True
    summary = json.loads((project.path / "reports" / "summary.json").read_text())["callsite"]
    assert summary["accuracy"]["intent"]["prod"]["accuracy"] == pytest.approx(2 / 3)
    assert {(r["policy"], r["model"]) for r in summary["routing"]} >= {("all_hosted", "prod"),
                                                                       ("local_best_per_site", None)}
    assert not (project.path / "reports" / "probe.json").exists()  # nothing to probe: no endpoint


def test_a_bad_line_stops_the_run_before_any_item(project: pytest.Pytester) -> None:
    with (project.path / "outputs.jsonl").open("a") as fh:
        fh.write('{"case_id": "k-9", "model": "prod"}\n')
    result = project.runpytest("--model", "prod")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*models.prod.path: *outputs.jsonl:6: missing field 'output'*"])


def run_import(project: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest_agentfloor", "import", *args], cwd=project.path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_import_command_grades_a_file_with_no_models_toml(project: pytest.Pytester) -> None:
    (project.path / "models.toml").unlink()
    (project.path / "pytest.ini").write_text("[pytest]\n")  # the project's rootdir, as a real project has
    run = run_import(project, "outputs.jsonl", "--hosted", "prod", "--", "-p", "no:cacheprovider", "-k", "k-1 or k-2")
    assert run.returncode == 1, run.stdout + run.stderr  # one output fails: a measurement
    recs = records(project)
    assert sorted((r["model"], r["task"], r["passed"]) for r in recs) == [
        ("prod", "k-1", True), ("prod", "k-2", False), ("small", "k-1", True), ("small", "k-2", True)]
    assert all(r["config"]["provider"] == "recorded" for r in recs)
    assert {r["model"]: r["config"].get("hosted") for r in recs} == {"prod": True, "small": None}


def test_the_import_command_reports_a_bad_line(project: pytest.Pytester) -> None:
    (project.path / "bad.jsonl").write_text(line(case_id="k-1", model="m", output=3) + "\n")
    run = run_import(project, "bad.jsonl")
    assert run.returncode == 2
    assert "bad.jsonl:1: field 'output' must be a string, not 3" in run.stderr


# -- the context block ------------------------------------------------------------------------
def test_the_default_context_block_is_unchanged() -> None:
    for name in ("site_a", "site_b"):
        inst = load_installation(INSTALLATIONS / f"{name}.toml")
        # the block as it was built before it had a template
        assert _context("actuator", inst) == f"AVAILABLE HA ENTITIES ({inst.name}):\n{inst.registry_text()}"
        assert _context("planner", inst) == (f"AVAILABLE HA ENTITIES ({inst.name}):\n{inst.registry_text()}\n\n"
                                             f"AVAILABLE AGENTS:\n{inst.agents_text()}")
        assert _context("intent", inst) == "" and _context("actuator", None) == ""
    assert set(CONTEXT_TEMPLATES) == {"actuator", "planner"}


def _table(template: str | None) -> dict:
    data = {"site": "actuator", "grader": "actuator", "system_prompt": "s",
            "installations_dir": str(INSTALLATIONS), "installation": "site_a",
            "case": [{"group": "g", "prompt": "Do nothing.", "actions": []}]}
    if template is not None:
        data["context_template"] = template
    return data


def test_a_site_table_overrides_the_context_block(tmp_path: Path) -> None:
    inst = load_installation(INSTALLATIONS / "site_a.toml")
    [case] = expand_table(_table("Devices of $id (cost $$0):\n$entity_ids"), tmp_path / "t.toml", "h")
    assert case.context == f"Devices of {inst.id} (cost $0):\n" + "\n".join(e.id for e in inst.entities)
    assert case.user_message == "Do nothing.\n\n" + case.context
    [default] = expand_table(_table(None), tmp_path / "t.toml", "h")
    assert default.context == _context("actuator", inst)


@pytest.mark.parametrize("template,words", [
    ("$registry and $secrets", "unknown placeholder $secrets; known: $name, $id, $registry, $entity_ids, $agents"),
    ("costs 5$", "a '$' not followed by a placeholder at character 7 (write $$ for a literal $)"),
])
def test_a_bad_context_template_is_a_case_error(tmp_path: Path, template: str, words: str) -> None:
    assert check_template(template) == [f"context_template: {words}"]
    with pytest.raises(CaseError, match="context_template"):
        expand_table(_table(template), tmp_path / "t.toml", "h")
    assert check_template(3) == ["context_template: must be a string, not int"]
