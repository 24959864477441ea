"""pytest hooks only: options, collection, fixtures and report wiring.

Data flows one way: case file -> items -> episode -> trajectory -> grade -> record. Records
reach the controller through each report's user_properties, so totals are the same with and
without xdist, and only the controller aggregates and reports.
"""

from __future__ import annotations

import gc
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

from . import hookspec
from .config import ConfigError, ModelConfig, load_models
from .corpus import (CASSETTE_FILE, CassetteStore, RecordingProvider, ReplayProvider, completed_records,
                     config_fingerprint, resume_key)
from .episode import run_episode
from .grading import grade, remaining_steps
from .providers.base import Provider, make_provider
from .results import PROPERTY_FIELDS, RunLog, build_record, properties
from .suite.loader import CaseError, load_case, resolve
from .suite.schema import TIERS, Case, ResolvedCase

REPORT_MODES = ("none", "term", "all")


@dataclass
class Settings:
    """Resolved options for one pytest process (controller or worker)."""

    models: dict[str, ModelConfig]
    selected: list[ModelConfig]
    runs: int
    variants: set[str] | None
    instances: set[str] | None
    report_mode: str
    report_dir: Path
    token_budget: int
    episode_timeout: float
    reference: str | None = None
    margin_pp: float = 10.0
    cluster: str = "unit"
    infra_as_failure: bool = False
    probe: bool = True
    run_non_capable: bool = False
    probes: dict[str, tuple[str, str]] = field(default_factory=dict)
    local_servers: dict[str, Any] = field(default_factory=dict)
    record: bool = False
    replay: bool = False
    resume: bool = False
    resume_keys: set[str] = field(default_factory=set)
    providers: dict[str, Provider] = field(default_factory=dict)
    run_log: RunLog | None = None
    cassettes: CassetteStore | None = None
    gate: "GateSpec | None" = None

    def provider(self, config: ModelConfig) -> Provider:
        if config.name not in self.providers:
            if self.replay or self.record:
                self.cassettes = self.cassettes or CassetteStore(self.report_dir / CASSETTE_FILE)
            if self.replay:
                self.providers[config.name] = ReplayProvider(config, self.cassettes)  # type: ignore[arg-type]
            else:
                live = make_provider(config)
                self.providers[config.name] = RecordingProvider(live, self.cassettes) if self.record else live  # type: ignore[arg-type]
        return self.providers[config.name]

    def log(self) -> RunLog:
        if self.run_log is None:
            self.run_log = RunLog(self.report_dir / "runs.jsonl")
        return self.run_log


@dataclass
class GateSpec:
    baseline: Path
    margin_pp: float
    tiers: list[str] | None
    floors: dict[str, float]
    baseline_model: str | None


def _gate_spec(config: pytest.Config) -> GateSpec | None:
    raw = str(_opt(config, "agentfloor_baseline") or "")
    floors_raw = [f for chunk in (_opt(config, "agentfloor_gate_floors") or []) for f in str(chunk).split(",") if f]
    if not raw:
        if floors_raw or config.getoption("agentfloor_gate_tiers"):
            raise pytest.UsageError("--gate-tiers and --gate-floor need --baseline PATH")
        return None
    from .gate import GateError, parse_floor  # numpy and scipy load only when a gate is asked for

    try:
        margin = float(_opt(config, "agentfloor_gate_margin"))
        floors = dict(parse_floor(f) for f in floors_raw)
    except ValueError as exc:
        raise pytest.UsageError(str(exc) if isinstance(exc, GateError) else "--gate-margin: expected a number") from None
    tiers = [t.strip().removeprefix("tier_") for t in str(_opt(config, "agentfloor_gate_tiers")).split(",") if t.strip()]
    bad = [t for t in tiers if t not in TIERS]
    if bad:
        raise pytest.UsageError(f"--gate-tiers: unknown tier(s) {bad}; valid: {', '.join(TIERS)}")
    path = Path(config.invocation_params.dir) / raw
    if not path.exists():
        raise pytest.UsageError(f"--baseline {raw}: no such file")
    return GateSpec(path, margin, tiers or None, floors, str(_opt(config, "agentfloor_gate_baseline_model")) or None)


settings_key = pytest.StashKey[Settings]()
session_key = pytest.StashKey["AgentFloorSession"]()


# -- options ------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentfloor", "agent tool-use benchmark (pytest-agentfloor)")

    def add(opt: str, ini: str, help: str, *, default: Any, ini_type: str = "string", **kw: Any) -> None:
        group.addoption(opt, dest=ini, default=None, help=f"{help} (ini: {ini})", **kw)
        parser.addini(ini, help=help, type=ini_type, default=default)

    add("--model", "agentfloor_models", "model name(s) from models.toml; repeatable or comma-separated",
        default=["oracle"], ini_type="args", action="append", metavar="NAME")
    add("--models-file", "agentfloor_models_file", "models.toml path, relative to the rootdir",
        default="models.toml", metavar="PATH")
    add("--runs", "agentfloor_runs", "repeated runs of every (case, variant, instance)", default="1", metavar="N")
    add("--variants", "agentfloor_variants", "prompt variants to run, e.g. v0,v2 or all", default="all",
        metavar="LIST")
    add("--instances", "agentfloor_instances", "instance variants to run, e.g. i0,i3 or all", default="all",
        metavar="LIST")
    add("--agentfloor-report", "agentfloor_report",
        f"session-end report: {'|'.join(REPORT_MODES)} (all = terminal plus files in the report dir)",
        default="all", metavar="MODE")
    add("--reference", "agentfloor_reference", "compare every model against this one (paired tests)",
        default="", metavar="MODEL")
    add("--margin", "agentfloor_margin", "equivalence / non-inferiority margin of the paired tests, in pp",
        default="10", metavar="PP")
    add("--bootstrap-cluster", "agentfloor_bootstrap_cluster",
        "bootstrap resampling unit: unit = (variant, instance, run), task, or run", default="unit", metavar="KIND")
    add("--report-dir", "agentfloor_report_dir", "where runs.jsonl and reports go, relative to the rootdir",
        default="reports", metavar="DIR")
    add("--token-budget", "agentfloor_token_budget", "episode token budget", default="128000", metavar="N")
    add("--episode-timeout", "agentfloor_episode_timeout", "wall-clock seconds per episode", default="600",
        metavar="S")
    add("--baseline", "agentfloor_baseline", "gate against this runs.jsonl (or summary.json) of the incumbent",
        default="", metavar="PATH")
    add("--gate-margin", "agentfloor_gate_margin", "non-inferiority margin of the gate, in percentage points",
        default="10", metavar="PP")
    add("--gate-tiers", "agentfloor_gate_tiers", "tiers the gate checks, e.g. A0,A,B (default: all present)",
        default="", metavar="LIST")
    add("--gate-floor", "agentfloor_gate_floors", "absolute TCR floor, e.g. tier_A>=0.90; repeatable",
        default=[], ini_type="args", action="append", metavar="TIER>=X")
    add("--gate-baseline-model", "agentfloor_gate_baseline_model", "the baseline model when the file holds several",
        default="", metavar="NAME")
    for flag, ini, text in (
        ("--record", "agentfloor_record", "store every model request and response in the report dir's cassettes"),
        ("--replay", "agentfloor_replay", "answer from recorded responses only; a miss is an error"),
        ("--resume", "agentfloor_resume", "skip items already complete in runs.jsonl (same case and model config)"),
        ("--infra-as-failure", "agentfloor_infra_as_failure", "count infrastructure errors as failures in TCR"),
        ("--no-probe", "agentfloor_no_probe", "do not send each model the tool-calling probe at session start"),
        ("--run-non-capable", "agentfloor_run_non_capable",
         "run the items of models whose probe was not tool_capable instead of skipping them"),
    ):
        group.addoption(flag, dest=ini, action="store_true", default=None, help=f"{text} (ini: {ini})")
        parser.addini(ini, help=text, type="bool", default=False)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def _opt(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return config.getini(name) if value is None else value


def _int_opt(config: pytest.Config, name: str, flag: str, minimum: int = 1) -> int:
    raw = _opt(config, name)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{flag}: expected a whole number, got {raw!r}") from None
    if value < minimum:
        raise pytest.UsageError(f"{flag}: must be at least {minimum}, got {value}")
    return value


def _selection(config: pytest.Config, name: str, flag: str, prefix: str) -> set[str] | None:
    raw = str(_opt(config, name)).strip()
    if raw in ("", "all"):
        return None
    items = {p.strip() for p in raw.split(",") if p.strip()}
    bad = sorted(i for i in items if not re.fullmatch(rf"{prefix}\d+", i))
    if bad:
        raise pytest.UsageError(f"{flag}: {bad} are not {prefix}0, {prefix}1, ... names (or 'all')")
    return items


def _settings(config: pytest.Config) -> Settings:
    rootdir = Path(config.rootpath)
    models_file = rootdir / str(_opt(config, "agentfloor_models_file"))
    try:
        models = load_models(models_file if models_file.exists() else None)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    names: list[str] = []
    for chunk in _opt(config, "agentfloor_models"):
        names += [n.strip() for n in str(chunk).split(",") if n.strip()]
    unknown = [n for n in names if n not in models]
    if unknown:
        where = f" in {models_file}" if models_file.exists() else f" (no {models_file.name} found in {rootdir})"
        raise pytest.UsageError(
            f"--model: unknown model(s) {', '.join(unknown)}{where}; configured: {', '.join(sorted(models))}")
    mode = str(_opt(config, "agentfloor_report"))
    if mode not in REPORT_MODES:
        raise pytest.UsageError(f"--agentfloor-report: expected one of {', '.join(REPORT_MODES)}, got {mode!r}")
    try:
        timeout = float(_opt(config, "agentfloor_episode_timeout"))
    except ValueError:
        raise pytest.UsageError("--episode-timeout: expected seconds") from None
    reference = str(_opt(config, "agentfloor_reference") or "") or None
    if reference and reference not in names:
        raise pytest.UsageError(f"--reference: {reference!r} is not among the selected models ({', '.join(names)}); "
                                "add it with --model")
    try:
        margin = float(_opt(config, "agentfloor_margin"))
    except ValueError:
        raise pytest.UsageError("--margin: expected a number of percentage points") from None
    cluster = str(_opt(config, "agentfloor_bootstrap_cluster"))
    if cluster not in ("unit", "task", "run"):
        raise pytest.UsageError(f"--bootstrap-cluster: expected unit, task or run, got {cluster!r}")
    record, replay = bool(_opt(config, "agentfloor_record")), bool(_opt(config, "agentfloor_replay"))
    if record and replay:
        raise pytest.UsageError("--record and --replay exclude each other")
    return Settings(
        reference=reference,
        margin_pp=margin,
        cluster=cluster,
        infra_as_failure=bool(_opt(config, "agentfloor_infra_as_failure")),
        probe=not _opt(config, "agentfloor_no_probe"),
        run_non_capable=bool(_opt(config, "agentfloor_run_non_capable")),
        record=record,
        replay=replay,
        resume=bool(_opt(config, "agentfloor_resume")),
        models=models,
        selected=[models[n] for n in dict.fromkeys(names)],
        runs=_int_opt(config, "agentfloor_runs", "--runs"),
        variants=_selection(config, "agentfloor_variants", "--variants", "v"),
        instances=_selection(config, "agentfloor_instances", "--instances", "i"),
        report_mode=mode,
        report_dir=rootdir / str(_opt(config, "agentfloor_report_dir")),
        token_budget=_int_opt(config, "agentfloor_token_budget", "--token-budget"),
        episode_timeout=timeout,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agentfloor: an AgentFloor benchmark episode")
    for tier in TIERS:
        config.addinivalue_line("markers", f"tier_{tier}: AgentFloor tier {tier} case")
    settings = _settings(config)
    config.stash[settings_key] = settings
    if not hasattr(config, "workerinput"):
        settings.gate = _gate_spec(config)
    if _targets_cases(config):
        # a broken case file is reported as a collection error, but must not stop a sweep
        config.option.continue_on_collection_errors = True
    from .grading import defaults

    config.pluginmanager.register(defaults, "agentfloor-defaults")
    if hasattr(config, "workerinput"):
        settings.resume_keys = set(config.workerinput.get("agentfloor_resume", ()))
        settings.probes = {k: tuple(v) for k, v in config.workerinput.get("agentfloor_probe", {}).items()}
        if "agentfloor_local_urls" in config.workerinput:
            from .local.session import apply_worker_urls

            apply_worker_urls(config.workerinput)
    else:
        session = AgentFloorSession(config, settings)
        config.stash[session_key] = session
        config.pluginmanager.register(session, "agentfloor-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    settings = config.stash.get(settings_key, None)
    if settings is None:
        return
    for provider in settings.providers.values():
        provider.close()
    if settings.run_log:
        settings.run_log.close()
    if settings.cassettes:
        settings.cassettes.close()
    if settings.local_servers:
        from .local.session import stop_local_servers

        stop_local_servers(settings.local_servers)


# -- collection ---------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".toml" and file_path.parent.name.startswith("tier_"):
        return CaseFile.from_parent(parent, path=file_path)
    return None


def model_keyword(name: str) -> str:
    return "model_" + re.sub(r"\W", "_", name)


class CaseFile(pytest.File):
    """One case file; its items are (variant, instance, run, model) combinations."""

    case: Case
    content_hash: str

    def collect(self) -> Iterator["CaseItem"]:
        self.case, self.content_hash = load_case(self.path)
        self._resolved: dict[tuple[str, str], ResolvedCase] = {}
        settings = self.config.stash[settings_key]
        variants = [v for v in sorted(self.case.prompts, key=lambda v: int(v[1:]))
                    if settings.variants is None or v in settings.variants]
        instances = [i for i in ["i0", *sorted(self.case.instances, key=lambda i: int(i[1:]))]
                     if settings.instances is None or i in settings.instances]
        for model in settings.selected:
            fingerprint = config_fingerprint(model.public())
            for v in variants:
                for i in instances:
                    for r in range(settings.runs):
                        item = CaseItem.from_parent(self, name=f"{self.case.id}[{v}-{i}-r{r}-{model.name}]",
                                                    variant=v, instance=i, run=r, model=model)
                        item.resume_key = resume_key(model.name, self.case.id, v, i, r, self.content_hash,
                                                     fingerprint)
                        yield item

    def resolved(self, variant: str, instance: str) -> ResolvedCase:
        key = (variant, instance)
        if key not in self._resolved:
            self._resolved[key] = resolve(self.case, variant, instance, self.content_hash)
        return self._resolved[key]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, CaseError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)  # type: ignore[return-value]


class CaseFailed(Exception):
    """The model failed the case; the message is the grader's account."""


class InfrastructureError(Exception):
    """The endpoint failed after its retries: an error of the setup, not of the model."""


class CaseItem(pytest.Item):
    def __init__(self, *, variant: str, instance: str, run: int, model: ModelConfig, **kw: Any):
        super().__init__(**kw)
        self.variant, self.instance, self.run, self.model = variant, instance, run, model
        case: Case = self.parent.case  # type: ignore[union-attr]
        self.add_marker("agentfloor")
        self.add_marker(f"tier_{case.tier}")
        self.add_marker(pytest.mark.xdist_group(model.name))
        self.extra_keyword_matches.update({case.id, model_keyword(model.name)})
        self.trajectory = None
        self.resume_key = ""

    @property
    def resolved_case(self) -> ResolvedCase:
        return self.parent.resolved(self.variant, self.instance)  # type: ignore[union-attr]

    def setup(self) -> None:
        """Run the episode; an endpoint that keeps failing makes the item an error, not a failure."""
        settings = self.config.stash[settings_key]
        case = self.resolved_case
        self.trajectory = run_episode(
            case, settings.provider(self.model), model=self.model.name, run=self.run,
            system_prompt=self.model.system_prompt, token_budget=settings.token_budget,
            timeout_s=settings.episode_timeout, remaining_steps=remaining_steps,
        )
        if self.trajectory.termination == "provider_error":
            self._save_record(None)
            raise InfrastructureError(f"infrastructure error ({self.model.provider}): {self.trajectory.error}")

    def runtest(self) -> None:
        case, traj = self.resolved_case, self.trajectory
        assert traj is not None
        result = grade(case, traj, self.ihook)
        self._save_record(result)
        if not result.passed:
            raise CaseFailed(result.message(traj))

    def teardown(self) -> None:
        self.trajectory = None  # the record holds it now; keeping it would grow memory (and GC time) per item

    def _save_record(self, result: Any) -> None:
        record = build_record(self.resolved_case, self.trajectory, result, self.model, self.nodeid)
        self.ihook.pytest_agentfloor_record(record=record)
        self.user_properties.extend(properties(record))
        self.config.stash[settings_key].log().append(record)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, (CaseFailed, InfrastructureError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # type: ignore[return-value]

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built out of the garbage collector's view.

    Thousands of items stay alive for the whole session; without this every full collection
    re-scans them, and GC time grows with the number of items.
    """
    if any(isinstance(i, CaseItem) for i in session.items[:1]) or len(session.items) > 1000:
        gc.collect()
        gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With --resume, items already complete in runs.jsonl are deselected (their records still count)."""
    settings = config.stash[settings_key]
    if settings.probes and not settings.run_non_capable:
        for item in items:
            if isinstance(item, CaseItem):
                found = settings.probes.get(item.model.name)
                if found and found[0] != "tool_capable":
                    item.add_marker(pytest.mark.skip(
                        reason=f"model {item.model.name!r} probed as {found[0]}: {found[1]} (--run-non-capable runs it)"))
    if not settings.resume_keys:
        return
    done = [i for i in items if isinstance(i, CaseItem) and i.resume_key in settings.resume_keys]
    if done:
        keep = set(map(id, done))
        items[:] = [i for i in items if id(i) not in keep]
        config.hook.pytest_deselected(items=done)
        if hasattr(config, "workeroutput"):
            config.workeroutput["agentfloor_resumed"] = [i.resume_key for i in done]
        else:
            config.stash[session_key].resumed.update(i.resume_key for i in done)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand the resume index to xdist workers, so every worker deselects the same items."""
    settings = node.config.stash[settings_key]
    node.workerinput["agentfloor_resume"] = sorted(settings.resume_keys)
    node.workerinput["agentfloor_probe"] = {k: list(v) for k, v in settings.probes.items()}
    if settings.local_servers:
        from .local.session import WORKERINPUT_KEY, worker_urls

        node.workerinput[WORKERINPUT_KEY] = worker_urls(settings.local_servers)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    session = node.config.stash.get(session_key, None)
    if session is not None:
        session.resumed.update(getattr(node, "workeroutput", {}).get("agentfloor_resumed", ()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if isinstance(item, CaseItem) and call.excinfo is not None and call.excinfo.errisinstance(InfrastructureError):
        outcome.get_result().longrepr = str(call.excinfo.value)


# -- fixtures for users' own tests ----------------------------------------------------------
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "agentfloor_model" in metafunc.fixturenames:
        selected = metafunc.config.stash[settings_key].selected
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

    Returns (trajectory, grade), graded with the same hooks as the benchmark items.
    """
    settings = request.config.stash[settings_key]

    def run(path: str | Path, variant: str = "v0", instance: str = "i0") -> tuple[Any, Any]:
        case, digest = load_case(Path(path))
        resolved = resolve(case, variant, instance, digest)
        traj = run_episode(resolved, agentfloor_provider, model=agentfloor_model.name,
                           system_prompt=agentfloor_model.system_prompt, token_budget=settings.token_budget,
                           timeout_s=settings.episode_timeout, remaining_steps=remaining_steps)
        return traj, grade(resolved, traj, request.config.hook)

    return run


# -- controller-side aggregation ----------------------------------------------------------
def _targets_cases(config: pytest.Config) -> bool:
    """Whether this invocation runs benchmark cases (so runs.jsonl starts afresh)."""
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        p = (base / arg.split("::")[0]).resolve()
        if p.is_file():
            if p.suffix == ".toml" and p.parent.name.startswith("tier_"):
                return True
        elif p.is_dir():
            if p.name.startswith("tier_") or any(c.is_dir() and c.name.startswith("tier_") for c in p.iterdir()):
                return True
    return False


class AgentFloorSession:
    """Controller-only: gathers records from reports and reports at session end."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.records: list[dict[str, Any]] = []
        self.previous: dict[str, dict[str, Any]] = {}
        self.resumed: set[str] = set()
        self.problems: list[str] = []
        self.other_failures = 0
        self.gate_result: Any = None
        self.gate_error: str | None = None
        path = settings.report_dir / "runs.jsonl"
        if settings.resume:
            self.previous, self.problems = completed_records(path)
            settings.resume_keys = set(self.previous)
        elif path.exists() and _targets_cases(config):
            path.replace(path.with_name("runs.prev.jsonl"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start embedded model servers and probe each model, before xdist starts its workers."""
        st = self.settings
        if self.config.option.collectonly:
            return
        from .local.session import needs_server

        if needs_server(st.selected):
            from .local.model_files import ModelFileError
            from .local.server import LocalServerError
            from .local.session import start_local_servers

            try:
                st.local_servers = start_local_servers(st.selected, st.report_dir)
            except (ModelFileError, LocalServerError) as exc:
                raise pytest.UsageError(f"local model server: {exc}") from None
        if st.probe and not st.replay:
            self._probe_models()

    def _probe_models(self) -> None:
        from .probe import probe

        st = self.settings
        for model in st.selected:
            if model.provider == "scripted":
                continue
            result = probe(st.provider(model))
            st.probes[model.name] = (result.classification, result.detail)
        if st.probes:
            st.report_dir.mkdir(parents=True, exist_ok=True)
            data = {k: {"classification": c, "detail": d} for k, (c, d) in sorted(st.probes.items())}
            (st.report_dir / "probe.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    def all_records(self) -> list[dict[str, Any]]:
        """This session's records plus those of the items it resumed."""
        resumed = [{k: self.previous[key][k] for k in PROPERTY_FIELDS} for key in sorted(self.resumed)]
        return resumed + self.records

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties) if report.when != "teardown" else {}
        if "task" in props and "passed" in props:
            self.records.append(props)
        elif report.failed:
            self.other_failures += 1

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.other_failures += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With --baseline, the exit status is the gate's verdict: item failures are measurements."""
        spec = self.settings.gate
        if spec is None or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return
        from .gate import GateError, evaluate, load_baseline

        try:
            baseline, problems = load_baseline(spec.baseline)
            self.problems += problems
            self.gate_result = evaluate(self.all_records(), baseline, margin_pp=spec.margin_pp, tiers=spec.tiers,
                                        floors=spec.floors, baseline_model=spec.baseline_model)
        except (GateError, KeyError, ValueError) as exc:
            self.gate_error = str(exc)
        ok = self.gate_result is not None and self.gate_result.passed and self.other_failures == 0
        session.exitstatus = pytest.ExitCode.OK if ok else pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for problem in self.problems:
            terminalreporter.write_line(f"agentfloor: {problem}", yellow=True)
        for name, (cls, detail) in sorted(self.settings.probes.items()):
            terminalreporter.write_line(f"agentfloor: probe {name}: {cls}" + ("" if cls == "tool_capable" else f" ({detail})"),
                                        green=cls == "tool_capable", yellow=cls != "tool_capable")
        if self.resumed:
            terminalreporter.write_line(f"agentfloor: resumed {len(self.resumed)} item(s) from runs.jsonl")
        records = self.all_records()
        if self.settings.report_mode != "none" and records:
            self._report(terminalreporter, records)
        if self.settings.gate is not None:
            self._report_gate(terminalreporter)

    def _report(self, tr: Any, records: list[dict[str, Any]]) -> None:
        """Statistics, terminal tables and (mode all) report files; a failure here loses no record."""
        from .report import build_summary, render_summary, write_reports

        st = self.settings
        meta = {m.name: m.public() for m in st.models.values()}
        opts = dict(reference=st.reference, margin_pp=st.margin_pp, infra_as_failure=st.infra_as_failure,
                    cluster=st.cluster)
        try:
            if st.report_mode == "all":
                probe = {name: cls for name, (cls, _) in st.probes.items()}
                summary = write_reports(records, meta, st.report_dir, probe=probe, **opts)
            else:
                summary = build_summary(records, meta, **opts)[0]
        except (ValueError, OSError) as exc:
            tr.write_line(f"agentfloor: could not build the reports ({exc}); runs.jsonl is intact", red=True)
            return
        render_summary(tr, records, summary, mode=st.report_mode,
                       out_dir=st.report_dir if st.report_mode == "all" else None)

    def _report_gate(self, tr: Any) -> None:
        spec, result = self.settings.gate, self.gate_result
        assert spec is not None
        if result is None:
            tr.write_sep("=", "agentfloor gate: FAILED", red=True, bold=True)
            tr.write_line(f"gate: cannot evaluate: {self.gate_error or 'the run did not complete'}")
            return
        tr.write_sep("=", f"agentfloor gate: {result.candidate} vs {result.baseline} ({spec.baseline.name})",
                     bold=True)
        for v in result.verdicts:
            tr.write_line(v.line(spec.margin_pp), green=v.passed, red=not v.passed)
        if result.unpaired_candidate or result.unpaired_baseline:
            tr.write_line(f"gate: unpaired runs: {result.unpaired_candidate} candidate run(s) without a baseline "
                          f"counterpart, {result.unpaired_baseline} baseline run(s) not re-run")
        for note in result.notes:
            tr.write_line(f"gate: {note}")
        if self.other_failures:
            tr.write_line(f"gate: {self.other_failures} failure(s) outside the benchmark items", red=True)
        failed = [v.tier for v in result.verdicts if not v.passed]
        if result.passed and not self.other_failures:
            tr.write_sep("=", "agentfloor gate: PASSED", green=True, bold=True)
        else:
            tr.write_sep("=", f"agentfloor gate: FAILED ({', '.join(failed) or 'see above'})", red=True, bold=True)
