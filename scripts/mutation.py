"""Mutation testing, one module at a time, with the tests that target it (mutmut 3).

    python scripts/mutation.py                 # every module in MODULES, one after another
    python scripts/mutation.py results stats   # only these modules
    python scripts/mutation.py --list          # the modules and their tests
    python scripts/mutation.py stats --rerun   # after adding tests: re-test only the last run's survivors

Each module runs in its own copy of the repository (under --work, default
$TMPDIR/agentfloor-mutation/<module>) so that runs never touch the checkout and their configs
never mix. mutmut's own settings are in pyproject.toml [tool.mutmut]; this script adds only
which files to mutate and which tests to run. At the end it prints the mutation score per
module (killed + timeout over tested mutants, mutmut's definition) and the surviving mutants;
`cd <work>/<module> && mutmut show NAME` shows a survivor's diff.

``--rerun`` reuses a module's earlier run: it copies the checkout's tests into the scratch copy,
has mutmut re-record which tests call which function, and re-tests only the survivors, the
mutants no test reached and those an interrupted run left unchecked (minutes instead of the
full run). It refuses when the module's code or its test selection changed since
that run, because the mutants (and their names) would no longer match: run the module in full.

Not part of the default test run: a module takes minutes to an hour on two cores.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: module -> (files to mutate, tests that target it). Tests that reach the module only through a
#: pytest subprocess are left out: mutmut cannot tell which mutants they cover, and a pytest
#: subprocess in a scratch directory cannot load mutmut's configuration.
MODULES: dict[str, tuple[list[str], list[str]]] = {
    # grading: not the ladder audit (1,700 case-data items, 25 s for every surviving mutant)
    "grading": (["pytest_agentfloor/grading/*"], ["tests/test_grading.py", "tests/test_grading_headline.py",
                                                 "tests/test_grading_verdicts.py", "tests/test_hostile_answers.py"]),
    "episode": (["pytest_agentfloor/episode.py"], ["tests/test_episode_loop.py", "tests/test_episode.py"]),
    "corpus": (["pytest_agentfloor/corpus.py"], ["tests/test_cassettes.py", "tests/test_resume_keys.py",
                                                 "tests/test_corpus.py::TestRecordReplay"]),
    "results": (["pytest_agentfloor/results.py"], ["tests/test_records.py", "tests/test_results_units.py"]),
    "config": (["pytest_agentfloor/config.py"], ["tests/test_config.py", "tests/test_records.py"]),
    "stats": (["pytest_agentfloor/stats/*"], ["tests/stats", "tests/pressure/test_stats.py",
                                             "tests/judge/test_judge_units.py"]),
    "callsite": (["pytest_agentfloor/callsite/graders.py", "pytest_agentfloor/callsite/parsers.py"],
                 ["tests/callsite/test_graders.py", "tests/callsite/test_graders_verdicts.py",
                  "tests/callsite/test_audit.py", "tests/callsite/test_parsers.py",
                  "tests/callsite/test_released_agreement.py"]),
    "pressure": (["pytest_agentfloor/pressure/compiler.py", "pytest_agentfloor/pressure/kind.py"],
                 ["tests/pressure/test_kind.py", "tests/pressure/test_compiler.py",
                  "tests/pressure/test_audit.py", "tests/pressure/test_compiler_units.py"]),
}


def _checkout_files() -> list[str]:
    """The checkout's tracked and new (not ignored) files, relative to the repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    return [rel for rel in listed if rel and (REPO / rel).is_file()]


def _copy_repo(work: Path) -> None:
    """The checkout's tracked and new files, as they are on disk (uncommitted edits included)."""
    if work.exists():
        shutil.rmtree(work)
    for rel in _checkout_files():
        dst = work / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, dst)


def _settings(mutate: list[str], tests: list[str], base: Path) -> str:
    """The lines this script adds to [tool.mutmut]; test paths missing under ``base`` are left out."""
    tests = [t for t in tests if (base / t.split("::")[0]).exists()]
    # debug = true: mutmut 3.8 reports a usage error for the stats run without it (its output
    # capture); with it the run works and the log shows each pytest command
    return ("debug = true\n"
            f"only_mutate = {json.dumps(mutate)}\n"
            f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n")


def _configure(work: Path, mutate: list[str], tests: list[str]) -> None:
    pyproject = work / "pyproject.toml"
    text = pyproject.read_text()
    marker = "[tool.mutmut]\n"
    if marker not in text:
        raise SystemExit("pyproject.toml has no [tool.mutmut] section")
    pyproject.write_text(text.replace(marker, marker + _settings(mutate, tests, work), 1))


def _mutmut_env(work: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(work / "mutants")}
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _survivors(work: Path, env: dict[str, str], statuses: tuple[str, ...] = ("survived",)) -> list[str]:
    """Names of the mutants whose recorded status is one of ``statuses``."""
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results"], cwd=work, env=env,
                             capture_output=True, text=True).stdout
    return [line.split(":")[0].strip() for line in listing.splitlines()
            if ":" in line and line.rsplit(":", 1)[1].strip() in statuses]


def _summary(name: str, work: Path, env: dict[str, str], seconds: float) -> dict:
    """The module's figures over all its mutants, as mutmut has them recorded."""
    subprocess.run([sys.executable, "-m", "mutmut", "export-cicd-stats"], cwd=work, env=env,
                   check=True, capture_output=True)
    stats = json.loads((work / "mutants" / "mutmut-cicd-stats.json").read_text())
    tested = stats["total"] - stats.get("skipped", 0) - stats.get("not_checked", 0)
    caught = stats["killed"] + stats.get("timeout", 0)
    return {"module": name, "mutants": stats["total"], "tested": tested, "killed": caught,
            "survived": stats["survived"], "no_tests": stats.get("no_tests", 0),
            "score": round(100 * caught / tested, 1) if tested else None,
            "seconds": round(seconds), "survivors": _survivors(work, env), "work": str(work)}


def _mutmut_run(name: str, work: Path, env: dict[str, str], children: int, names: list[str]) -> dict:
    """Run mutmut on every mutant (or only on ``names``), then read back the whole module's figures."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(children), *names],
                          cwd=work, env=env, capture_output=True, text=True)
    took = time.monotonic() - start
    (work / "mutmut-run.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return {"module": name, "error": f"mutmut run exited {proc.returncode}; see {work / 'mutmut-run.log'}",
                "seconds": round(took)}
    return _summary(name, work, env, took)


def run_module(name: str, root: Path, children: int) -> dict:
    mutate, tests = MODULES[name]
    work = root / name
    _copy_repo(work)
    _configure(work, mutate, tests)
    # pytest subprocesses import the mutants too; the directory must exist before Python starts, or
    # the import system caches it as absent for the whole run
    (work / "mutants").mkdir()
    return _mutmut_run(name, work, _mutmut_env(work), children, [])


def rerun_survivors(name: str, root: Path, children: int) -> dict:
    """Re-test only the survivors of an earlier full run of ``name``, with the checkout's current tests."""
    mutate, tests = MODULES[name]
    work = root / name
    if not (work / "mutants" / "mutmut-stats.json").is_file():
        return {"module": name, "error": f"no earlier run in {work}; run the module without --rerun first"}
    if _settings(mutate, tests, REPO) not in (work / "pyproject.toml").read_text():
        return {"module": name, "error": "the module's files or test selection changed since the earlier run "
                                         "(mutmut would reset every result); run it without --rerun"}
    files = _checkout_files()
    changed = [rel for rel in files if any(fnmatch.fnmatch(rel, pattern) for pattern in mutate)
               and (not (work / rel).is_file() or (work / rel).read_bytes() != (REPO / rel).read_bytes())]
    if changed:
        return {"module": name, "error": f"code changed since the earlier run ({', '.join(changed[:5])}): the "
                                         "mutants would not match it; run the module without --rerun"}
    for rel in files:
        if rel.startswith("tests/") or rel == "conftest.py":
            src, dst = REPO / rel, work / rel
            if not dst.is_file() or dst.read_bytes() != src.read_bytes():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    env = _mutmut_env(work)
    # a new test may reach an untested function; an interrupted run left mutants unchecked
    survivors = _survivors(work, env, ("survived", "no tests", "not checked"))
    if not survivors:
        return _summary(name, work, env, 0.0)
    # an edited test keeps the coverage mutmut recorded for it: have mutmut record it afresh
    (work / "mutants" / "mutmut-stats.json").unlink()
    return _mutmut_run(name, work, env, children, survivors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"modules to run (default: all): {', '.join(MODULES)}")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "agentfloor-mutation")
    parser.add_argument("--children", type=int, default=1, help="parallel mutants (default 1: a shared machine)")
    parser.add_argument("--json", type=Path, help="also write the per-module figures here")
    parser.add_argument("--list", action="store_true", help="print the modules and their tests, run nothing")
    parser.add_argument("--rerun", action="store_true",
                        help="re-test only the survivors (and unchecked mutants) of the last run under --work, "
                             "with the checkout's tests")
    args = parser.parse_args(argv)
    names = args.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        parser.error(f"unknown module {', '.join(unknown)}; valid: {', '.join(MODULES)}")
    if args.list:
        for n in names:
            print(f"{n}: mutate {' '.join(MODULES[n][0])}; tests {' '.join(MODULES[n][1])}")
        return 0
    results = []
    for n in names:
        print(f"mutation: {n} ...", flush=True)
        res = (rerun_survivors if args.rerun else run_module)(n, args.work, args.children)
        results.append(res)
        if "error" in res:
            print(f"  {res['error']}", flush=True)
        else:
            print(f"  {res['killed']}/{res['tested']} killed ({res['score']}%), {res['survived']} survived, "
                  f"{res['no_tests']} without tests, {res['seconds']} s", flush=True)
            for s in res["survivors"]:
                print(f"    survived: {s}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
