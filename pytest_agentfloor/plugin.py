"""pytest hooks only: options, collection, fixtures and report wiring.

Data flows one way: case file -> items -> episode -> trajectory -> grade -> record. Records
reach the controller on each item's report (an extra TestReport attribute, which xdist carries),
so totals are the same with and without xdist, and only the controller aggregates and reports.
Outside benchmark runs (scope.py) the plugin only registers its options, markers and fixtures.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Iterator

import pytest

from . import hookspec
from .options import TIERS, add_options, add_free_aliases, conflict_message, foreign_option_names, \
    own_option_names, options_key, remove_aliases, taken_aliases
from .scope import case_paths, case_paths_error, is_benchmark_run, is_case_file, targets_cases

if TYPE_CHECKING:  # every pytest run of the environment imports this module: the rest loads on use
    from .config import ModelConfig
    from .options import Options
    from .providers.base import Provider
    from .runstate import RunState
    from .session import AgentFloorSession

session_key = pytest.StashKey["AgentFloorSession"]()
_taken_key = pytest.StashKey[list]()
#: the short spellings this run added to pytest's parser (options.add_free_aliases)
_aliases_key = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> Iterator[None]:
    """The short spellings (--model, --variants, ...) are added once every plugin and initial conftest
    has added its own options, and only where free: a conftest's own --model keeps working, and the
    plugin answers to --agentfloor-model there. A conftest that takes an --agentfloor-* name gets a
    usage error saying what to do (pytest >= 9 raises argparse's conflict while the conftest adds it;
    pytest 8 only when it builds the parser later, so there the names are compared here first).
    """
    try:
        result = yield
    except (argparse.ArgumentError, ValueError) as exc:  # pytest >= 9.2 checks a shared dest first (ValueError)
        taken = [n for n in own_option_names(parser) if re.search(re.escape(n) + r"\b(?!-)", str(exc))]
        if not taken:
            raise
        raise pytest.UsageError(conflict_message(taken[0])) from None
    taken = sorted(own_option_names(parser) & foreign_option_names(parser))
    if taken:
        raise pytest.UsageError(conflict_message(taken[0]))
    early_config.stash[_taken_key] = taken_aliases(parser)
    early_config.stash[_aliases_key] = add_free_aliases(parser)
    return result


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def _options(config: pytest.Config) -> "Options | None":
    """This process's options: set in benchmark runs, or once a test asks for an agentfloor fixture."""
    return config.stash.get(options_key, None)


def _state(config: pytest.Config) -> "RunState":
    """This process's run state (set together with the options)."""
    from .runstate import state_key

    return config.stash[state_key]


def pytest_configure(config: pytest.Config) -> None:
    """Outside a benchmark run only markers are registered: nothing is read, written or printed."""
    config.addinivalue_line("markers", "agentfloor: an AgentFloor benchmark episode")
    for tier in TIERS:
        config.addinivalue_line("markers", f"tier_{tier}: AgentFloor tier {tier} case")
    active = is_benchmark_run(config)
    listing = bool(config.option.markers) and targets_cases(config)
    if active or listing:
        # --markers in a project with case files lists every kind's markers (in any other project, none of
        # the kinds' generic names: email, files, raw, ...); a benchmark run loads the third-party kinds now
        # (a broken one names itself before anything runs) and each built-in kind when a file of it is
        # collected (items.register_kind_markers): a ladder run never imports the call-site or pressure kinds
        from .kinds import KindPluginError, all_kinds, plugin_kinds

        try:
            kinds = all_kinds() if listing else plugin_kinds()
        except KindPluginError as exc:  # a broken third-party kind names itself, in one line
            raise pytest.UsageError(str(exc)) from None
        from .items import register_kind_markers

        for kind in kinds:
            register_kind_markers(config, kind)
    if active:
        _activate(config, active=True)


def _activate(config: pytest.Config, active: bool) -> "Options":
    """Read the options, set up the run's state and register what a run with the plugin's items or
    fixtures needs."""
    from dataclasses import replace

    from .options import read_options
    from .runstate import RunState, state_key

    try:
        options = replace(read_options(config), active=active)
        bad_paths = case_paths_error(config)  # every run reads it; only a run of the plugin's says so
        if bad_paths is not None:
            raise bad_paths
    except pytest.UsageError as exc:
        # a usage error quotes what the user typed (a --model value, a directory name): never raw ESC/RLO
        from .render import safe_text

        raise noted(config, pytest.UsageError(safe_text(str(exc)))) from None
    if active and not hasattr(config, "workerinput"):
        check_nodeid_args(config, options)
        from .options import gate_spec

        options = replace(options, gate=gate_spec(config))
    if hasattr(config, "workerinput"):  # the worker's options, plus what the controller handed it
        state = RunState.from_workerinput(options, config.workerinput)
    else:
        state = RunState(options)
    config.stash[options_key] = options
    config.stash[state_key] = state
    if active and not hasattr(config, "workerinput"):
        if options.plan:  # collect only: no report dir, no probe, no model server, no xdist workers
            config.option.collectonly = True
        if getattr(config.option, "xmlpath", None):  # no JUnit XML written: nothing to name, no hook per report
            from .junit import JUnitNames

            config.pluginmanager.register(JUnitNames(config), "agentfloor-junit")
    if active and targets_cases(config):
        # a broken case file is reported as a collection error, but must not stop a sweep
        config.option.continue_on_collection_errors = True
    from .grading import defaults

    config.pluginmanager.register(defaults, "agentfloor-defaults")
    if hasattr(config, "workerinput"):
        if "agentfloor_local_urls" in config.workerinput:
            from .local.session import apply_worker_urls

            apply_worker_urls(config.workerinput)
    elif active:
        from .progress import install
        from .session import AgentFloorSession

        session = AgentFloorSession(config, options, state)
        config.stash[session_key] = session
        config.pluginmanager.register(session, "agentfloor-session")
        install(config, options.progress, options.progress_interval)
    return options


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """A benchmark run in a project whose conftest owns --model, given --model: say which option is ours."""
    return foreign_spelling_note(config) or None


def noted(config: pytest.Config, exc: pytest.UsageError) -> pytest.UsageError:
    """A usage error of a benchmark run given a --model that belongs to the project: it may well be about
    the plugin's own model selection (its default, an ini setting), so it says which spelling is ours."""
    note = foreign_spelling_note(config)
    return pytest.UsageError(f"{exc}\n{note[0]}") if note else exc


def foreign_spelling_note(config: pytest.Config) -> list[str]:
    """The note for a benchmark run given a short spelling (--model) that a conftest or plugin owns here."""
    taken = [a for a in config.stash.get(_taken_key, []) if _typed(config, a)]
    if not taken or not is_benchmark_run(config):
        return []
    from .options import PREFIX

    return [f"agentfloor: {', '.join(taken)} belong{'s' if len(taken) == 1 else ''} to this project's conftest.py "
            f"or another plugin here; pytest-agentfloor's spelling is "
            f"{', '.join(PREFIX + a.removeprefix('--') for a in taken)}"]


def _typed(config: pytest.Config, name: str) -> bool:
    return any(str(a) == name or str(a).startswith(name + "=") for a in config.invocation_params.args)


def check_nodeid_args(config: pytest.Config, options: "Options") -> None:
    """A node id naming a model that is not selected would be 'not found'; say which option selects it."""
    from .nodeids import split_nodeid
    from .options import _opt

    selected = {m.name for m in options.selected}
    for arg in config.args:
        path, _, model = split_nodeid(str(arg))
        if "::" in str(arg) and path.endswith(".toml") and model and model not in selected:
            flag = "--agentfloor-model" if "--model" in config.stash.get(_taken_key, []) else "--model"
            hint = f"add {flag} {model}" if model in options.models else \
                f"model {model!r} is not configured in {_opt(config, 'agentfloor_models_file')} either"
            raise pytest.UsageError(f"{arg}: this node id is an item of model {model!r}, which is not selected "
                                    f"(selected: {', '.join(sorted(selected)) or 'none'}); {hint}")


def judge_cache_notes(options: "Options") -> list[str]:
    """The judge cache's bad lines, named (read on the controller: under xdist the workers read it)."""
    if options.judge is None or options.judge_cache in ("off", "write"):
        return []
    from .judge.cache import CACHE_FILE, CacheError, JudgeCache

    cache = JudgeCache(options.report_dir / CACHE_FILE, "read")
    try:
        cache.refresh()
    except CacheError as exc:
        return [str(exc)]
    return cache.notes()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """An empty benchmark run says which selection left nothing, instead of a bare 'no tests ran'."""
    options = _options(config)
    if options is None or not options.active or hasattr(config, "workerinput"):
        return
    if config.option.verbose < 0:  # -q hides the header, which says this: the run must still say it once
        for note in foreign_spelling_note(config):
            terminalreporter.write_line(note, yellow=True)
    for note in judge_cache_notes(options):
        terminalreporter.write_line(f"agentfloor: {note}", yellow=True)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        def shown(sel: frozenset[str] | None) -> str:
            return ",".join(sorted(sel)) if sel else "all"

        terminalreporter.write_line(
            f"agentfloor: no benchmark item was selected (models {','.join(m.name for m in options.selected) or 'none'}; "
            f"variants {shown(options.variants)}; instances {shown(options.instances)}; case paths "
            f"{', '.join(str(p) for p in case_paths(config))}). Cases have prompt variants v0-v4 and instances "
            "i0 plus those they define; check --model, --variants, --instances, -k and -m", yellow=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _options(config) is None:
        return
    state = _state(config)
    state.close()
    session = config.stash.get(session_key, None)
    if session is not None:
        session.close()
    state.close_late()


# -- collection ---------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Only case files (by content) under the configured case paths, or named on the command line, and
    only in a benchmark run."""
    if file_path.suffix != ".toml":
        return None
    options = _options(parent.config)
    if options is None or not options.active or not is_case_file(parent.config, file_path):
        return None
    from .items import CaseFile

    return CaseFile.from_parent(parent, path=file_path)


#: from this many items on, collection_finish runs a full garbage collection before freezing
FREEZE_COLLECT_ITEMS = 1000


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built out of the garbage collector's view.

    Thousands of items stay alive for the whole session; without this every full collection
    re-scans them, and GC time grows with the number of items.
    """
    options = _options(session.config)
    if options is None or not options.active:
        return
    from .items import CaseItem

    if any(isinstance(i, CaseItem) for i in session.items):
        import gc

        if len(session.items) >= FREEZE_COLLECT_ITEMS:  # a full collection first (tens of ms): worth it only
            gc.collect()  # for a large run, where it keeps start-up garbage out of the frozen set
        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--agentfloor-shard K/N keeps this shard's items; with --agentfloor-resume, items already complete
    in runs.jsonl are deselected (their records still count).

    Last, after -k, -m and every other plugin's deselection: an item they drop is not resumed (its
    earlier record is not carried into this session) and counts as deselected, as pytest counts it.
    """
    options = _options(config)
    if options is None:
        return
    state = _state(config)
    from .items import CaseItem

    if state.probes and not options.run_non_capable:
        from .probe import gate

        # only the paper's exclusions skip; a probe "error" (dead endpoint) fails the items in setup;
        # items that send no tools (call sites) are never gated by the tool probe
        for item in items:
            if isinstance(item, CaseItem):
                found = state.probes.get(item.model.name)
                if found and gate(found[0], item.kind) == "skip":
                    item.add_marker(pytest.mark.skip(
                        reason=f"model {item.model.name!r} probed as {found[0]}: {found[1]} (--run-non-capable runs it)"))
    if options.shard is not None:
        from .shard import shard_members

        mine = shard_members((i.nodeid for i in items), *options.shard)
        other = [i for i in items if i.nodeid not in mine]
        if other:
            items[:] = [i for i in items if i.nodeid in mine]
            config.hook.pytest_deselected(items=other)
    if not state.resume_keys:
        return
    if not hasattr(config, "workerinput"):
        _name_changed_cases(config, items)
    done = [i for i in items if isinstance(i, CaseItem) and i.resume_key in state.resume_keys]
    if done:
        for item in done:
            item.agentfloor_resumed = True  # type: ignore[attr-defined]  # not counted as deselected
        keep = set(map(id, done))
        items[:] = [i for i in items if id(i) not in keep]
        config.hook.pytest_deselected(items=done)
        if hasattr(config, "workeroutput"):
            config.workeroutput["agentfloor_resumed"] = [i.resume_key for i in done]
        else:
            config.stash[session_key].resumed.update(i.resume_key for i in done)


def _name_changed_cases(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--resume never resumes a run of another case version (the key holds the case hash): say which."""
    from .items import CaseItem
    from .versions import describe

    previous = getattr(config.stash.get(session_key, None), "previous", None) or {}
    stored: dict[str, set[str]] = {}
    for r in previous.values():
        stored.setdefault(str(r.get("task")), set()).add(str(r.get("case_hash")))
    keys = [i.resume_key.rsplit("|", 6) for i in items if isinstance(i, CaseItem) and i.resume_key]
    current = {k[1]: k[5] for k in keys if len(k) == 7}
    changed = sorted(t for t, h in current.items() if t in stored and h not in stored[t])
    if changed:
        config.stash[session_key].problems.append(f"--resume: {describe(changed, since='the resumed runs')}; their items run again "
                                                  "(a run of another case version is never resumed)")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand the resume index to xdist workers, so every worker deselects the same items."""
    if _options(node.config) is None:
        return
    node.workerinput.update(_state(node.config).to_workerinput())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist load with --agentfloor-concurrency: keep each worker's queue as deep as its look-ahead."""
    if _options(config) is None:
        return None
    from .prefetch import make_scheduler

    return make_scheduler(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    session = node.config.stash.get(session_key, None)
    if session is not None:
        session.resumed.update(getattr(node, "workeroutput", {}).get("agentfloor_resumed", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """--max-cost: once this session's records cost the cap, every remaining item is skipped."""
    options = _options(item.config)
    if options is not None and options.max_cost is not None and getattr(item, "agentfloor_case", False):
        spent = _state(item.config).spent()
        if spent >= options.max_cost:
            from .plan import max_cost_reason

            pytest.skip(max_cost_reason(options.max_cost, spent))


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session) -> Iterator[None]:
    """Once the session has started (its servers, its probes): the look-ahead of --concurrency. A usage
    error of the start (a model's unset key, a dead local server) says which spelling is the plugin's
    where the project owns --model (noted()).

    First of all, the short spellings leave pytest's parser: the command line is read (and --help
    shown) by now, and a conftest loaded during collection may add the same names (remove_aliases)."""
    remove_aliases(session.config.stash.get(_aliases_key, []))
    try:
        result = yield
    except pytest.UsageError as exc:
        raise noted(session.config, exc) from None
    options = _options(session.config)
    if options is not None and options.concurrency > 1:
        # `from .prefetch import`, never `from . import prefetch`: the latter takes the package's
        # attribute, which after pytester's in-process run restores sys.modules is the previous run's
        # module, whose StashKey items.py (importing the new one) does not know; no look-ahead then.
        from .prefetch import start

        start(session, options.concurrency)
    return result


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if _options(session.config) is not None:
        from .prefetch import finish

        finish(session.config)


class _Crash:
    def __init__(self, message: str):
        self.message = message


class Headline:
    """An item's failure text whose first line pytest 8 also puts into the short summary.

    pytest 9 reads a plain-string longrepr for ``FAILED node - headline``; pytest 8 only reads
    ``longrepr.reprcrash.message``; JUnit XML's ``message`` is that first line too. Rendered, it is
    the text itself. (Under xdist a report travels as its string; the controller wraps it again.)
    """

    def __init__(self, text: str):
        self.text = text
        self.reprcrash = _Crash(text.split("\n", 1)[0])

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Under xdist a failure's text arrives as a plain string: make it a Headline again on the controller,
    before JUnit XML (its ``message`` is the first line) and the short summary (pytest 8) read it."""
    if isinstance(report.longrepr, str) and getattr(report, "agentfloor_measured", False):
        report.longrepr = Headline(report.longrepr)  # type: ignore[assignment]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                               ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Put the records this phase made on its report: TestReport keeps extra attributes through xdist.

    Also shortens an infrastructure error or a context-limit error raised in setup: pytest calls
    repr_failure only for the call phase, so CaseItem.repr_failure never sees them. And masks the
    session's secrets (masking.py) in the failure text and captured output: the terminal and JUnit XML
    print those, and a model can echo a key.
    """
    report = yield
    if _options(item.config) is None:
        return report
    # items.py as this run imported it (never a module attribute kept here: pytester's in-process runs
    # re-import it); not imported at all, no item or fixture of the plugin has made a record
    items = sys.modules.get(f"{__package__}.items")
    if items is None:
        _mask_report(item.config, report)
        return report
    if getattr(item, "agentfloor_case", False):
        report.agentfloor_measured = True  # type: ignore[attr-defined]
        if call.when == "setup":  # its episode's time, not its wait for it (JUnit time, --durations)
            report.duration = max(0.0, report.duration + item.stash.get(items.setup_time_adjust_key, 0.0))
        if call.excinfo is not None and call.excinfo.errisinstance((items.InfrastructureError,
                                                                   items.ContextLimitReached)):
            report.longrepr = str(call.excinfo.value)
        if isinstance(report.longrepr, str):
            # pytest renders any longrepr with toterminal(), but types it as its own TerminalRepr
            report.longrepr = Headline(report.longrepr)  # type: ignore[assignment]
    _mask_report(item.config, report)
    made = item.stash.get(items.records_key, None)
    if made:
        report.agentfloor_records = list(made)  # type: ignore[attr-defined]
        made.clear()
    return report


def _mask_report(config: pytest.Config, report: pytest.TestReport) -> None:
    """No secret of the session in what pytest prints or writes of this report (its failure text, its
    captured output); a report that shows none is left as it is (its rich rendering kept)."""
    runstate = sys.modules.get(f"{__package__}.runstate")  # imported with the options (see makereport)
    state = config.stash.get(runstate.state_key, None) if runstate is not None else None
    forms = state.model_secrets() if state is not None else ()
    if not forms:
        return
    from .masking import mask_text

    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:  # a skip: (path, line, reason)
        path, line, reason = report.longrepr
        report.longrepr = (path, line, mask_text(str(reason), forms))
    elif report.longrepr is not None:
        text = report.longrepr.text if isinstance(report.longrepr, Headline) else str(report.longrepr)
        masked = mask_text(text, forms)
        if masked != text:
            report.longrepr = Headline(masked)  # type: ignore[assignment]
    report.sections = [(title, mask_text(body, forms)) for title, body in report.sections]


# -- fixtures for users' own tests ----------------------------------------------------------
def fixture_options(config: pytest.Config) -> "Options":
    """The options a test using the plugin's fixtures needs, read on first use outside a benchmark run
    (a bad models.toml or option is then a usage error of that test's run)."""
    options = _options(config)
    return options if options is not None else _activate(config, active=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "agentfloor_model" in metafunc.fixturenames:
        selected = fixture_options(metafunc.config).selected
        metafunc.parametrize("agentfloor_model", selected, ids=[m.name for m in selected], indirect=True)


@pytest.fixture
def agentfloor_model(request: pytest.FixtureRequest) -> "ModelConfig":
    """The model configuration under test (one test per selected --model)."""
    return request.param


@pytest.fixture
def agentfloor_provider(request: pytest.FixtureRequest, agentfloor_model: "ModelConfig") -> "Provider":
    """A provider for the model under test, shared within this process."""
    fixture_options(request.config)
    return _state(request.config).provider(agentfloor_model)


@pytest.fixture
def agentfloor_episode(request: pytest.FixtureRequest, agentfloor_model: "ModelConfig", agentfloor_provider: "Provider"):
    """Run a case file's episode with the model under test: `agentfloor_episode(path, "v0", "i0")`.

    Returns (trajectory, grade), graded with the same hooks as the benchmark items. With
    `record=True` the run's record also goes to runs.jsonl, the session's report and the gate,
    exactly like a benchmark item's (and, as there, `run` numbers repeated runs).
    The same --agentfloor-judge decides the semantic checks; a judge that fails raises InfrastructureError.
    """
    from .grading import grade
    from .items import InfrastructureError, play, save_record
    from .judge.assess import assess
    from .results import build_record
    from .suite.loader import load_case, resolve

    options = fixture_options(request.config)
    state = _state(request.config)

    def run(path: str | Path, variant: str = "v0", instance: str = "i0", *, record: bool = False,
            run: int = 0) -> tuple[Any, Any]:
        case, digest = load_case(Path(path))
        resolved = resolve(case, variant, instance, digest)
        traj = play(options, resolved, agentfloor_model, agentfloor_provider, run)
        assessment = assess(resolved, traj, state.judge_for())
        if assessment.error is not None:
            raise InfrastructureError(f"infrastructure error (judge): {assessment.error}")
        result = grade(resolved, traj, request.config.hook, assessment.by_predicate())
        if record:
            save_record(request.node, build_record(resolved, traj, result, agentfloor_model, request.node.nodeid,
                                                   judging=assessment, secrets=state.model_secrets()))
        return traj, result

    return run
