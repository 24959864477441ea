"""pytest hooks only: options, collection, fixtures and report wiring.

Data flows one way: case file -> items -> episode -> trajectory -> grade -> record. Records
reach the controller on each item's report (an extra TestReport attribute, which xdist carries),
so totals are the same with and without xdist, and only the controller aggregates and reports.
Outside benchmark runs (scope.py) the plugin only registers its options, markers and fixtures.
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path
from typing import Any, Iterator

import pytest

from . import hookspec, prefetch
from .config import ModelConfig
from .grading import grade
from .kinds import all_kinds
from .items import CaseFile, CaseItem, InfrastructureError, play, records_key, save_record
from .junit import JUnitNames
from .options import add_options, conflict_message, fallback_settings, foreign_option_names, gate_spec, \
    own_option_names, read_settings, settings_key
from .providers.base import Provider
from .results import build_record, compact
from .nodeids import split_nodeid
from .scope import case_paths, is_benchmark_run, is_case_file, targets_cases
from .session import AgentFloorSession
from .suite.loader import load_case, resolve
from .suite.schema import TIERS

session_key = pytest.StashKey[AgentFloorSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> Iterator[None]:
    """A conftest that defines one of the plugin's options gets a usage error saying what to do.

    pytest >= 9.2 raises argparse's conflict while the conftest adds its option; pytest 8 only
    when it builds the parser later, so there the names are compared here first.
    """
    try:
        result = yield
    except argparse.ArgumentError as exc:
        taken = [n for n in own_option_names(parser) if n in str(exc)]
        if not taken:
            raise
        raise pytest.UsageError(conflict_message(taken[0])) from None
    taken = sorted(own_option_names(parser) & foreign_option_names(parser))
    if taken:
        raise pytest.UsageError(conflict_message(taken[0]))
    return result


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agentfloor: an AgentFloor benchmark episode")
    for tier in TIERS:
        config.addinivalue_line("markers", f"tier_{tier}: AgentFloor tier {tier} case")
    for kind in all_kinds():
        for name, text in kind.markers.items():
            config.addinivalue_line("markers", f"{name}: {text}")
    active = is_benchmark_run(config)
    try:
        settings = read_settings(config)
    except pytest.UsageError as exc:
        if active:
            raise
        # not a benchmark run: an unrelated models.toml or ini value must not break the user's tests
        settings = fallback_settings(config)
        settings.error = str(exc)
    settings.active = active
    config.stash[settings_key] = settings
    if active and not settings.error:
        check_nodeid_args(config, settings)
    if active and not hasattr(config, "workerinput"):
        settings.gate = gate_spec(config)
        if settings.plan:  # collect only: no report dir, no probe, no model server, no xdist workers
            config.option.collectonly = True
        config.pluginmanager.register(JUnitNames(config), "agentfloor-junit")
    if targets_cases(config):
        # a broken case file is reported as a collection error, but must not stop a sweep
        config.option.continue_on_collection_errors = True
    from .grading import defaults

    config.pluginmanager.register(defaults, "agentfloor-defaults")
    if hasattr(config, "workerinput"):
        settings.resume_keys = set(config.workerinput.get("agentfloor_resume", ()))
        settings.probes = {k: tuple(v) for k, v in config.workerinput.get("agentfloor_probe", {}).items()}
        settings.pool_out = dict(config.workerinput.get("agentfloor_pool_out", {}))
        settings.cost_start = int(config.workerinput.get("agentfloor_cost_start", 0))
        if config.workerinput.get("agentfloor_session_dir"):
            settings.session_dir = Path(config.workerinput["agentfloor_session_dir"])
        if "agentfloor_local_urls" in config.workerinput:
            from .local.session import apply_worker_urls

            apply_worker_urls(config.workerinput)
    else:
        session = AgentFloorSession(config, settings)
        config.stash[session_key] = session
        config.pluginmanager.register(session, "agentfloor-session")
        from .progress import install

        install(config, settings.progress, settings.progress_interval)


def check_nodeid_args(config: pytest.Config, settings: Any) -> None:
    """A node id naming a model that is not selected would be 'not found'; say which option selects it."""
    selected = {m.name for m in settings.selected}
    for arg in config.args:
        path, _, model = split_nodeid(str(arg))
        if "::" in str(arg) and path.endswith(".toml") and model and model not in selected:
            hint = f"add --model {model}" if model in settings.models else \
                f"model {model!r} is not configured in {config.getini('agentfloor_models_file')} either"
            raise pytest.UsageError(f"{arg}: this node id is an item of model {model!r}, which is not selected "
                                    f"(selected: {', '.join(sorted(selected)) or 'none'}); {hint}")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """An empty benchmark run says which selection left nothing, instead of a bare 'no tests ran'."""
    settings = config.stash.get(settings_key, None)
    if settings is None or not settings.active or hasattr(config, "workerinput"):
        return
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        def shown(sel: set[str] | None) -> str:
            return ",".join(sorted(sel)) if sel else "all"

        terminalreporter.write_line(
            f"agentfloor: no benchmark item was selected (models {','.join(m.name for m in settings.selected) or 'none'}; "
            f"variants {shown(settings.variants)}; instances {shown(settings.instances)}; case paths "
            f"{', '.join(str(p) for p in case_paths(config))}). Cases have prompt variants v0-v4 and instances "
            "i0 plus those they define; check --model, --variants, --instances, -k and -m", yellow=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    settings = config.stash.get(settings_key, None)
    if settings is None:
        return
    for provider in settings.providers.values():
        provider.close()
    if settings.judge_client is not None:
        settings.judge_client.close()
    if settings.run_log:
        settings.run_log.close()
    session = config.stash.get(session_key, None)
    if session is not None:
        session.close()
    if settings.cassettes:
        settings.cassettes.close()
    if settings.local_servers:
        from .local.session import stop_local_servers

        stop_local_servers(settings.local_servers)



# -- collection ---------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Only *.toml files under the configured case paths, or named on the command line, are cases."""
    if file_path.suffix == ".toml" and is_case_file(parent.config, file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None



@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built out of the garbage collector's view.

    Thousands of items stay alive for the whole session; without this every full collection
    re-scans them, and GC time grows with the number of items.
    """
    if session.config.stash[settings_key].active and any(isinstance(i, CaseItem) for i in session.items):
        gc.collect()
        gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--agentfloor-shard K/N keeps this shard's items; with --agentfloor-resume, items already complete
    in runs.jsonl are deselected (their records still count)."""
    settings = config.stash[settings_key]
    if settings.probes and not settings.run_non_capable:
        # only the paper's exclusions skip; a probe "error" (dead endpoint) fails the items in setup
        for item in items:
            if isinstance(item, CaseItem):
                found = settings.probes.get(item.model.name)
                if found and found[0] in ("text_leaked", "no_tools"):
                    item.add_marker(pytest.mark.skip(
                        reason=f"model {item.model.name!r} probed as {found[0]}: {found[1]} (--run-non-capable runs it)"))
    if settings.shard is not None:
        from .shard import shard_members

        mine = shard_members((i.nodeid for i in items), *settings.shard)
        other = [i for i in items if i.nodeid not in mine]
        if other:
            items[:] = [i for i in items if i.nodeid in mine]
            config.hook.pytest_deselected(items=other)
    if not settings.resume_keys:
        return
    if not hasattr(config, "workerinput"):
        _name_changed_cases(config, items)
    done = [i for i in items if isinstance(i, CaseItem) and i.resume_key in settings.resume_keys]
    if done:
        keep = set(map(id, done))
        items[:] = [i for i in items if id(i) not in keep]
        config.hook.pytest_deselected(items=done)
        if hasattr(config, "workeroutput"):
            config.workeroutput["agentfloor_resumed"] = [i.resume_key for i in done]
        else:
            config.stash[session_key].resumed.update(i.resume_key for i in done)


def _name_changed_cases(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--resume never resumes a run of another case version (the key holds the case hash): say which."""
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
    settings = node.config.stash[settings_key]
    node.workerinput["agentfloor_resume"] = sorted(settings.resume_keys)
    node.workerinput["agentfloor_probe"] = {k: list(v) for k, v in settings.probes.items()}
    node.workerinput["agentfloor_pool_out"] = settings.pool_out
    node.workerinput["agentfloor_session_dir"] = str(settings.session_dir or "")
    node.workerinput["agentfloor_cost_start"] = settings.cost_start
    if settings.local_servers:
        from .local.session import WORKERINPUT_KEY, worker_urls

        node.workerinput[WORKERINPUT_KEY] = worker_urls(settings.local_servers)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist load with --agentfloor-concurrency: keep each worker's queue as deep as its look-ahead."""
    return prefetch.make_scheduler(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    session = node.config.stash.get(session_key, None)
    if session is not None:
        session.resumed.update(getattr(node, "workeroutput", {}).get("agentfloor_resumed", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """--max-cost: once this session's records cost the cap, every remaining item is skipped."""
    settings = item.config.stash[settings_key]
    if settings.max_cost is not None and isinstance(item, CaseItem):
        spent = settings.spent()
        if spent >= settings.max_cost:
            from .plan import max_cost_reason

            pytest.skip(max_cost_reason(settings.max_cost, spent))


def pytest_sessionstart(session: pytest.Session) -> None:
    prefetch.start(session, session.config.stash[settings_key].concurrency)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With --concurrency, upcoming items' episodes play in threads; items still report in order."""
    prefetch.before_item(item)
    try:
        return (yield)
    finally:
        prefetch.after_item(item)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    prefetch.finish(session.config)


class _Crash:
    def __init__(self, message: str):
        self.message = message


class Headline:
    """An item's failure text whose first line pytest 8 also puts into the short summary.

    pytest 9 reads a plain-string longrepr for ``FAILED node - headline``; pytest 8 only reads
    ``longrepr.reprcrash.message``. Rendered, it is the text itself. (Under xdist a report travels
    as its string, so pytest 8 controllers show the node id alone there.)
    """

    def __init__(self, text: str):
        self.text = text
        self.reprcrash = _Crash(text.split("\n", 1)[0])

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Put the records this phase made on its report: TestReport keeps extra attributes through xdist.

    Also shortens an infrastructure error raised in setup: pytest calls repr_failure only for the
    call phase, so CaseItem.repr_failure never sees it.
    """
    report = yield
    if isinstance(item, CaseItem):
        report.agentfloor_measured = True  # type: ignore[attr-defined]
        if call.excinfo is not None and call.excinfo.errisinstance(InfrastructureError):
            report.longrepr = str(call.excinfo.value)
        if isinstance(report.longrepr, str):
            report.longrepr = Headline(report.longrepr)
    made = item.stash.get(records_key, None)
    if made:
        report.agentfloor_records = [compact(r) for r in made]  # type: ignore[attr-defined]
        made.clear()
    return report


# -- fixtures for users' own tests ----------------------------------------------------------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "agentfloor_model" in metafunc.fixturenames:
        settings = metafunc.config.stash[settings_key]
        if settings.error:
            raise pytest.UsageError(settings.error)
        selected = settings.selected
        metafunc.parametrize("agentfloor_model", selected, ids=[m.name for m in selected], indirect=True)


@pytest.fixture
def agentfloor_model(request: pytest.FixtureRequest) -> ModelConfig:
    """The model configuration under test (one test per selected --model)."""
    return request.param


@pytest.fixture
def agentfloor_provider(request: pytest.FixtureRequest, agentfloor_model: ModelConfig) -> Provider:
    """A provider for the model under test, shared within this process."""
    return request.config.stash[settings_key].provider(agentfloor_model)


@pytest.fixture
def agentfloor_episode(request: pytest.FixtureRequest, agentfloor_model: ModelConfig, agentfloor_provider: Provider):
    """Run a case file's episode with the model under test: `agentfloor_episode(path, "v0", "i0")`.

    Returns (trajectory, grade), graded with the same hooks as the benchmark items. With
    `record=True` the run's record also goes to runs.jsonl, the session's report and the gate,
    exactly like a benchmark item's (and, as there, `run` numbers repeated runs).
    The same --agentfloor-judge decides the semantic checks; a judge that fails raises InfrastructureError.
    """
    from .judge.assess import assess

    settings = request.config.stash[settings_key]

    def run(path: str | Path, variant: str = "v0", instance: str = "i0", *, record: bool = False,
            run: int = 0) -> tuple[Any, Any]:
        case, digest = load_case(Path(path))
        resolved = resolve(case, variant, instance, digest)
        traj = play(settings, resolved, agentfloor_model, agentfloor_provider, run)
        assessment = assess(resolved, traj, settings.judge_for())
        if assessment.error is not None:
            raise InfrastructureError(f"infrastructure error (judge): {assessment.error}")
        result = grade(resolved, traj, request.config.hook, assessment.by_predicate())
        if record:
            save_record(request.node, build_record(resolved, traj, result, agentfloor_model, request.node.nodeid,
                                                   judging=assessment))
        return traj, result

    return run


