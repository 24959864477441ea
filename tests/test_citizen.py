"""The plugin as a guest in every pytest run (issue 15): each numbered finding as a regression test.

Run under the newest pytest 9 and pytest 8 by .ci/run. Real pytest runs through pytester.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_agentfloor.options import ALIASES, PREFIX

REPO = Path(__file__).resolve().parents[1]
USERPROJ = Path(__file__).parent / "userproj"

#: options of well-known plugins (read from their sources: pytest-replay 1.8, pytest-recording 0.14,
#: pytest-rerunfailures 16.7, pytest-repeat 0.9, pytest-benchmark 5.3, pytest-randomly 5.1,
#: pytest-timeout 2.4, pytest-xdist 3.8, pytest-cov, pytest-html, pytest-django, pytest-vcr)
WELL_KNOWN = {
    "--replay", "--replay-base-name", "--replay-record-dir", "--replay-skip-cleanup",
    "--record-mode", "--block-network", "--allowed-hosts", "--disable-recording", "--vcr-record",
    "--reruns", "--reruns-delay", "--only-rerun", "--rerun-except", "--fail-on-flaky", "--force-reruns",
    "--count", "--repeat-scope", "--randomly-seed", "--randomly-dont-reset-seed", "--randomly-dont-reorganize",
    "--timeout", "--timeout-method", "--session-timeout", "--benchmark-only", "--benchmark-skip",
    "--benchmark-save", "--benchmark-compare", "--benchmark-autosave", "--benchmark-json",
    "--numprocesses", "--dist", "--maxprocesses", "--cov", "--cov-report", "--html", "--ds", "--reuse-db",
}


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases", pytester.path / "cases")
    return pytester


@pytest.fixture
def userproj(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    shutil.copytree(USERPROJ, pytester.path, dirs_exist_ok=True)
    monkeypatch.delenv("USERPROJ_UNSET_KEY", raising=False)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    return pytester


def tree(root: Path) -> dict[str, int]:
    """Every file under root with its mtime, apart from pytester's own (basetemp dirs, captured output)."""
    def pytesters(rel: Path) -> bool:
        return rel.parts[0].startswith("runpytest-") or str(rel) in ("stdout", "stderr")

    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and not pytesters(p.relative_to(root))}


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("warnings", "warning")}


def node_ids(result: pytest.RunResult) -> list[str]:
    return [line.split(" ")[0] for line in result.stdout.lines if "::" in line]


# -- 2. inert outside benchmark runs ------------------------------------------------------------
def test_plain_pytest_in_a_user_project_is_as_if_the_plugin_were_absent(userproj: pytest.Pytester) -> None:
    before = tree(userproj.path)
    with_plugin = userproj.runpytest_subprocess("-p", "no:cacheprovider")
    after = tree(userproj.path)
    without = userproj.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:agentfloor")
    assert with_plugin.ret == without.ret == pytest.ExitCode.TESTS_FAILED
    assert outcomes(with_plugin) == outcomes(without) == {"passed": 6, "failed": 1, "skipped": 1, "xfailed": 1}
    assert after == before, "the plugin wrote files in a run that was not a benchmark run"
    with_plugin.stdout.fnmatch_lines(["userproj sockets: 0"])  # no probe, no network
    without.stdout.fnmatch_lines(["userproj sockets: 0"])
    assert "agentfloor" not in with_plugin.stdout.str().replace("agentfloor-0", "")  # only the plugins: line
    assert not (userproj.path / "reports").exists()


def test_the_users_own_options_and_unrelated_toml_files_work(userproj: pytest.Pytester) -> None:
    result = userproj.runpytest_subprocess(".", "--runs=3", "--baseline=none", "--resume",
                                           "-p", "no:cacheprovider")
    assert outcomes(result) == {"passed": 6, "failed": 1, "skipped": 1, "xfailed": 1}  # config/tier_free/*.toml untouched
    assert "limits.toml" not in result.stdout.str()


def test_an_unrelated_models_toml_breaks_nothing_until_a_benchmark_run(userproj: pytest.Pytester) -> None:
    (userproj.path / "models.toml").write_text("[models.bert]\nlayers = 12\n")  # an ML project's own file
    result = userproj.runpytest_subprocess("-p", "no:cacheprovider")
    assert outcomes(result) == {"passed": 6, "failed": 1, "skipped": 1, "xfailed": 1}
    bench_run = userproj.runpytest_subprocess("--model", "bert", "-p", "no:cacheprovider")
    assert bench_run.ret == pytest.ExitCode.USAGE_ERROR
    bench_run.stderr.fnmatch_lines(["*models.toml: models.bert*"])


def test_only_configured_case_paths_and_named_files_are_cases(bench: pytest.Pytester) -> None:
    (bench.path / "config" / "tier_free").mkdir(parents=True)
    (bench.path / "config" / "tier_free" / "limits.toml").write_text("max_requests = 10\n")
    result = bench.runpytest(".", "--co", "-q", "--model", "oracle", "--variants", "v0", "--instances", "i0")
    assert result.ret == pytest.ExitCode.OK and "limits.toml" not in result.stdout.str()
    ids = node_ids(result)
    assert ids and all(i.startswith("cases/") for i in ids)
    # more case paths through the ini setting; a TOML named on the command line declares itself a case
    (bench.path / "extra").mkdir()
    shutil.move(bench.path / "cases" / "tier_B", bench.path / "extra" / "tier_B")  # case ids must stay unique
    shutil.copytree(bench.path / "cases" / "tier_C", bench.path / "elsewhere" / "tier_C")
    bench.makeini("[pytest]\nagentfloor_case_paths = cases extra\n")
    result = bench.runpytest(".", "--co", "-q", "--variants", "v0", "--instances", "i0")
    ids = node_ids(result)
    assert any(i.startswith("extra/tier_B/B1.toml::") for i in ids) and not any("elsewhere" in i for i in ids)
    result = bench.runpytest("elsewhere/tier_C/C1.toml", "--co", "-q", "--variants", "v0", "--instances", "i0")
    assert node_ids(result) == ["elsewhere/tier_C/C1.toml::C1[v0-i0-r0-oracle]"]


# -- 2. option names --------------------------------------------------------------------------
def test_no_option_name_collides_with_a_well_known_plugin(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    ours = {n for g in config._parser._groups if g.name == "agentfloor" for o in g.options for n in o.names()}
    assert ours and not ours & WELL_KNOWN
    assert all(n == "--model" or n.startswith(PREFIX) or n in ALIASES for n in ours)
    for generic in ("--runs", "--resume", "--record", "--replay", "--baseline", "--reference", "--margin",
                    "--report-dir"):
        assert generic not in ours


@pytest.mark.skipif(not os.environ.get("AGENTFLOOR_WELLKNOWN_PLUGINS"),
                    reason="set AGENTFLOOR_WELLKNOWN_PLUGINS to a --target dir holding them (.ci/run does)")
def test_coexists_with_the_well_known_plugins_installed(bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = os.environ["AGENTFLOOR_WELLKNOWN_PLUGINS"]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([os.environ.get("PYTHONPATH", ""), extra]).strip(os.pathsep))
    helped = bench.runpytest_subprocess("--help")
    assert helped.ret == 0, helped.stderr.str()
    for flag in ("--replay-record-dir", "--record-mode", "--reruns", "--count", "--benchmark-only", "--randomly-seed",
                 "--timeout", "--agentfloor-replay"):
        assert flag in helped.stdout.str()
    result = bench.runpytest_subprocess("cases/tier_A0", "--model", "oracle", "-p", "no:randomly", "-p",
                                        "no:cacheprovider")
    assert outcomes(result) == {"passed": 25}


def test_a_conftest_defining_model_keeps_it_and_the_plugin_answers_to_agentfloor_model(
        userproj: pytest.Pytester) -> None:
    """Issue 29: a short spelling is the plugin's only where free; the user's --model is the user's."""
    conftest = userproj.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace(
        '    parser.addoption("--resume"', '    parser.addoption("--model", default="bert")\n    parser.addoption("--resume"'))
    conftest.write_text(conftest.read_text() + (
        "\n\ndef pytest_report_header(config):\n    return [f'user model: {config.getoption(\"--model\")}']\n"))
    result = userproj.runpytest_subprocess("-p", "no:cacheprovider", "--model", "gpt2")
    assert outcomes(result) == {"passed": 6, "failed": 1, "skipped": 1, "xfailed": 1}
    result.stdout.fnmatch_lines(["user model: gpt2"])
    assert not [line for line in result.stdout.lines + result.stderr.lines if line.startswith("agentfloor")]
    shutil.copytree(REPO / "cases" / "tier_A0", userproj.path / "cases" / "tier_A0")
    bench = userproj.runpytest_subprocess("cases/tier_A0", "--agentfloor-model", "oracle", "--model", "gpt2",
                                          "--variants", "v0", "-p", "no:cacheprovider")
    assert outcomes(bench) == {"passed": 5}
    bench.stdout.fnmatch_lines(["user model: gpt2"])
    bench.stdout.fnmatch_lines(["agentfloor: --model belongs to this project's conftest.py or "
                                "another plugin here; pytest-agentfloor's spelling is --agentfloor-model"])
    quiet = userproj.runpytest_subprocess("cases/tier_A0", "--agentfloor-model", "oracle", "-p", "no:cacheprovider")
    assert outcomes(quiet) == {"passed": 25} and "belongs to" not in quiet.stdout.str()
    note = ("agentfloor: --model belongs to this project's conftest.py or another plugin here; pytest-agentfloor's "
            "spelling is --agentfloor-model")
    # the plugin's own selection (the ini's gpt, whose key is unset) fails: the error says which spelling is ours
    unset = userproj.runpytest_subprocess("cases/tier_A0", "--model", "gpt2", "--variants", "v0", "-q",
                                          "-p", "no:cacheprovider")
    assert unset.ret == pytest.ExitCode.USAGE_ERROR
    unset.stderr.fnmatch_lines(["ERROR: models.gpt.api_key_env: environment variable USERPROJ_UNSET_KEY is not set*",
                                note])
    # -q hides the header: the note comes once, at the end
    short = userproj.runpytest_subprocess("cases/tier_A0", "--model", "gpt2", "--variants", "v0", "-q",
                                          "-o", "agentfloor_models=oracle", "-p", "no:cacheprovider")
    assert short.ret == pytest.ExitCode.OK, short.stderr.str()
    assert [line for line in short.stdout.lines if "belongs to" in line] == [note]


def test_a_conftest_loaded_during_collection_may_define_the_short_spellings(pytester: pytest.Pytester) -> None:
    """A subdirectory's conftest (not named test*, so pytest loads it only while collecting) defining
    --model and --instances: pytest >= 9.2 adds its options to the argparse parser at once, where the
    plugin's short spellings made them a conflict that failed the whole collection (a fresh-eyes run)."""
    pytester.makepyfile(**{
        "integration/conftest.py": "def pytest_addoption(parser):\n"
                                   "    parser.addoption('--model', default='resnet18')\n"
                                   "    parser.addoption('--instances', default='all')\n",
        "integration/test_m.py": "def test_m(request):\n"
                                 "    assert request.config.getoption('--model') == 'resnet18'\n"
                                 "    assert request.config.getoption('--instances') == 'all'\n",
    })
    for args in ((), ("-n", "2")):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
        assert outcomes(result) == {"passed": 1}, result.stdout.str() + result.stderr.str()
    # the short spellings still serve the command line of a benchmark run (and --help lists them)
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    (pytester.path / "models.toml").write_text((REPO / "models.toml").read_text())
    bench = pytester.runpytest_subprocess("cases/tier_A0", "--model", "oracle", "--variants", "v0", "--instances",
                                          "i0", "-p", "no:cacheprovider", "--agentfloor-report-dir", "rep")
    assert outcomes(bench) == {"passed": 5}, bench.stdout.str() + bench.stderr.str()
    assert "--agentfloor-model=NAME, --model=NAME" in pytester.runpytest_subprocess("--help").stdout.str()


def test_a_conftest_taking_a_prefixed_name_gets_a_usage_error_not_a_traceback(userproj: pytest.Pytester) -> None:
    conftest = userproj.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace(
        '    parser.addoption("--resume"', '    parser.addoption("--agentfloor-runs")\n    parser.addoption("--resume"'))
    result = userproj.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-runs is defined both by pytest-agentfloor and by a conftest.py*"
                                 "-p no:agentfloor*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_help_shows_the_default_of_every_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = " ".join(result.stdout.str().split())
    lines = result.stdout.lines
    start = next(n for n, line in enumerate(lines) if line.startswith("agent tool-use benchmark"))
    end = next(n for n in range(start + 1, len(lines)) if lines[n] and not lines[n].startswith(" "))
    section = " ".join(" ".join(lines[start:end]).split())  # up to the next group's heading
    config = pytester.parseconfig()
    dests = {o.dest for g in config._parser._groups if g.name == "agentfloor" for o in g.options}
    assert len(dests) >= 20 and section.count("(default:") == len(dests)
    assert "'tier_A>=0.90'" in text  # the gate floor is shown quoted


# -- 1. node ids --------------------------------------------------------------------------------
def test_lf_ff_sw_deselect_and_node_id_reruns(bench: pytest.Pytester) -> None:
    args = ["cases/tier_A0", "--model", "oracle,fault-plan_only", "-p", "cacheprovider", "--agentfloor-report", "none"]
    first = bench.runpytest(*args)
    assert outcomes(first) == {"passed": 25, "failed": 25}
    lf = bench.runpytest(*args, "--lf")
    assert outcomes(lf) == {"failed": 25}
    lf.stdout.fnmatch_lines(["*run-last-failure: rerun previous 25 failures*"])
    ff = bench.runpytest(*args, "--ff", "-v")
    ran = [line for line in ff.stdout.lines if " PASSED" in line or " FAILED" in line]
    assert all("fault-plan_only" in line for line in ran[:25]) and outcomes(ff) == {"passed": 25, "failed": 25}
    sw = bench.runpytest(*args, "--sw")
    assert outcomes(sw) == {"failed": 1, "passed": 5} or outcomes(sw).get("failed") == 1
    sw2 = bench.runpytest(*args, "--sw")
    assert "stepwise: skipping" in sw2.stdout.str()
    one = "cases/tier_A0/A01.toml::A01[v0-i0-r0-fault-plan_only]"
    rerun = bench.runpytest(one, "--model", "fault-plan_only", "-p", "no:cacheprovider", "--agentfloor-report", "none")
    assert outcomes(rerun) == {"failed": 1}
    deselected = bench.runpytest(*args, "--deselect", one, "--co", "-q")
    assert one not in node_ids(deselected) and len(node_ids(deselected)) == 49
    k = bench.runpytest(*args, "--co", "-q", "-k", "A01 and v0 and fault")
    assert node_ids(k) == [one]


def test_node_id_rerun_without_its_model_says_which_option_selects_it(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_B/B3.toml::B3[v0-i0-r0-fault-resign]")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*B3?v0-i0-r0-fault-resign?: this node id is an item of model 'fault-resign', "
                                 "which is not selected (selected: oracle); add --model fault-resign*"])


def test_model_names_that_would_break_node_ids_are_rejected(bench: pytest.Pytester) -> None:
    bench.makefile(".toml", models='[models."my model"]\nprovider = "ollama"\nmodel = "m"\n')
    result = bench.runpytest("cases", "--model", "oracle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*models.toml: models.'my model': a model name may hold letters, digits and*"
                                 "(no spaces, commas, brackets or '::'), as it is part of test ids*"])


# -- 3. xdist -----------------------------------------------------------------------------------
def test_loadgroup_and_load_keep_node_ids(bench: pytest.Pytester) -> None:
    args = ["cases/tier_A", "--model", "oracle,fault-resign", "--variants", "v0", "-p", "no:cacheprovider"]
    serial = bench.runpytest_subprocess(*args, "--co", "-q")
    for dist in ("load", "loadgroup"):
        result = bench.runpytest_subprocess(*args, "-n", "2", "--dist", dist, "-v")
        ran = sorted(json.loads(line)["nodeid"] for line in (bench.path / "reports" / "latest" / "runs.jsonl").read_text().splitlines())
        assert ran == sorted(node_ids(serial)), dist
        out = result.stdout.str()
        assert "@" not in out and "[gw0]" in out and "[gw1]" in out, dist  # both workers got items


# -- 4. JUnit -----------------------------------------------------------------------------------
def test_junit_under_xunit2_leaves_properties_out_and_says_so(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_B/B1.toml", "--model", "oracle", "--variants", "v0", "--instances", "i0",
                             "--junitxml=out.xml", "-o", "junit_family=xunit2")
    result.stdout.fnmatch_lines(["*junit_family=xunit2*use -o junit_family=xunit1*"])
    case = ET.parse(bench.path / "out.xml").getroot().find(".//testcase")
    assert case is not None and case.find(".//property") is None
    assert case.get("classname") == "cases.tier_B.B1" and case.get("name") == "B1[v0-i0-r0-oracle]"
    assert len(json.loads((bench.path / "reports" / "latest" / "summary.json").read_text())["runs"]) == 1  # records still count


# -- 5. empty selections and tiers --------------------------------------------------------------
@pytest.mark.parametrize("args", [("--variants", "v9"), ("--instances", "i99")], ids=["variants", "instances"])
def test_an_empty_selection_says_why(bench: pytest.Pytester, args: tuple[str, str]) -> None:
    result = bench.runpytest("cases/tier_A", *args)
    assert result.ret in (pytest.ExitCode.NO_TESTS_COLLECTED, pytest.ExitCode.USAGE_ERROR)
    text = result.stdout.str() + result.stderr.str()
    assert args[1] in text and ("no benchmark item was selected" in text or "ERROR" in text)


def test_an_empty_model_option_is_a_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--model", "")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--model: no model named; give one of *oracle*"])


def test_m_selects_one_tier_where_k_would_also_match_a0(bench: pytest.Pytester) -> None:
    by_mark = node_ids(bench.runpytest("cases", "--co", "-q", "-m", "tier_A", "--variants", "v0"))
    assert by_mark and all(i.startswith("cases/tier_A/") for i in by_mark)
    by_k = node_ids(bench.runpytest("cases", "--co", "-q", "-k", "tier_A", "--variants", "v0"))
    assert any(i.startswith("cases/tier_A0/") for i in by_k)  # why the README says -m


# -- 6. regrade with conftest hooks -------------------------------------------------------------
EXTRA = '''
from pytest_agentfloor.grading import Verdict

def pytest_agentfloor_extra_obligations(case, trajectory):
    return [Verdict("Z1", len(trajectory.calls) <= 1, "at most one call", f"{len(trajectory.calls)} calls")]
'''


def test_regrade_applies_the_conftest_hooks_and_names_them(bench: pytest.Pytester) -> None:
    bench.makeconftest(EXTRA)
    bench.runpytest("cases/tier_B", "--model", "oracle", "--variants", "v0", "--instances", "i0")
    result = bench.run(sys.executable, "-m", "pytest_agentfloor", "regrade", "reports/latest/runs.jsonl")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["regrade: grading hooks in force: pytest_agentfloor_extra_obligations from "
                                 "conftest.py; the plugin's defaults*", "*: 0 outcome(s) changed*"])
    plain = bench.run(sys.executable, "-m", "pytest_agentfloor", "regrade", "reports/latest/runs.jsonl", "--no-conftest")
    plain.stdout.fnmatch_lines(["*the plugin's defaults only (--no-conftest)*"])
    assert "0 outcome(s) changed" not in plain.stdout.str()
    (bench.path / "conftest.py").write_text(EXTRA + "\nraise RuntimeError('half-written')\n")
    broken = bench.run(sys.executable, "-m", "pytest_agentfloor", "regrade", "reports/latest/runs.jsonl")
    assert broken.ret == 2
    broken.stderr.fnmatch_lines(["regrade: cannot load *conftest.py (RuntimeError: half-written)*--no-conftest*"])


# -- 8. users' fixture tests reach runs.jsonl and the report ------------------------------------
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_fixture_tests_can_add_their_records(bench: pytest.Pytester, xdist: list[str]) -> None:
    bench.makepyfile(test_mine=f"""
        def test_mine(agentfloor_episode):
            traj, grade = agentfloor_episode({str(REPO / "cases" / "tier_B" / "B1.toml")!r}, "v2", record=True)
            assert grade.passed

        def test_not_recorded(agentfloor_episode):
            agentfloor_episode({str(REPO / "cases" / "tier_B" / "B1.toml")!r}, "v1")
    """)
    result = bench.runpytest_subprocess("test_mine.py", "--model", "oracle,fault-resign", "-p", "no:cacheprovider",
                                        *xdist)
    assert outcomes(result) == {"passed": 3, "failed": 1}
    recs = [json.loads(x) for x in (bench.path / "reports" / "latest" / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["nodeid"], r["model"], r["passed"]) for r in recs) == [
        ("test_mine.py::test_mine[fault-resign]", "fault-resign", False), ("test_mine.py::test_mine[oracle]", "oracle", True)]
    summary = json.loads((bench.path / "reports" / "latest" / "summary.json").read_text())
    assert len(summary["runs"]) == 2
    result.stdout.fnmatch_lines(["*AgentFloor: task completion by model and tier*"])


# -- 7. the gate command quoting -----------------------------------------------------------------
def test_the_gate_floor_is_quoted_wherever_it_is_shown() -> None:
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for line in path.read_text().splitlines():
            for m in re.finditer(r"--gate-floor[ =](\S+)", line):
                assert m.group(1).startswith(("'", '"', "`")) or ">=" not in m.group(1), f"{path.name}: {line}"


def test_lf_after_a_failing_benchmark_run_reruns_its_failures(pytester: pytest.Pytester) -> None:
    """`pytest --lf` with no --model: the failed items' models are selected again, so the failures are what
    runs (before, their items were not collected and --lf ran the default oracle over every case, green)."""
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    (pytester.path / "models.toml").write_text((REPO / "models.toml").read_text())
    first = pytester.runpytest_subprocess("cases/tier_A/A1.toml", "cases/tier_A/A2.toml", "--model",
                                          "fault-wrong_tool,oracle", "--variants", "v0", "--instances", "i0")
    assert outcomes(first) == {"failed": 2, "passed": 2}
    for args in ((), ("-n", "2")):
        again = pytester.runpytest_subprocess("--lf", *args)
        assert outcomes(again) == {"failed": 2}, again.stdout.str()
        again.stdout.fnmatch_lines(["FAILED cases/tier_A/A1.toml::A1[[]v0-i0-r0-fault-wrong_tool[]]*"])
    chosen = pytester.runpytest_subprocess("--lf", "--model", "oracle")  # a --model given is the selection
    assert outcomes(chosen).get("failed", 0) == 0
    # the failed model is gone from models.toml: its failures cannot run again, and --lf must not come out
    # green by running everything else (found by a fresh-eyes run)
    lastfailed = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    lastfailed.write_text(json.dumps({"cases/tier_A/A1.toml::A1[v0-i0-r0-retired]": True}))
    gone = pytester.runpytest_subprocess("--lf")
    assert gone.ret == pytest.ExitCode.USAGE_ERROR
    gone.stderr.fnmatch_lines(["ERROR: --lf: the last failures are items of model(s) retired, not in "
                               "models.toml; *--cache-clear"])
