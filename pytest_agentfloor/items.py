"""Collection: a case file is a collector, each (variant, instance, run, model) an item.

The episode runs in the item's setup phase, so an endpoint that keeps failing makes the item an
error (not a failure). Grading is computed in setup too (a grader that crashes is the harness's
error, kept as a record), and its verdict is raised in the call phase.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from .config import ModelConfig
from .corpus import config_fingerprint, resume_key
from .callsite.guard import GraderCrashed
from .judge.assess import assess
from .kinds import CaseKind, Entry, kind_named, load_file
from .nodeids import item_name, item_nodeid
from .options import Options, options_key
from .runstate import state_key
from .prefetch import play_now, prefetcher_key, wait_for
from .probe import gate
from .providers.base import ProviderError
from .render import safe_text
from .results import INFRA_TERMINATIONS, compact, properties, record_and_text
from .suite.loader import CaseError
from .suite.schema import ResolvedCase
from .trajectory import Trajectory


#: seconds to add to an item's setup duration so that it is its episode's time (JUnit time, --durations)
setup_time_adjust_key = pytest.StashKey[float]()

#: case id -> the file that defined it first in this process's collection
case_ids_key = pytest.StashKey[dict[str, Path]]()


def model_keyword(name: str) -> str:
    return "model_" + re.sub(r"\W", "_", name)


def play(options: Options, case: ResolvedCase, model: ModelConfig, provider: Any, run: int = 0) -> Trajectory:
    """Run one episode of `case` under the session's protocol (items and the user fixture share this)."""
    if hasattr(provider, "at_run"):  # record/replay key cassettes by the item's run as well
        provider = provider.at_run(run)
    return kind_named("episode").play(options, case, model, provider, run)


_markers_key = pytest.StashKey[set]()


def _register_marker(config: pytest.Config, name: str) -> None:
    """Markers named by case data (a call site's installation, a sub-group) exist under --strict-markers."""
    known = config.stash.setdefault(_markers_key, set())
    if name not in known:
        if not any(line.split(":")[0].split("(")[0].strip() == name for line in config.getini("markers")):
            config.addinivalue_line("markers", f"{name}: agentfloor case marker (from case data)")
        known.add(name)


_kind_markers_key = pytest.StashKey[set]()


def register_kind_markers(config: pytest.Config, kind: CaseKind) -> None:
    """A kind's markers, registered once per run when the kind is first used (before its items carry them)."""
    done = config.stash.setdefault(_kind_markers_key, set())
    if kind.name not in done:
        for name, text in kind.markers.items():
            config.addinivalue_line("markers", f"{name}: {text}")
        done.add(kind.name)


#: the records an item made in the current phase (results.compact: the fields that travel); plugin.py
#: moves them onto that phase's report
records_key = pytest.StashKey[list[dict[str, Any]]]()


def junit_properties_wanted(config: pytest.Config) -> bool:
    """Not under --junitxml with junit_family=xunit2, whose schema has no per-testcase properties."""
    return not (getattr(config.option, "xmlpath", None) and config.getini("junit_family") == "xunit2")


def record_hooked(item: pytest.Item) -> bool:
    """Whether a pytest_agentfloor_record implementation will read (and may change) the item's records."""
    return bool(hook_relay(item).pytest_agentfloor_record.get_hookimpls())


def hook_relay(item: pytest.Item) -> Any:
    """The item's hook relay: a CaseItem's made once (each `item.ihook` looks up the conftests of its path)."""
    return item.relay if isinstance(item, CaseItem) else item.ihook


def save_record(item: pytest.Item, record: dict[str, Any], text: str | None = None,
                hooked: bool | None = None) -> None:
    """Store one run record: hooks, runs.jsonl, the item's report (for the controller) and JUnit properties.

    Benchmark items and users' tests (through `agentfloor_episode(..., record=True)`) share this.
    `text` is the record's encode_record text (results.record_and_text), reused for its runs.jsonl
    line unless a pytest_agentfloor_record implementation may have added fields.
    """
    if record_hooked(item) if hooked is None else hooked:
        hook_relay(item).pytest_agentfloor_record(record=record)
        text = None
    small = compact(record)  # the fields that travel: the report's, and the JUnit properties'
    if junit_properties_wanted(item.config):
        item.user_properties.extend(properties(small))
    item.stash.setdefault(records_key, []).append(small)
    item.config.stash[state_key].log().append(record, text)


class CaseFile(pytest.File):
    """One case file; its items are (case, variant, instance, run, model) combinations.

    What a case is, how it expands and plays, belongs to its kind (:mod:`.kinds`); a file may
    hold one case (the ladder) or many (a call-site table).
    """

    def collect(self) -> Iterator["CaseItem"]:
        options = self.config.stash[options_key]
        self.kind, entries = load_file(self.path)
        register_kind_markers(self.config, self.kind)
        ids = self.config.stash.setdefault(case_ids_key, {})
        for entry in entries:
            first = ids.setdefault(entry.id, self.path)
            if first != self.path:  # records are keyed by case id: a second file would silently replace them
                raise CaseError(self.path, [f"id: case id {entry.id!r} is already defined in {first}; "
                                            "every case file needs its own id"])
        # markers every case of the file carries are the file's (items inherit them for -m, -k and
        # get_closest_marker): one add_marker per file, not three per item
        shared = set.intersection(*(set(e.markers) for e in entries)) if entries else set()
        self.add_marker("agentfloor")
        for marker in sorted(shared):
            _register_marker(self.config, marker)
            self.add_marker(marker)
        for entry in entries:
            own = tuple(m for m in entry.markers if m not in shared)
            specs = [(v, i) for v, i in entry.specs
                     if (options.variants is None or v in options.variants)
                     and (options.instances is None or i in options.instances)]
            for model in options.selected:
                fingerprint = config_fingerprint(model.public(), options.protocol.params())
                for v, i in specs:
                    for r in range(options.runs):
                        item = CaseItem.from_parent(
                            self, name=item_name(entry.id, v, i, r, model.name),
                            nodeid=item_nodeid(self.nodeid, entry.id, v, i, r, model.name),
                            entry=entry, variant=v, instance=i, run=r, model=model, markers=own)
                        tag = options.pressure_tag if self.kind.name == "episode" else ""
                        item.resume_key = resume_key(model.name, entry.id, v, i, r, entry.content_hash + tag,
                                                     fingerprint)
                        yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, CaseError):
            return excinfo.value.render()
        if isinstance(excinfo.value, pytest.UsageError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # type: ignore[return-value]


#: the most an item's failure text may print (characters); the record in runs.jsonl keeps the rest
MAX_FAILURE_CHARS = 12_000
#: judge lines shown under a failure (one per semantic predicate; a case has a handful)
MAX_JUDGE_LINES = 20


def bounded_message(text: str, limit: int = MAX_FAILURE_CHARS) -> str:
    """`text` cut to `limit` characters with a note: 10,000 tool calls must not print 500 KB."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... [{len(text) - limit:,} more characters not shown: the full run is in runs.jsonl]"


class CaseFailed(Exception):
    """The model failed the case; the message is the grader's account."""


class InfrastructureError(Exception):
    """The endpoint failed after its retries: an error of the setup, not of the model."""


class ContextLimitReached(Exception):
    """The prompt did not fit the model's context window: an error of the setup, not of the model."""


def play_guarded(kind: CaseKind, options: Options, case: Any, model: ModelConfig, provider: Any,
                 run: int) -> Trajectory:
    """`kind.play`, where the harness's own crash (a bug, an overflow, a resource error) becomes an
    infrastructure error with its record, never an item lost to a traceback or charged to the model."""
    try:
        return kind.play(options, case, model, provider, run)
    except Exception as exc:
        why = " ".join(f"harness error while playing the episode: {type(exc).__name__}: {exc}".split())[:300]
        return Trajectory(case_id=case.id, tier=case.tier, variant=case.variant, instance=case.instance, run=run,
                          model=model.name, tools=list(getattr(case, "tools", ()) or ()),
                          termination="provider_error", error=why)


class CaseItem(pytest.Item):
    #: read by the plugin's per-item hooks instead of an isinstance check that would import this module
    agentfloor_case = True

    def __init__(self, *, entry: Entry, variant: str, instance: str, run: int, model: ModelConfig,
                 markers: tuple[str, ...], **kw: Any):
        """`markers`: the entry's markers its file does not carry already (CaseFile.collect)."""
        super().__init__(**kw)
        self.entry, self.variant, self.instance, self.run, self.model = entry, variant, instance, run, model
        for marker in markers + (entry.spec_markers(variant, instance) if entry.spec_markers else ()):
            _register_marker(self.config, marker)
            self.add_marker(marker)
        self.extra_keyword_matches.update({entry.id, model_keyword(model.name)})
        self.trajectory: Trajectory | None = None
        self.assessment: Any = None  # judge.assess.Assessment: the semantic verdicts
        self.result: Any = None  # the kind's grade, computed in setup
        self.resume_key = ""
        self._resolved: Any = None
        self._relay: Any = None

    @property
    def relay(self) -> Any:
        """`self.ihook`, looked up once while the item runs (grading and the record hook both ask for it)."""
        if self._relay is None:
            self._relay = self.ihook
        return self._relay

    @property
    def resolved_case(self) -> Any:
        """The case this item plays (resolved once per item: setup, the episode and the record ask for it)."""
        if self._resolved is None:
            self._resolved = self._resolve()
        return self._resolved

    def _resolve(self) -> Any:
        case = self.entry.resolve(self.variant, self.instance)
        options = self.config.stash[options_key]
        if options.pressure_tag and self.kind.name == "episode":  # --menu / --encoding on a ladder case
            from .pressure.compiler import apply_pressure

            case = apply_pressure(case, size=options.menu, encoding=options.encoding or "raw")
            case = case.model_copy(update={"content_hash": case.content_hash + options.pressure_tag})
        elif options.callsite_parser and self.kind.name == "callsite" and case.parser is None:
            # the table names none; a non-default parser is part of the resume key, as a pressure is
            tag = "" if options.callsite_parser == "deployed" else f"+parser={options.callsite_parser}"
            case = case.model_copy(update={"parser": options.callsite_parser, "content_hash": case.content_hash + tag})
        return case

    @property
    def kind(self) -> CaseKind:
        return self.parent.kind  # type: ignore[union-attr]

    def setup(self) -> None:
        """Run the episode; an endpoint that keeps failing makes the item an error, not a failure.

        With --agentfloor-concurrency the episode may already be playing in a thread (:mod:`.prefetch`);
        the item then waits for its trajectory here, in order.
        """
        state = self.config.stash[state_key]
        probed = state.probes.get(self.model.name)
        if probed and gate(probed[0], self.kind) == "error":  # a dead endpoint: nothing to measure, no record
            raise InfrastructureError(f"model {self.model.name!r} not run: the probe at session start failed: "
                                      f"{probed[1]}")
        case = self.resolved_case
        prefetcher = self.config.stash.get(prefetcher_key, None)
        future = prefetcher.take(self) if prefetcher is not None else None
        obtained = time.perf_counter()
        if future is not None and not future.cancel():
            self.trajectory = wait_for(self.config, future)
        else:
            job = self.episode_job()
            if job is None:
                try:
                    state.provider(self.model)
                except ProviderError as exc:  # e.g. the API key variable is unset: no request can be made
                    self.trajectory = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant,
                                                 instance=case.instance, run=self.run, model=self.model.name,
                                                 tools=list(case.tools), termination="provider_error",
                                                 error=str(exc))
            else:
                self.trajectory = play_now(self.config, job, self.model.provider)
        assert self.trajectory is not None
        # the setup's reported time is the episode's own, not the wait for it in the look-ahead
        # window or in a queue (plugin.pytest_runtest_makereport applies this; queue_s says the rest)
        self.stash[setup_time_adjust_key] = self.trajectory.wall_s - (time.perf_counter() - obtained)
        if self.trajectory.termination in INFRA_TERMINATIONS:
            self._save_record(None)
            source = ("the harness's deadline" if self.trajectory.termination == "timeout"
                      else "harness" if (self.trajectory.error or "").startswith("harness error")
                      else self.model.provider)
            raise InfrastructureError(safe_text(f"infrastructure error ({source}): {self.trajectory.error}"))
        if self.trajectory.termination == "context_limit":  # the setup's limit, not the model's failure
            self._save_record(None)
            raise ContextLimitReached(safe_text(f"context limit ({self.model.name}): {self.trajectory.error}"))
        # the judge runs here, not in the call phase: a judge that fails is an error of the setup
        self.assessment = assess(case, self.trajectory, state.judge_for())
        if self.assessment.error is not None:
            self._save_record(None)
            raise InfrastructureError(safe_text(f"infrastructure error (judge): {self.assessment.error}"))
        judged = self.assessment.by_predicate() if self.assessment is not None else {}
        try:  # only kinds with semantic checks (the ladder's episodes) receive the verdicts
            self.result = self.kind.grade(case, self.trajectory, self.relay, *((judged,) if judged else ()))
        except Exception as exc:  # a grader's crash is the harness's fault: an error, and the record is kept
            why = str(exc) if isinstance(exc, GraderCrashed) else f"grader crashed: {type(exc).__name__}: {exc}"
            why = " ".join(why.split())[:300]
            self._save_record(None, harness_error=why)
            raise InfrastructureError(safe_text(f"infrastructure error (grader): {why}")) from None
        if (not self.result.passed and self.model.provider == "scripted" and (self.model.policy or "oracle") == "oracle"
                and self.assessment.judge is None):
            # the oracle plays the case's own reference solution: failing the plugin's own grading (no conftest
            # rule, no judge: those may fail it on purpose) is the case's error, not a model's
            default = self.kind.grade(case, self.trajectory, None)
            # the episode budget counts the tokens a model reads, which a scripted policy only estimates: a
            # reference that meets it (the 30-call workflow frontier, by design) is a measurement, not a case error
            if not default.passed and self.trajectory.termination != "token_budget":
                self._case_error(case, default)

    def _case_error(self, case: Any, default: Any) -> None:
        """The reference solution fails its own case: an infrastructure error naming the case, record kept."""
        unmet = getattr(default.first_unmet, "code", None)
        why = (f"case error: the reference solution of {case.id} fails its own case (first unmet {unmet}: "
               f"{getattr(default.first_unmet, 'observed', '')}); fix the case's reference or its gold")
        why = " ".join(why.split())[:400]
        self._save_record(None, harness_error=why)
        self.result = None
        raise InfrastructureError(safe_text(why))

    def episode_job(self) -> Callable[[], Trajectory] | None:
        """The episode as a call that touches nothing of the item (safe in a thread), or None.

        None when there is nothing to play: the probe found the endpoint dead, or no provider
        can be made (both are handled in setup). Providers are made here, in the main thread.
        """
        state = self.config.stash[state_key]
        probed = state.probes.get(self.model.name)
        if probed and gate(probed[0], self.kind) == "error":
            return None
        try:
            provider = state.provider(self.model)
        except ProviderError:
            return None
        if hasattr(provider, "at_run"):  # record/replay key cassettes by the item's run as well
            provider = provider.at_run(self.run)
        kind, case, model, run = self.kind, self.resolved_case, self.model, self.run
        options = state.options
        return lambda: play_guarded(kind, options, case, model, provider, run)

    def runtest(self) -> None:
        traj, result = self.trajectory, self.result
        assert traj is not None and result is not None
        self._save_record(result)
        if not result.passed:
            lines = self.assessment.lines() if self.assessment is not None else []
            raise CaseFailed(bounded_message(safe_text(result.message(traj)))
                             + "".join(f"\n{safe_text(line)}" for line in lines[:MAX_JUDGE_LINES]))

    def teardown(self) -> None:
        self.trajectory = self.assessment = self.result = self._resolved = self._relay = None  # the record holds it now; keeping it would grow memory (and GC time) per item

    def _save_record(self, result: Any, harness_error: str | None = None) -> None:
        assert self.trajectory is not None  # a record is saved once the episode has played
        hooked = record_hooked(self)  # a hook reads the whole record: it gets plain data
        save_record(self, *record_and_text(self.resolved_case, self.trajectory, result, self.model, self.nodeid,
                                           protocol=self.config.stash[options_key].protocol.params(),
                                           judging=self.assessment, harness_error=harness_error,
                                           secrets=self.config.stash[state_key].model_secrets(),
                                           text_only=not hooked), hooked=hooked)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, (CaseFailed, InfrastructureError, ContextLimitReached)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # type: ignore[return-value]

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


