"""Light and inert in every pytest run of its users, on every platform (issue 29).

Installed, the plugin is loaded into every pytest run of the environment; these are the checks a
user of an unrelated project would make: nothing happens that they could notice, nothing heavy is
imported, their own --model keeps working, no POSIX-only module is needed, the native
[tool.pytest] table is read, and the JUnit message is the one-line headline. Real pytest runs
through pytester subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_agentfloor.scope import shaped_as_case

REPO = Path(__file__).resolve().parents[1]
PYTEST_9 = int(pytest.__version__.split(".")[0]) >= 9

#: modules a plain, non-benchmark run must not load (they cost about a second at start-up)
HEAVY = ("numpy", "scipy", "openai", "ollama", "httpx", "pydantic", "rich", "filelock", "concurrent.futures",
         "pytest_agentfloor.config", "pytest_agentfloor.items", "pytest_agentfloor.session",
         "pytest_agentfloor.report", "pytest_agentfloor.stats", "pytest_agentfloor.suite",
         "pytest_agentfloor.providers", "pytest_agentfloor.results", "pytest_agentfloor.kinds")

WITNESS = '''
import json, os, sys

SOCKETS = []


def _audit(event, args):
    if event in ("socket.__new__", "socket.connect", "socket.getaddrinfo"):
        SOCKETS.append(event)


sys.addaudithook(_audit)


FIRST = []


def pytest_runtest_logstart(nodeid, location):
    if not FIRST:
        FIRST.append(sorted(sys.modules))


def pytest_unconfigure(config):
    with open(os.environ["AF_WITNESS"], "w") as fh:
        json.dump({"modules": sorted(sys.modules), "sockets": len(SOCKETS), "at_first_item": FIRST[0] if FIRST else []},
                  fh)
'''


def tree(root: Path) -> dict[str, int]:
    """Every file under root with its mtime, apart from pytester's own."""
    def pytesters(rel: Path) -> bool:
        return rel.parts[0].startswith("runpytest-") or str(rel) in ("stdout", "stderr", "witness.json")

    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and not pytesters(p.relative_to(root))}


def shown(result: pytest.RunResult) -> list[str]:
    """What a user reads, minus what differs between any two runs (times, plugin list, paths)."""
    out = []
    for line in result.stdout.lines + result.stderr.lines:
        if line.startswith(("plugins:", "rootdir:", "running:", "     in:")):
            continue
        out.append(line.split(" in ")[0] if line.startswith("=") else line)
    return out


@pytest.fixture
def userproj(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An unrelated project: a cases/ folder of its own files (TOML too) and someone else's models.toml."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("AF_WITNESS", str(pytester.path / "witness.json"))
    pytester.makeconftest(WITNESS)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "input1.txt").write_text("1 2 3\n")
    (pytester.path / "cases" / "expected.json").write_text("[6]\n")
    (pytester.path / "cases" / "tier_1").mkdir()  # a folder name alone decides nothing
    (pytester.path / "cases" / "tier_1" / "limits.toml").write_text("[limits]\nmax = 3\nid = 'x'\n")
    (pytester.path / "cases" / "settings.toml").write_text("name = 'fixture'\nkind = 'fixture'\n")
    pytester.makepyfile(test_sum="""
        from pathlib import Path

        def test_sum():
            nums = [int(x) for x in (Path(__file__).parent / "cases" / "input1.txt").read_text().split()]
            assert sum(nums) == 6
        """)
    return pytester


def witness(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "witness.json").read_text())


# -- 1. recognised by content, inert otherwise ---------------------------------------------------
@pytest.mark.parametrize("models_toml", ["[models.bert]\nlayers = 12\n", "[models\nbroken = \n"],
                         ids=["foreign", "broken"])
def test_a_cases_folder_of_other_files_and_a_foreign_models_toml_leave_the_run_alone(
        userproj: pytest.Pytester, models_toml: str) -> None:
    (userproj.path / "models.toml").write_text(models_toml)
    # other tools' TOML that shares a word with a case file (found by a fresh-eyes run: each made a bare
    # `pytest` a benchmark run, with a collection error and a reports/ directory)
    (userproj.path / "cases" / "plan.toml").write_text('id = "basic"\ntier = "free"\nprice = 0\n')
    (userproj.path / "cases" / "webapp.toml").write_text('id = "staging-webapp"\ntier = "S1"\nregion = "westeurope"\n')
    (userproj.path / "cases" / "cavity").mkdir()
    (userproj.path / "cases" / "cavity" / "bc.toml").write_text('kind = "pressure"\nvalue = 101325.0\n')
    (userproj.path / "cases" / "cavity" / "probe.toml").write_text('kind = "callsite"\nrate_hz = 50\n')
    before = tree(userproj.path)
    with_plugin = userproj.runpytest_subprocess("-p", "no:cacheprovider")
    seen = witness(userproj)
    assert tree(userproj.path) == before, "the plugin wrote files in a run that was not a benchmark run"
    without = userproj.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:agentfloor")
    assert with_plugin.ret == without.ret == pytest.ExitCode.OK
    assert shown(with_plugin) == shown(without)  # no extra output, no usage error
    assert seen["sockets"] == 0
    assert not (userproj.path / "reports").exists()


def test_case_files_are_recognised_by_content_not_by_their_folder(tmp_path: Path) -> None:
    def file(rel: str, text: str) -> Path:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    ladder = (REPO / "cases" / "tier_A" / "A1.toml").read_text()
    assert shaped_as_case(file("anywhere/A1.toml", ladder))  # a ladder case outside any tier_* folder
    assert shaped_as_case(file("x/broken.toml", 'id = "B9"\ntier = "B"\n[prompts\n'))  # broken: a collection error
    assert shaped_as_case(file("x/table.toml", '# a call-site table\nkind = "callsite"\nsite = "intent"\n'))
    assert shaped_as_case(file("x/family.toml", 'kind = "pressure"  # the families\nintent = "email"\n'))
    assert not shaped_as_case(file("tier_A/notes.toml", 'title = "not a case"\n'))
    assert not shaped_as_case(file("callsite/pyproject.toml", '[project]\nname = "x"\nkind = "callsite"\n'))
    assert not shaped_as_case(file("x/site.toml", 'kind = "installation"\nid = "site_a"\n'))
    assert not shaped_as_case(file("x/other.toml", 'kind = "fixture"\nid = "a"\ntier = "b"\n'))
    assert not shaped_as_case(file("x/nested.toml", '[case]\nid = "A1"\ntier = "A"\n'))  # not top-level keys
    assert not shaped_as_case(file("x/A1.txt", ladder))
    # a word alone is no case: each built-in kind has a signature (casefiles.py)
    assert not shaped_as_case(file("x/plan.toml", 'id = "basic"\ntier = "free"\n'))  # no prompts
    assert not shaped_as_case(file("x/sku.toml", 'id = "staging-webapp"\ntier = "S1"\nregion = "westeurope"\n'))
    assert not shaped_as_case(file("x/bc.toml", 'kind = "pressure"\nvalue = 101325\n'))  # no intent, no families
    assert not shaped_as_case(file("x/probe.toml", 'kind = "callsite"\nrate_hz = 50\n'))  # no site, no [[case]]
    assert not shaped_as_case(file("x/ep.toml", 'kind = "episode"\nname = "pilot"\n'))  # no id and tier
    for typo in ("F", "a", "AO", "A00"):  # a tier typo is collected and reported, not skipped
        assert shaped_as_case(file(f"x/typo_{typo}.toml", ladder.replace('tier = "A"', f"tier = '{typo}'")))
    assert shaped_as_case(file("x/fam.toml", 'kind = "pressure"\n\n[[families]]\nid = "f"\n'))  # intent missing
    assert shaped_as_case(file("x/front.toml", 'kind = "pressure"\n[[frontier]]\nid = "f"\n'))
    assert shaped_as_case(file("x/sites.toml", 'kind = "callsite"\n[[case]]\nid = "c"\n'))  # site missing
    # every form TOML allows: CRLF, a byte order mark, quoted or indented keys, spaced brackets
    for name, text in {"crlf": ladder.replace("\n", "\r\n"), "bom": "\ufeff" + ladder,
                       "quoted": ladder.replace('id = "A1"', '"id" = "A1"').replace('tier = "A"', "'tier' = 'A'"),
                       "spaced": 'kind = "pressure"\r\n[[ families ]]\r\nid = "f"\r\n',
                       "indented": '  id = "A1"\n\ttier = "A"\n[ prompts ]\nv0 = "x"\n'}.items():
        path = tmp_path / "forms" / f"{name}.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text.encode())
        assert shaped_as_case(path), name
    # [prompts] after a long table: read on, for a file with id and tier
    long_first = 'id = "A1"\ntier = "A"\n[fixtures]\n' + "x = 1\n" * 5000
    assert shaped_as_case(file("x/long.toml", long_first + '[prompts]\nv0 = "x"\n'))
    assert not shaped_as_case(file("x/long_plain.toml", long_first))
    assert [p.relative_to(REPO / "cases").as_posix() for p in sorted((REPO / "cases").rglob("*.toml"))
            if not shaped_as_case(p)] == ["callsite/installations/site_a.toml", "callsite/installations/site_b.toml"]


def test_a_ladder_case_in_a_folder_of_any_name_under_the_case_paths_is_collected(pytester: pytest.Pytester) -> None:
    (pytester.path / "cases" / "mine").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "cases" / "mine" / "A1.toml")
    result = pytester.runpytest("--co", "-q", "--variants", "v0", "--instances", "i0", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert "cases/mine/A1.toml::A1[v0-i0-r0-oracle]" in result.stdout.str()
    wrong = pytester.runpytest("--co", "-q", "--variants", "v9", "-p", "no:cacheprovider")  # checked there too
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*--variants: v9 match no case here; the targeted cases have v0 to v4*"])


# -- 2. cost of being installed ------------------------------------------------------------------
@pytest.mark.parametrize("args", [[], ["--co", "-q"]], ids=["run", "collect-only"])
def test_a_plain_run_loads_no_heavy_module(userproj: pytest.Pytester, args: list[str]) -> None:
    result = userproj.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.OK
    modules = witness(userproj)["modules"]
    assert "pytest_agentfloor.plugin" in modules  # the plugin was loaded: its absence would prove nothing
    userproj.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:agentfloor", *args)
    extra = set(modules) - set(witness(userproj)["modules"])  # what the plugin added to pytest's own
    assert sorted(m for m in extra if any(m == h or m.startswith(h + ".") for h in HEAVY)) == []
    assert sorted(m for m in extra if m.startswith("pytest_agentfloor")) == [
        "pytest_agentfloor", "pytest_agentfloor.casefiles", "pytest_agentfloor.hookspec", "pytest_agentfloor.options", "pytest_agentfloor.plugin",
        "pytest_agentfloor.scope"]


def test_a_benchmark_run_loads_what_it_needs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The witness itself: the same check sees the modules when a benchmark run does load them."""
    monkeypatch.setenv("AF_WITNESS", str(pytester.path / "witness.json"))
    pytester.makeconftest(WITNESS)
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    result = pytester.runpytest_subprocess("cases", "--variants", "v0", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    seen = witness(pytester)
    modules, first = set(seen["modules"]), set(seen["at_first_item"])
    assert {"pydantic", "pytest_agentfloor.items", "pytest_agentfloor.session", "filelock"} <= first
    # a ladder run plays its first item before the statistics, the clients or the other kinds load
    heavy = ("numpy", "scipy", "openai", "ollama", "httpx", "pytest_agentfloor.report", "pytest_agentfloor.stats",
             "pytest_agentfloor.callsite.kind", "pytest_agentfloor.pressure", "pytest_agentfloor.local")
    assert sorted(m for m in first if any(m == h or m.startswith(h + ".") for h in heavy)) == []
    assert {"numpy", "pytest_agentfloor.report"} <= modules  # the reports at the end: the witness sees them


@pytest.mark.parametrize("args", [["--co"], ["--agentfloor-report", "none"]], ids=["plan", "no-report"])
def test_a_benchmark_run_without_statistics_loads_neither_numpy_nor_scipy(pytester: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         args: list[str]) -> None:
    """--co shows the plan and --agentfloor-report none writes records and session.json: no statistics."""
    monkeypatch.setenv("AF_WITNESS", str(pytester.path / "witness.json"))
    pytester.makeconftest(WITNESS)
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    result = pytester.runpytest_subprocess("cases", "--variants", "v0", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.OK
    modules = witness(pytester)["modules"]
    assert "pytest_agentfloor.session" in modules
    assert sorted({m.split(".")[0] for m in modules} & {"numpy", "scipy", "rich", "openai", "ollama"}) == []


def test_a_call_site_run_registers_its_kinds_markers_before_its_items_carry_them(pytester: pytest.Pytester) -> None:
    """Built-in kinds load when a file of theirs is collected: their markers still pass --strict-markers."""
    shutil.copytree(REPO / "cases" / "callsite", pytester.path / "cases" / "callsite")
    result = pytester.runpytest_subprocess("cases/callsite/intent.toml", "--co", "-q", "--strict-markers",
                                           "-m", "callsite", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert any("intent.toml::" in line for line in result.stdout.lines)
    markers = pytester.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    markers.stdout.fnmatch_lines(["@pytest.mark.ladder:*", "@pytest.mark.callsite:*"], consecutive=False)


def test_markers_of_a_project_without_cases_list_none_of_the_kinds_generic_names(userproj: pytest.Pytester) -> None:
    """Kinds name markers after their data (email, files, raw, typed, ...): a project with no case files
    must not see them in --markers (found by a fresh-eyes run); the plugin's own names stay listed."""
    listed = userproj.runpytest_subprocess("--markers", "-p", "no:cacheprovider").stdout.str()
    assert "@pytest.mark.agentfloor:" in listed and "@pytest.mark.tier_A0:" in listed
    for generic in ("ladder", "callsite", "pressure", "email", "files", "raw", "typed"):
        assert f"@pytest.mark.{generic}:" not in listed


def test_option_names_kept_literal_for_a_light_start_match_their_modules() -> None:
    from pytest_agentfloor import options
    from pytest_agentfloor.callsite.stats import VERDICTS
    from pytest_agentfloor.protocol import DEFAULT_PROTOCOL, PROTOCOLS
    from pytest_agentfloor.stats.intervals import INTERVAL_METHODS
    from pytest_agentfloor.suite.schema import TIERS

    assert options.TIERS == TIERS
    assert options.PROTOCOL_NAMES == tuple(PROTOCOLS) and options.DEFAULT_PROTOCOL == DEFAULT_PROTOCOL
    assert options.INTERVAL_METHODS == INTERVAL_METHODS
    assert options.CALLSITE_VERDICTS == VERDICTS


# -- 4. portable: no POSIX-only import, locks through filelock ------------------------------------
NO_FCNTL = r'''
import importlib, pkgutil, sys
for name in ("fcntl", "termios", "pty", "tty", "resource", "pwd", "grp"):
    sys.modules[name] = None  # as on Windows: importing it raises ImportError
import pytest_agentfloor
failed = []
names = [m.name for m in pkgutil.walk_packages(pytest_agentfloor.__path__, "pytest_agentfloor.")]
for name in names:
    try:
        importlib.import_module(name)
    except ImportError as exc:
        failed.append(f"{name}: {exc}")
print(len(names), "modules")
print("\n".join(failed) or "all imported")
from pathlib import Path
from pytest_agentfloor.results import RunLog
from pytest_agentfloor.reportdir import ReportDirLock, ReportDirBusy
work = Path(sys.argv[1])
log = RunLog(work / "runs.jsonl")
log.append({"a": 1}); log.append({"a": 2}); log.close()
print(open(work / "runs.jsonl").read().splitlines())
one, two = ReportDirLock(work, "s1"), ReportDirLock(work, "s2")
one.acquire()
try:
    two.acquire()
except ReportDirBusy as exc:
    print("busy:", exc)
one.release()
'''


def test_every_module_imports_and_locks_work_without_fcntl(tmp_path: Path) -> None:
    """What Windows lacks, made unimportable (we cannot run Windows here; docs/testing.md says what CI covers)."""
    done = subprocess.run([sys.executable, "-c", NO_FCNTL, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert int(lines[0].split()[0]) > 100 and lines[1] == "all imported", done.stdout
    assert lines[2] == """['{"a":1}', '{"a":2}']"""
    assert lines[3].startswith("busy: report dir ") and "in use by session s1 (pid " in lines[3]


APPENDER = r'''
import sys
from pathlib import Path
from pytest_agentfloor.results import RunLog
log = RunLog(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    log.append({"writer": sys.argv[2], "i": i, "pad": "x" * 3000})
log.close()
'''


def test_processes_appending_to_one_runs_jsonl_never_tear_a_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"torn": ')  # a writer killed mid-line before: the next record starts a new line
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), str(w), "150"], env=env) for w in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    lines = path.read_bytes().split(b"\n")
    assert lines[0] == b'{"torn": ' and lines[-1] == b""
    records = [json.loads(line) for line in lines[1:-1]]
    assert sorted((r["writer"], r["i"]) for r in records) == sorted((str(w), i) for w in range(4) for i in range(150))
    assert [p.name for p in tmp_path.iterdir()] == ["runs.jsonl"]  # flock on the file itself: no lock file


def test_without_flock_appends_lock_through_filelock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from pytest_agentfloor.results import RunLog

    # the module RunLog will import (in-process pytester runs elsewhere may have left a stale package attribute)
    locking = importlib.import_module("pytest_agentfloor.locking")
    monkeypatch.setattr(locking, "_flock", lambda: None)  # as on Windows
    log = RunLog(tmp_path / "runs.jsonl")
    log.append({"a": 1})
    holder = locking.held_lock(locking.lock_path(tmp_path / "runs.jsonl"))
    holder.acquire()  # another process appending: this one waits for it
    try:
        from filelock import Timeout

        log._lock._fallback.timeout = 0.2
        with pytest.raises(Timeout):
            log.append({"a": 2})
    finally:
        holder.release()
    log._lock._fallback.timeout = -1
    log.append({"a": 3})
    log.close()
    assert (tmp_path / "runs.jsonl").read_text().splitlines() == ['{"a":1}', '{"a":3}']


def test_a_report_dir_held_by_one_lock_refuses_another_and_frees_on_release(tmp_path: Path) -> None:
    from pytest_agentfloor.reportdir import ReportDirBusy, ReportDirLock

    first, second = ReportDirLock(tmp_path, "20990101-000000.000-aaaa"), ReportDirLock(tmp_path, "later")
    first.acquire()
    with pytest.raises(ReportDirBusy, match=r"in use by session 20990101-000000.000-aaaa \(pid \d+\)"):
        second.acquire()
    first.release()
    second.acquire()  # free again
    second.release()


# -- 5. ini settings: native TOML types, errors naming key and file, --models-file ---------------
@pytest.mark.skipif(not PYTEST_9, reason="the native [tool.pytest] table is pytest 9's")
def test_native_toml_values_are_accepted_for_every_kind_of_setting(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    pytester.makefile(".toml", pyproject="""
        [tool.pytest]
        agentfloor_runs = 2
        agentfloor_variants = ["v0", "v1"]
        agentfloor_instances = "i0"
        agentfloor_models = "oracle"
        agentfloor_margin = 7.5
        agentfloor_infra_threshold = 0.1
        agentfloor_concurrency = 1
        agentfloor_no_probe = "true"
        agentfloor_case_paths = "cases"
        """)
    result = pytester.runpytest("--co", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    ids = [line for line in result.stdout.lines if "::" in line]
    assert len(ids) == 5 * 2 * 2 and "cases/tier_A0/A01.toml::A01[v1-i0-r1-oracle]" in ids


@pytest.mark.parametrize("style", ["toml", "ini"] if PYTEST_9 else ["ini"])
def test_a_bad_ini_value_names_the_ini_key_and_the_file(pytester: pytest.Pytester, style: str) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    if style == "toml":
        cfg = pytester.makefile(".toml", pyproject="[tool.pytest]\nagentfloor_runs = 5000\n")
    else:
        cfg = pytester.makeini("[pytest]\nagentfloor_runs = 5000\n")
    result = pytester.runpytest("cases", "--co", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ini setting agentfloor_runs in {cfg}: expected a whole number from 1 to 1000, "
                                 "got 5000*"])
    flag = pytester.runpytest("cases", "--co", "-q", "--agentfloor-runs", "0", "-p", "no:cacheprovider")
    flag.stderr.fnmatch_lines(["*--agentfloor-runs: expected a whole number from 1 to 1000, got 0*"])
    override = pytester.runpytest("cases", "--co", "-q", "-o", "agentfloor_margin=lots", "-p", "no:cacheprovider")
    override.stderr.fnmatch_lines(["*-o agentfloor_margin: expected a number of percentage points in *"])


@pytest.mark.parametrize(("setting", "value", "error"), [
    ("agentfloor_baseline", "old/runs.jsonl", "old/runs.jsonl: no such file"),
    ("agentfloor_gate_floors", "tier_A=high", "'tier_A=high': expected TIER>=VALUE*"),
    ("agentfloor_keep_sessions", "many", "expected a whole number from 0 to 1000000, got 'many'"),
])
def test_errors_whose_text_quotes_the_value_also_name_the_ini_key_and_file(
        pytester: pytest.Pytester, setting: str, value: str, error: str) -> None:
    """Messages of the form '--flag VALUE: ...' (a path, a floor) and settings read outside read_options."""
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    cfg = pytester.makeini(f"[pytest]\n{setting} = {value}\n")
    result = pytester.runpytest("cases", "--co", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: ini setting {setting} in {cfg}: {error}"])


@pytest.mark.skipif(not PYTEST_9, reason="a TOML integer for a paths setting is pytest 9's [tool.pytest]")
def test_a_bad_case_paths_setting_is_said_in_a_benchmark_run_only(pytester: pytest.Pytester) -> None:
    """Every run reads agentfloor_case_paths (is it a benchmark run?); a bad value must not fail a run that
    is not one (it did, found by a fresh-eyes run), and a benchmark run names the key and the file."""
    cfg = pytester.makefile(".toml", pyproject="[tool.pytest]\nagentfloor_case_paths = 3\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    plain = pytester.runpytest("-q", "-p", "no:cacheprovider")
    assert plain.ret == pytest.ExitCode.OK, plain.stderr.str()
    bench = pytester.runpytest("--co", "-q", "--model", "oracle", "-p", "no:cacheprovider")
    assert bench.ret == pytest.ExitCode.USAGE_ERROR
    bench.stderr.fnmatch_lines([f"ERROR: ini setting agentfloor_case_paths in {cfg}: expected a list of paths, "
                                "got int 3*"])


@pytest.mark.parametrize(("style", "value"), [("ini", '"unterminated'), ("toml", '"a \'b"'), ("toml", '["a\\u0000b"]')],
                         ids=["quote", "shlex", "nul"])
def test_a_case_paths_setting_that_cannot_be_read_fails_no_unrelated_run(pytester: pytest.Pytester, style: str,
                                                                         value: str) -> None:
    """An unclosed quote or a NUL byte raised ValueError out of every run, as INTERNALERROR (a fresh-eyes run)."""
    if style == "toml" and not PYTEST_9:
        pytest.skip("the native [tool.pytest] table is pytest 9's")
    cfg = (pytester.makefile(".toml", pyproject=f"[tool.pytest]\nagentfloor_case_paths = {value}\n") if style == "toml"
           else pytester.makeini(f"[pytest]\nagentfloor_case_paths = {value}\n"))
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    plain = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    assert plain.ret == pytest.ExitCode.OK, plain.stdout.str() + plain.stderr.str()
    bench = pytester.runpytest_subprocess("--co", "-q", "--model", "oracle", "-p", "no:cacheprovider")
    assert bench.ret == pytest.ExitCode.USAGE_ERROR, bench.stdout.str() + bench.stderr.str()
    bench.stderr.fnmatch_lines([f"ERROR: ini setting agentfloor_case_paths in {cfg}: *"])


def test_a_models_file_that_does_not_exist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A0", pytester.path / "cases" / "tier_A0")
    result = pytester.runpytest("cases", "--co", "-q", "--models-file", "nope.toml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--agentfloor-models-file: nope.toml: no such file (paths are relative to the "
                                 f"rootdir, {pytester.path})*"])
    pytester.makeini("[pytest]\nagentfloor_models_file = conf/models.toml\n")
    result = pytester.runpytest("cases", "--co", "-q", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*ini setting agentfloor_models_file in *tox.ini: conf/models.toml: no such file*"])
    named = pytester.runpytest("cases", "--co", "-q", "-p", "no:cacheprovider", "--models-file", "models.toml")
    assert named.ret == pytest.ExitCode.USAGE_ERROR  # named on the command line, so it must exist


# -- 6. JUnit message: the headline, with and without xdist --------------------------------------
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_junit_failure_message_is_the_one_line_headline(pytester: pytest.Pytester, xdist: list[str]) -> None:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    result = pytester.runpytest_subprocess("cases/tier_B/B1.toml", "--model", "fault-resign", "--variants", "v0",
                                           "--instances", "i0", "--junitxml", "out.xml", "-p", "no:cacheprovider",
                                           *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failures = ET.parse(pytester.path / "out.xml").getroot().findall(".//failure")
    assert len(failures) == 1
    message, text = failures[0].get("message"), failures[0].text or ""
    assert message and "\n" not in message and len(text.splitlines()) > 1
    assert message == text.splitlines()[0]
    result.stdout.fnmatch_lines([f"FAILED cases/tier_B/B1.toml::B1?v0-i0-r0-fault-resign? - {message[:20]}*"])


# -- 7. per-item cost: the record's text cap takes a fast path, with the same result -------------
def _cap_reference(value: object, limit: int) -> tuple[object, dict[str, int]]:
    """cap_text as it was before its fast path: walk every node."""
    capped: dict[str, int] = {}

    def walk(node: object, path: str) -> object:
        if isinstance(node, str):
            data = node.encode("utf-8", "surrogatepass")
            if len(data) <= limit:
                return node
            capped[path] = len(data)
            return f"{data[:limit].decode('utf-8', 'ignore')}...[cut: {len(data)} bytes in all]"
        if isinstance(node, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
        return node

    return walk(value, ""), capped


def test_cap_text_fast_path_gives_the_full_walks_result() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pytest_agentfloor.results import cap_text

    leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=40) | st.floats(allow_nan=False)
    values = st.recursive(leaves, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids,
                                                                                         max_size=4), max_leaves=12)

    @settings(max_examples=300, deadline=None)
    @given(values, st.integers(min_value=1, max_value=200))
    def check(value: object, limit: int) -> None:
        assert cap_text(value, limit=limit) == _cap_reference(value, limit)

    check()


def test_a_records_fast_text_reads_back_as_jsons_own_or_is_not_used() -> None:
    """results._fast_text (pydantic-core's encoder) is used only where json would write the same values,
    and always as ASCII (a raw U+2028 would split the line for a reader of text lines)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pytest_agentfloor.results import _fast_text, encode_record

    leaves = st.none() | st.booleans() | st.integers(-2**62, 2**62) | st.floats() | st.text(max_size=12)
    values = st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids,
                                                                                         max_size=3), max_leaves=10)
    verdicts = st.lists(st.fixed_dictionaries({"code": st.sampled_from("ASPQ"), "ok": st.booleans()},
                                              optional={"expected": values, "observed": values}), max_size=3)

    @settings(max_examples=400, deadline=None)
    @given(st.dictionaries(st.text(max_size=6), values, max_size=4), verdicts,
           st.none() | st.dictionaries(st.text(max_size=4), values, max_size=3))
    def check(head: dict, verdict_list: list, facets: dict | None) -> None:
        record = {**head, "verdicts": verdict_list, "facets": facets}
        fast = _fast_text(record)
        if fast is not None:
            assert fast.isascii()
            assert json.loads(fast) == json.loads(encode_record(record))

    check()
    assert _fast_text({"answer": "ok", "facets": None, "verdicts": []}) == '{"answer":"ok","facets":null,"verdicts":[]}'
    assert _fast_text({"answer": "caf\u00e9", "facets": None}) is None  # json escapes it: its text is used
    assert _fast_text({"facets": {"seen": {"a"}}}) is None  # json writes str(set); pydantic a list
    assert _fast_text({"facets": None, "verdicts": [{"code": "Q", "ok": False, "expected": 1.5, "observed": float("nan")}]}) is None


def test_a_records_text_from_the_trajectory_model_is_the_text_from_its_dict() -> None:
    """record_and_text(text_only=True) encodes the Trajectory itself (no dict of it per item): the same
    runs.jsonl line as from the dict, for any content (non-ASCII, NaN, a transcript past the text cap:
    those go the dict's way), and the record then holds plain data wherever the text needed it."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pytest_agentfloor.config import ModelConfig
    from pytest_agentfloor.results import MAX_TEXT_BYTES, record_and_text
    from pytest_agentfloor.suite.loader import load_case, resolve
    from pytest_agentfloor.trajectory import ToolCall, Trajectory, Turn

    raw, digest = load_case(REPO / "cases" / "tier_A" / "A1.toml")
    case = resolve(raw, "v0", "i0", digest)
    model = ModelConfig(name="m", provider="scripted", policy="oracle")
    texts = st.text(max_size=30) | st.sampled_from(["caf\u00e9", "a\u2028b", "x" * (MAX_TEXT_BYTES + 10)])

    @settings(max_examples=150, deadline=None)
    @given(texts, texts, st.floats(), st.integers(0, 10**9))
    def check(content: str, arguments: str, latency: float, tokens: int) -> None:
        call = ToolCall(turn=0, id="c0", name="lookup_record", raw_arguments=arguments, result={"status": "ok"})
        traj = Trajectory(case_id=case.id, tier=case.tier, variant="v0", instance="i0", run=0, model="m",
                          tools=list(case.tools), messages=[{"role": "user", "content": content}],
                          turns=[Turn(index=0, content=content, calls=[call], latency_s=latency, tokens_in=tokens)],
                          final_answer=content)
        plain_record, plain_text = record_and_text(case, traj, None, model, "n")
        record, text = record_and_text(case, traj, None, model, "n", text_only=True)
        assert text == plain_text
        assert record["trajectory"] is traj or record["trajectory"] == plain_record["trajectory"]
        if record["trajectory"] is traj:
            assert text.isascii() and len(text) <= MAX_TEXT_BYTES

    check()


def test_subprocess_runs_import_this_checkout(pytester: pytest.Pytester) -> None:
    """Every check above runs pytest in a subprocess: it must load this checkout's plugin, not the copy an
    editable install points at (else a worktree's subprocess checks pass or fail on another branch's code)."""
    pytester.makepyfile("import pytest_agentfloor\n\ndef test_where():\n    print('AT', pytest_agentfloor.__file__)\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    (line,) = [line for line in result.outlines if "AT " in line]
    assert Path(line.split("AT ", 1)[1].strip()).resolve() == (REPO / "pytest_agentfloor" / "__init__.py").resolve()
