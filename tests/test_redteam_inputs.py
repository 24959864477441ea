"""Red team, issue 27 points 9 and 13: bad inputs give short errors naming the file, field or option;
one duplicate rule in every command; --agentfloor-resume keeps to the selection; a merged shard
report says COMPLETE or PARTIAL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.__main__ import main as cli
from pytest_agentfloor.config import ConfigError, load_models
from pytest_agentfloor.report.cli import merge_runs
from pytest_agentfloor.results import DUPLICATE_RULE, latest_runs
from pytest_agentfloor.runinfo import merged_run

REPO = Path(__file__).resolve().parents[1]


# -- base_url ----------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["not a url", "localhost:8000", "ftp://h/v1", "http://", "http://h:99999/v1",
                                 "http://h/v1\n", "http://h\x1b[2J/v1"])
def test_a_garbage_base_url_is_an_error_at_load_naming_file_and_field(tmp_path: Path, url: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(f'[models.bad]\nprovider = "openai"\nmodel = "m"\nbase_url = {json.dumps(url)}\n')
    with pytest.raises(ConfigError) as exc:
        load_models(path)
    text = str(exc.value)
    assert text.startswith(f"{path}: models.bad.base_url: ") and "\x1b" not in text and "\n" not in text


def test_a_pool_with_one_garbage_url_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[models.p]\nprovider = "openai"\nmodel = "m"\nbase_url = ["http://a:1/v1", "nope"]\n')
    with pytest.raises(ConfigError, match="models.p.base_url: entry 1 of the endpoint pool: 'nope'"):
        load_models(path)


def test_good_base_urls_still_load(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text('[models.a]\nprovider = "openai"\nmodel = "m"\nbase_url = "https://u:p@h.example:8443/v1?k=s"\n'
                    '[models.b]\nprovider = "ollama"\nmodel = "m"\nbase_url = "http://127.0.0.1:11434"\n')
    assert set(load_models(path)) >= {"a", "b"}


# -- command-line arguments ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def oracle_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small runs.jsonl written by hand: two tasks of one model, all passed."""
    path = tmp_path_factory.mktemp("runs") / "runs.jsonl"
    recs = [dict(model="m", task=t, tier="A", variant="v0", instance="i0", run=0, passed=True, infra_error=False,
                 nodeid=f"cases/tier_A/{t}.toml::{t}[v0-i0-r0-m]") for t in ("A1", "A2")]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.mark.parametrize("args, says", [
    (["compare", "{r}", "{r}", "--changed", "-5"], "--changed: expected a whole number >= 0, got '-5'"),
    (["compare", "{r}", "{r}", "--gate-min-pairs", "-1"], "--gate-min-pairs: expected a whole number >= 0"),
    (["compare", "{r}", "{r}", "--n-boot", "0"], "--n-boot: expected a whole number from 1 to 1000000"),
    (["view", "{r}", "--serve", "--port", "99999"], "--port: expected a whole number from 0 to 65535"),
])
def test_bad_counts_and_ports_are_short_usage_errors(oracle_runs: Path, capsys: pytest.CaptureFixture[str],
                                                     args: list[str], says: str) -> None:
    with pytest.raises(SystemExit) as exc:
        cli([a.format(r=oracle_runs) for a in args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_compare_viewer_into_a_missing_directory_is_a_short_error(oracle_runs: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no" / "such" / "viewer.html"
    assert cli(["compare", str(oracle_runs), str(oracle_runs), "--viewer", str(target), "--n-boot", "100"]) == 2
    err = capsys.readouterr().err
    assert f"--viewer {target}: no directory {target.parent}" in err and not target.exists()


def test_view_on_a_port_that_cannot_be_served_is_a_short_error(oracle_runs: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli(["view", str(oracle_runs), "--out", str(tmp_path / "v.html"), "--serve", "--port", str(port)]) == 2
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err


def test_regrade_of_a_file_with_no_usable_record_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "runs.jsonl"
    bad.write_text('{"model": "m"}\nnot json\n')
    assert cli(["regrade", str(bad), "--cases", str(REPO / "cases")]) == 2
    assert f"no usable record in {bad}" in capsys.readouterr().err


# -- ids -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [("id", "site_t\n"), ("entity", "light.kitchen\n")])
def test_ids_with_a_trailing_newline_are_refused(field: str, value: str) -> None:
    from pydantic import ValidationError

    from pytest_agentfloor.callsite.schema import Installation

    data = {"id": "site_t", "name": "n", "entities": [{"id": "light.kitchen", "name": "K"}]}
    if field == "id":
        data["id"] = value
    else:
        data["entities"][0]["id"] = value
    with pytest.raises(ValidationError):
        Installation.model_validate(data)


def test_a_model_name_with_escapes_is_echoed_escaped(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    result = pytester.runpytest("cases/tier_A0", "--model", "evil\x1b]0;pwned\x07\u202e", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "unknown model(s) evil\\x1b]0;pwned\\x07\\u202e" in err and "\x1b" not in err and "\u202e" not in err


# -- one duplicate rule ---------------------------------------------------------------------------
def _rec(passed: bool, **kw: object) -> dict:
    return dict(model="m", task="A1", tier="A", variant="v0", instance="i0", run=0, passed=passed, infra_error=False,
                nodeid="cases/tier_A/A1.toml::A1[v0-i0-r0-m]", **kw)


def test_the_last_record_of_a_run_wins_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_agentfloor.compare import series_of
    from pytest_agentfloor.report.files import prepare_records

    first, later = _rec(False), _rec(True)
    assert latest_runs([first, later]) == ([later], 1)
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(first) + "\n" + json.dumps(later) + "\n")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(first) + "\n")
    b.write_text(json.dumps(later) + "\n")
    # within one file and across files given in order: report, compare's series and the tables agree
    for paths in ([one], [a, b]):
        merged, notes = merge_runs(paths)
        assert [r["passed"] for r in merged] == [True] and notes[-1].endswith(DUPLICATE_RULE)
    assert [r["passed"] for r in prepare_records([first, later])[0]] == [True]
    (series,) = series_of("s", [first, later])
    assert [r["passed"] for r in series.runs.values()] == [True]
    assert cli(["compare", str(one), str(one), "--n-boot", "100"]) in (0, 1)
    assert f"{one}: 1 repeated run record(s) replaced: {DUPLICATE_RULE}" in capsys.readouterr().err


# -- merged shards --------------------------------------------------------------------------------
def _session(shard: str | None, *reasons: str, complete: bool | None = None) -> dict:
    rs = list(reasons) + ([f"--agentfloor-shard {shard} (one part; merge the shards' runs.jsonl with `report`)",
                           "12 item(s) deselected"] if shard else [])
    return {"session_id": f"s{shard}", "complete": not rs if complete is None else complete, "partial_reasons": rs,
            "selection": {"models": ["m"], "shard": shard}}


def test_a_merged_shard_report_is_complete_only_with_every_shard() -> None:
    both = merged_run([("a", _session("1/2")), ("b", _session("2/2"))])
    assert both["complete"] and both["partial_reasons"] == [] and both["session_id"] == "merged s1/2 + s2/2"
    one = merged_run([("a", _session("1/2"))])
    assert not one["complete"] and one["partial_reasons"] == ["shard(s) 2/2 not among the merged files"]
    stopped = merged_run([("a", _session("1/2", "interrupted")), ("b", _session("2/2"))])
    assert stopped["partial_reasons"] == ["a: interrupted"]
    unknown = merged_run([("a", _session("1/2")), ("b", None)])
    assert not unknown["complete"] and "b: no session.json beside it" in unknown["partial_reasons"][0]
    twice = merged_run([("a", _session("1/2")), ("b", _session("1/2"))])
    assert "b: shard 1/2 given twice" in twice["partial_reasons"]
    plain = merged_run([("a", _session(None)), ("b", _session(None, "-k 'A1'"))])
    assert plain["partial_reasons"] == ["b: -k 'A1'"]


def test_report_over_two_shards_has_a_run_header(pytester: pytest.Pytester, tmp_path: Path) -> None:
    shutil.copytree(REPO / "cases", pytester.path / "cases")
    for k in (1, 2):
        pytester.runpytest("cases/tier_A0", "--model", "oracle", "--agentfloor-shard", f"{k}/2", "-p",
                           "no:cacheprovider", "--agentfloor-report", "none")
    shards = sorted(pytester.path.glob("reports/sessions/*/runs.jsonl"))
    assert len(shards) == 2
    assert cli(["report", *map(str, shards), "--out", str(tmp_path), "--n-boot", "100"]) == 0
    run = json.loads((tmp_path / "summary.json").read_text())["run"]
    assert run is not None and "complete" in run
    # tier_A0 alone is narrower than the case set: PARTIAL, for that reason only (no shard is missing)
    assert run["partial_reasons"] and all(r.endswith(": selection narrower than the case set: cases/tier_A0")
                                          for r in run["partial_reasons"]), run["partial_reasons"]
    assert "PARTIAL" in (tmp_path / "report.md").read_text()


# -- resume keeps to the selection ----------------------------------------------------------------
def test_resume_carries_over_only_selected_items(pytester: pytest.Pytester) -> None:
    for tier in ("tier_A0", "tier_A"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    base = ["cases", "--model", "oracle", "--variants", "v0", "--instances", "i0", "-p", "no:cacheprovider",
            "--agentfloor-report", "none"]
    first = pytester.runpytest(*base)
    n_a0 = len(list((pytester.path / "cases" / "tier_A0").glob("*.toml")))
    n_a = len(list((pytester.path / "cases" / "tier_A").glob("*.toml")))
    first.assert_outcomes(passed=n_a0 + n_a)
    again = pytester.runpytest(*base, "--agentfloor-resume", "-m", "tier_A")
    again.stdout.fnmatch_lines([f"*resumed {n_a} item(s) from runs.jsonl*"])
    latest = pytester.path / "reports" / "latest" / "runs.jsonl"
    tiers = {json.loads(x)["tier"] for x in latest.read_text().splitlines()}
    assert tiers == {"A"}, tiers  # tier A0 was deselected by -m: its earlier records are not carried over
    session = json.loads((latest.parent / "session.json").read_text())
    assert f"{n_a0} item(s) deselected" in session["partial_reasons"]  # pytest's count minus the resumed
    assert f"{n_a0 + n_a} deselected" in again.stdout.str()  # pytest counts the resumed items as deselected too


# -- a broken reference solution is the case's error -----------------------------------------------
def test_a_broken_reference_solution_is_a_case_error_not_the_models(pytester: pytest.Pytester) -> None:
    text = (REPO / "cases" / "tier_A" / "A1.toml").read_text()
    broken = text.replace('args = { record_id = "INV-Q7P2K", attribute = "on_hand" } }]\n\n[[reference]]',
                          'args = { record_id = "INV-NOPE", attribute = "on_hand" } }]\n\n[[reference]]', 1)
    assert broken != text
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    (pytester.path / "cases" / "tier_A" / "A1.toml").write_text(broken)
    result = pytester.runpytest("cases/tier_A/A1.toml", "--model", "oracle", "--variants", "v0", "--instances", "i0",
                                "-p", "no:cacheprovider", "--agentfloor-report", "none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*case error: the reference solution of A1 fails its own case (first unmet *"])
    (rec,) = [json.loads(x) for x in next(pytester.path.glob("reports/sessions/*/runs.jsonl")).read_text().splitlines()]
    assert rec["infra_error"] and rec["failure_mode"] is None and rec["error"].startswith("case error:")


def test_report_on_a_runs_file_without_its_session_says_partial(oracle_runs: Path, tmp_path: Path) -> None:
    # before (red team): a killed session's runs.jsonl alone gave a report with no COMPLETE/PARTIAL ("run": null)
    import shutil

    from pytest_agentfloor.report.cli import main

    killed = tmp_path / "reports" / "sessions" / "20261202-000000.000-dead" / "runs.jsonl"
    killed.parent.mkdir(parents=True)
    shutil.copy(oracle_runs, killed)
    assert main([str(killed), "--out", str(tmp_path / "out")]) == 0
    run = json.loads((tmp_path / "out" / "summary.json").read_text())["run"]
    assert run["complete"] is False and "no session.json beside it" in run["partial_reasons"][0]
    assert main([str(oracle_runs), "--out", str(tmp_path / "by-hand")]) == 0  # assembled by hand: says nothing
    assert json.loads((tmp_path / "by-hand" / "summary.json").read_text()).get("run") is None


def test_report_on_a_record_whose_model_holds_a_lone_surrogate_writes_its_reports(tmp_path: Path) -> None:
    # before (red team): "utf-8 codec can't encode" and no reports
    from pytest_agentfloor.report.cli import main

    runs = tmp_path / "runs.jsonl"
    rec = dict(model="m\ud800", task="A1", tier="A", variant="v0", instance="i0", run=0, passed=True, infra_error=False,
               nodeid="cases/tier_A/A1.toml::A1[v0-i0-r0-m]")
    runs.write_text(json.dumps(rec) + "\n")
    assert main([str(runs), "--out", str(tmp_path / "out"), "--n-boot", "50"]) == 0
    assert "m\\\\ud800" in (tmp_path / "out" / "summary.json").read_text()


# -- the red-team corpus's bad inputs (tests/redteam_corpus: in02, in09, in24, in25, op16) ----------------------
@pytest.mark.parametrize("line, field", [
    ("rpm = 1e-300", "rpm"),  # one request per 1e300 minutes: the spacing wait overflowed a thread wait
    ("timeout_s = 1e300", "timeout_s"),
    ("temperature = -1.0", "temperature"),
    ('base_url = "http://127.0.0.1:9/v1\\u202e"', "base_url"),  # a bidi override: not a control char < 32
    ('base_url = "http://127.0.0.1:9/v1\\u200b"', "base_url"),  # a zero-width space
])
def test_absurd_model_settings_are_refused_at_load(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "models.toml"
    path.write_text(f'[models.m]\nprovider = "openai"\nmodel = "m"\n{line}\n')
    with pytest.raises(ConfigError) as exc:
        load_models(path)
    assert str(exc.value).startswith(f"{path}: models.m.{field}: ") and "\u202e" not in str(exc.value)


def test_a_step_budget_scale_no_episode_reaches_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # before: 1e300 was taken, and a model that never stops would end on the harness's timeout (an
    # infrastructure error) instead of failing its step budget
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    result = pytester.runpytest("cases", "--model", "oracle", "--step-budget-scale", "1e300", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--step-budget-scale: expected a positive number up to 100*got '1e300'"])


@pytest.mark.parametrize("args, says", [
    (["report", "{r}", "--n-boot", "1000000000000"], "--n-boot: expected a whole number from 1 to 1000000"),
    (["report", "{r}", "--margin", "nan"], "--margin: expected a number from 0 to 100, got 'nan'"),
    (["report", "{r}", "--infra-threshold", "7"], "--infra-threshold: expected a number from 0 to 1"),
    (["compare", "{r}", "{r}", "--gate-margin", "inf"], "--gate-margin: expected a number from 0 to 100"),
    (["regrade", "{r}", "--judge-cache", "bogus"], "--judge-cache: invalid choice: 'bogus'"),
])
def test_absurd_command_numbers_are_one_line_usage_errors(oracle_runs: Path, capsys: pytest.CaptureFixture[str],
                                                          args: list[str], says: str) -> None:
    # corpus f39, f41, f44: before, --n-boot 10**12 asked numpy for 7 TiB (a MemoryError traceback), --margin nan
    # was named "margin_pp", and regrade took any --judge-cache without a judge
    with pytest.raises(SystemExit) as exc:
        cli([a.format(r=oracle_runs) for a in args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.splitlines()) <= 2, err


def test_report_into_a_file_is_a_short_error(oracle_runs: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # corpus f09: before, FileExistsError with a traceback
    target = tmp_path / "afile"
    target.write_text("x")
    assert cli(["report", str(oracle_runs), "--out", str(target)]) == 2
    assert f"--out {target}: is a file, not a directory" in capsys.readouterr().err


def test_report_refuses_to_merge_two_protocols(oracle_runs: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # corpus f30: before, the tbb records silently replaced the agentfloor ones as "repeated runs"
    other = tmp_path / "tbb.jsonl"
    other.write_text("".join(json.dumps(dict(json.loads(x), protocol="tbb")) + "\n"
                             for x in oracle_runs.read_text().splitlines()))
    assert cli(["report", str(oracle_runs), str(other), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "several protocols (legacy, tbb)" in err and not (tmp_path / "out").exists()


def test_regrade_applies_the_duplicate_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # corpus f05: before, regrade wrote 100 records for 50 runs, the only command without the rule
    from pytest_agentfloor.__main__ import main

    project = tmp_path / "p"
    shutil.copytree(REPO / "cases" / "tier_A", project / "cases" / "tier_A")
    rc = pytest.main([str(project / "cases"), "--model", "oracle", "--instances", "i0", "-q", "-p", "no:cacheprovider",
                      "--agentfloor-report", "none", "--rootdir", str(project), "-p", "no:randomly"])
    assert rc == 0
    (runs,) = project.glob("reports/sessions/*/runs.jsonl")
    twice = tmp_path / "twice.jsonl"
    twice.write_text(runs.read_text() * 2)
    capsys.readouterr()
    out = tmp_path / "out.jsonl"
    assert main(["regrade", str(twice), "--cases", str(project / "cases"), "--write", str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(runs.read_text().splitlines()) == 25
    assert f"{twice}: 25 repeated run record(s) replaced: {DUPLICATE_RULE}" in capsys.readouterr().err


def test_the_gate_names_the_duplicates_of_its_baseline(tmp_path: Path) -> None:
    # corpus f04: before, the gate resolved them (last wins) without a word, the one command that said nothing
    from pytest_agentfloor.gate import load_baseline

    base = tmp_path / "base.jsonl"
    base.write_text(json.dumps(_rec(False)) + "\n" + json.dumps(_rec(True)) + "\n")
    runs, notes = load_baseline(base)
    assert [r["passed"] for r in runs] == [True]
    assert notes == [f"--agentfloor-baseline {base}: 1 repeated run record(s) replaced: {DUPLICATE_RULE}"]


def test_view_and_report_over_damaged_transcripts(oracle_runs: Path, tmp_path: Path) -> None:
    # corpus f37: before, a record whose trajectory was a string or whose turns was a number crashed both
    recs = [json.loads(x) for x in oracle_runs.read_text().splitlines()]
    recs[0]["trajectory"] = "oops"
    recs[1]["trajectory"] = {"turns": 5, "messages": {"a": 1}}
    damaged = tmp_path / "runs.jsonl"
    damaged.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli(["view", str(damaged), "--out", str(tmp_path / "v.html")]) == 0
    assert cli(["report", str(damaged), "--out", str(tmp_path / "out"), "--n-boot", "50"]) == 0


def test_import_writes_its_reports_in_the_project_not_in_a_common_ancestor(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # corpus gr19: before, the temporary models.toml counted as a path argument, pytest's rootdir became
    # the common ancestor of the project and the temporary directory (/tmp) and reports went to /tmp/reports
    project = tmp_path / "proj"
    shutil.copytree(REPO / "cases" / "callsite", project / "cases" / "callsite")
    (project / "out.jsonl").write_text(json.dumps({"case_id": "intent-crud-01", "model": "rec",
                                                   "output": "home_assistant"}) + "\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    code = cli(["import", "out.jsonl", "--cases", "cases/callsite/intent.toml", "--", "-k", "intent-crud-01",
                "-p", "no:cacheprovider", "-q"])
    assert code == 0
    assert list(project.glob("reports/sessions/*/runs.jsonl"))


def test_a_command_whose_reader_closes_the_pipe_stops_without_a_traceback() -> None:
    """`python -m pytest_agentfloor options-doc | head -1`: the reader is gone before the writes."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "pytest_agentfloor", "options-doc"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # every write from now on meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err
