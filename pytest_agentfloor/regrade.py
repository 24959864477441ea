"""Re-grade stored trajectories under the current case files and graders, without any model.

`python -m pytest_agentfloor regrade reports/runs.jsonl [--cases DIR] [--write OUT] [--judge MODEL]`
prints every outcome that changed (for example after a case's gold was corrected) and can
write a re-graded runs.jsonl that the report command reads like any other.

Grading uses the same hooks a pytest run would: the conftest.py files from the rootdir down to
each case file (as pytest scopes them), over the plugin's defaults. A conftest that cannot be
loaded stops the command rather than re-grading without its hooks; `--no-conftest` re-grades
with the defaults only. Hooks of other installed plugins are not loaded (the command says so).
With `--judge` the semantic checks are re-judged, from the judge cache first (a run whose
verdicts are all cached makes no request and needs no server); without it they use their
keyword stand-ins.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pluggy

from .callsite.guard import GraderCrashed
from .callsite.parsers import PARSERS as CALLSITE_PARSERS
from .judge.assess import assess
from .kinds import is_case_file, load_file
from .results import RunLog, duplicate_note, latest_runs, read_records
from .suite.loader import CaseError
from .trajectory import Trajectory

if TYPE_CHECKING:
    from .kindspec import CaseKind, Entry


def _index(cases_dir: Path, problems: list[str]) -> dict[str, tuple[CaseKind, Entry, Path]]:
    """task id -> (kind, entry, file) over every case file under `cases_dir` (ladder cases, call-site tables
    and pressure families)."""
    index: dict[str, tuple[CaseKind, Entry, Path]] = {}
    for path in sorted(cases_dir.rglob("*.toml")):
        if not is_case_file(path):
            continue
        try:
            kind, entries = load_file(path)
        except CaseError as exc:
            problems.append(exc.render())
            continue
        for entry in entries:
            index.setdefault(entry.id, (kind, entry, path))
    return index


class ConftestError(Exception):
    """A conftest.py could not be loaded, so its grading hooks cannot be applied."""


class _Hooks(pluggy.PluginManager):
    """Like pytest's plugin manager for our hooks: unmarked pytest_agentfloor_* functions count."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("pytest_agentfloor_") and inspect.isroutine(getattr(plugin, name, None)):
            opts = cast(pluggy.HookimplOpts, {})  # no marks: pluggy fills in every default (as pytest's own manager)
        return opts


class GradingHooks:
    """The hook relay for each case file: its conftests (rootdir down to the file's directory) over the defaults."""

    def __init__(self, rootdir: Path, use_conftests: bool = True):
        self.rootdir = rootdir.resolve()
        self.use_conftests = use_conftests
        self._modules: dict[Path, Any] = {}
        self._relays: dict[tuple[Path, ...], Any] = {}
        #: conftest path -> the grading hooks it implements, for the "in force" line
        self.in_force: dict[Path, list[str]] = {}

    def _conftests(self, case_file: Path) -> tuple[Path, ...]:
        if not self.use_conftests:
            return ()
        d = case_file.resolve().parent
        chain = [d, *d.parents]
        if self.rootdir not in chain:
            chain = [self.rootdir]
        else:
            chain = chain[:chain.index(self.rootdir) + 1]
        return tuple(p / "conftest.py" for p in reversed(chain) if (p / "conftest.py").is_file())

    def _load(self, path: Path) -> Any:
        if path not in self._modules:
            name = f"_agentfloor_regrade_conftest_{len(self._modules)}"
            try:
                spec = importlib.util.spec_from_file_location(name, path)
                assert spec and spec.loader
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            except Exception as exc:  # noqa: BLE001 - any failure means its hooks would be missing
                raise ConftestError(f"cannot load {path} ({type(exc).__name__}: {exc}); re-grading without its "
                                    "hooks could change outcomes. Fix it, or pass --no-conftest to re-grade "
                                    "with the plugin's default grading only") from None
            self._modules[path] = module
            hooks = sorted(n for n in dir(module) if n.startswith("pytest_agentfloor_")
                           and inspect.isroutine(getattr(module, n)))
            if hooks:
                self.in_force[path] = hooks
        return self._modules[path]

    def relay(self, case_file: Path) -> Any:
        key = self._conftests(case_file)
        if key not in self._relays:
            from . import hookspec
            from .grading import defaults

            pm = _Hooks("pytest")
            pm.add_hookspecs(hookspec)
            pm.register(defaults, "agentfloor-defaults")
            for path in key:
                pm.register(self._load(path), str(path))
            self._relays[key] = pm.hook
        return self._relays[key]

    def describe(self) -> str:
        if not self.use_conftests:
            return "grading hooks in force: the plugin's defaults only (--no-conftest)"
        parts = [f"{', '.join(h)} from {_rel(p, self.rootdir)}" for p, h in sorted(self.in_force.items())]
        return ("grading hooks in force: " + "; ".join(parts + ["the plugin's defaults"])
                + " (hooks of other installed plugins are not loaded)")


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def regrade_records(records: list[dict[str, Any]], cases_dir: Path,
                    hooks: GradingHooks | None = None,
                    judge: Any = None) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(re-graded records, lines describing changed outcomes, problems); hooks=None grades with the defaults;
    `judge`: a judge.client.Judge for the semantic checks (None: their keyword stand-ins)."""
    problems: list[str] = []
    index = _index(cases_dir, problems)
    out: list[dict[str, Any]] = []
    changes: list[str] = []
    for rec in records:
        task = rec.get("task")
        if rec.get("infra_error") or "trajectory" not in rec:
            out.append(rec)
            continue
        if not isinstance(task, str) or task not in index:
            problems.append(f"{rec.get('nodeid', task)}: no case file for task {task!r} under {cases_dir}")
            out.append(rec)
            continue
        kind, entry, path = index[task]
        hook = hooks.relay(path) if hooks else None  # a conftest that cannot load stops the command
        try:
            new = _regrade_one(rec, kind, entry, task, changes, problems, hook, judge)
        except (KeyError, TypeError, ValueError, RecursionError, GraderCrashed) as exc:  # kept as it is
            problems.append(f"{rec.get('nodeid', task)}: cannot be re-graded ({type(exc).__name__}: "
                            f"{str(exc)[:120]}); kept unchanged")
            new = rec
        out.append(new)
    return out, changes, problems


def _regrade_one(rec: dict[str, Any], kind: Any, entry: Any, task: str, changes: list[str],
                 problems: list[str], hook: Any = None, judge: Any = None) -> dict[str, Any]:
    """One record re-graded against its current case; raises on a record of the wrong shape."""
    if (rec["variant"], rec["instance"]) not in entry.specs:
        problems.append(f"{rec['nodeid']}: {rec['variant']}-{rec['instance']} no longer exists in {task}")
        return rec
    resolved = entry.resolve(rec["variant"], rec["instance"])
    digest = entry.content_hash
    raw_facets = rec.get("facets")
    facets: dict[str, Any] = raw_facets if isinstance(raw_facets, dict) else {}
    if kind.name == "episode" and (facets.get("V") is not None or facets.get("D") not in (None, "raw")):
        from .pressure.compiler import apply_pressure  # a ladder case run under --menu / --encoding

        resolved = apply_pressure(resolved, size=facets.get("V"), encoding=facets.get("D") or "raw")
        digest += f"+V{facets.get('V') if facets.get('V') is not None else 'own'}.{facets.get('D') or 'raw'}"
    if kind.name == "callsite" and facets.get("parser") in CALLSITE_PARSERS and resolved.parser is None:
        resolved = resolved.model_copy(update={"parser": facets["parser"]})  # read as the run read it
    traj = Trajectory.model_validate(rec["trajectory"])
    assessment = assess(resolved, traj, judge)
    if assessment.error is not None:  # no verdict, no new grade: the stored one stands
        problems.append(f"{rec['nodeid']}: not re-graded: {assessment.error}")
        return rec
    judged = assessment.by_predicate()
    g = kind.grade(resolved, traj, hook, *((judged,) if judged else ()))
    new = dict(rec)
    if judged:
        new["judge"] = assessment.record()
        new.update(assessment.scalars())
    new.update(
        passed=g.passed,
        first_unmet=None if g.passed else g.first_unmet.code,  # type: ignore[union-attr]
        failure_mode=g.failure_mode,
        terminal_flag=g.terminal_flag,
        obligations={v.code: v.ok for v in g.verdicts},
        case_hash=digest,
    )
    if getattr(g, "facets", None) is not None:
        new["facets"] = g.facets
    before = (rec["passed"], rec.get("first_unmet"), rec.get("failure_mode"))
    after = (new["passed"], new["first_unmet"], new["failure_mode"])
    if before != after:
        changes.append(f"{rec['nodeid']}: {_fmt(before)} -> {_fmt(after)}")
    return new


def _fmt(outcome: tuple[bool, str | None, str | None]) -> str:
    passed, unmet, mode = outcome
    return "passed" if passed else f"failed ({unmet}, {mode})"


def main(argv: list[str]) -> int:
    from .report.args import OneLineParser

    parser = OneLineParser(prog="python -m pytest_agentfloor regrade", description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=Path, help="a runs.jsonl")
    parser.add_argument("--cases", type=Path, default=Path("cases"), help="the case directory (default: cases)")
    parser.add_argument("--write", type=Path, help="write the re-graded records to this runs.jsonl")
    parser.add_argument("--rootdir", type=Path, default=Path("."),
                        help="where conftest.py files apply from, as pytest's rootdir (default: .)")
    parser.add_argument("--no-conftest", action="store_true",
                        help="ignore conftest.py grading hooks: the plugin's default grading only")
    parser.add_argument("--judge", metavar="MODEL", default="",
                        help="re-judge the semantic checks with this model from models.toml (cache first)")
    parser.add_argument("--judge-cache", default="readwrite", metavar="MODE",
                        choices=("readwrite", "read", "write", "off"), help="readwrite (default), read, write or off")
    parser.add_argument("--models-file", type=Path, default=Path("models.toml"), metavar="PATH",
                        help="model configurations (default: models.toml)")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"), metavar="DIR",
                        help="the report dir whose judge-cache.jsonl is used (default: reports)")
    args = parser.parse_args(argv)
    if not args.runs.is_file():  # a directory, or a device that reads without end (/dev/zero)
        print(f"regrade: no such file: {args.runs}", file=sys.stderr)
        return 2
    if not args.cases.is_dir():
        print(f"regrade: --cases {args.cases} is not a directory", file=sys.stderr)
        return 2
    from .judge.command import JudgeSetupError, open_judge

    try:
        judge, servers = open_judge(args.judge, args.models_file, args.report_dir, args.judge_cache) \
            if args.judge else (None, [])
    except JudgeSetupError as exc:
        print(f"regrade: {exc}", file=sys.stderr)
        return 2
    records, read_problems = read_records(args.runs)
    records, replaced = latest_runs(records)  # the one rule of every command for a run recorded twice
    read_problems += duplicate_note(replaced, f"{args.runs}: ")
    hooks = GradingHooks(args.rootdir, use_conftests=not args.no_conftest)
    try:
        new, changes, problems = regrade_records(records, args.cases, hooks, judge)
    except ConftestError as exc:
        print(f"regrade: {exc}", file=sys.stderr)
        return 2
    finally:
        if judge is not None:
            judge.close()
        for server in servers:
            server.stop()
    print(f"regrade: {hooks.describe()}")
    for p in read_problems + problems:
        print(f"regrade: {p}", file=sys.stderr)
    for line in changes:
        print(line)
    passed_before = sum(1 for r in records if r.get("passed"))
    passed_after = sum(1 for r in new if r.get("passed"))
    regraded = sum(1 for old, now in zip(records, new) if now is not old)
    if not regraded:  # nothing was re-graded: not a success, whatever the file held
        print(f"regrade: error: no usable record in {args.runs} ({len(records)} read, none re-graded"
              f"{'; see the notes above' if read_problems or problems else ''})", file=sys.stderr)
        return 2
    print(f"re-graded {len(records)} record(s): {len(changes)} outcome(s) changed; "
          f"passed {passed_before} -> {passed_after}")
    if judge is not None:
        print(f"semantic checks: {judge.hits + judge.requests} verdict(s) by judge {judge.name} ({judge.hits} from "
              f"the cache, {judge.requests} request(s)); cache {judge.cache.path if judge.cache else 'off'}")
    if args.write:
        if args.write.exists():
            args.write.unlink()
        log = RunLog(args.write)
        for rec in new:
            log.append(rec)
        log.close()
        print(f"wrote {args.write}")
    return 0
