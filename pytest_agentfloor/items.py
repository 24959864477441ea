"""Collection: a case file is a collector, each (variant, instance, run, model) an item.

The episode runs in the item's setup phase, so an endpoint that keeps failing makes the item an
error (not a failure); grading runs in the call phase.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from .config import ModelConfig
from .corpus import config_fingerprint, resume_key
from .judge.assess import assess
from .kinds import CaseKind, Entry, kind_named, load_file
from .nodeids import item_name, item_nodeid
from .options import settings_key
from .prefetch import prefetcher_key
from .providers.base import ProviderError
from .render import safe_text
from .results import build_record, properties
from .suite.loader import CaseError
from .suite.schema import ResolvedCase
from .trajectory import Trajectory


#: case id -> the file that defined it first in this process's collection
case_ids_key = pytest.StashKey[dict[str, Path]]()


def model_keyword(name: str) -> str:
    return "model_" + re.sub(r"\W", "_", name)


def play(settings: Any, case: ResolvedCase, model: ModelConfig, provider: Any, run: int = 0) -> Trajectory:
    """Run one episode of `case` under the session's protocol (items and the user fixture share this)."""
    if hasattr(provider, "at_run"):  # record/replay key cassettes by the item's run as well
        provider = provider.at_run(run)
    return kind_named("episode").play(settings, case, model, provider, run)


_markers_key = pytest.StashKey[set]()


def _register_marker(config: pytest.Config, name: str) -> None:
    """Markers named by case data (a call site's installation, a sub-group) exist under --strict-markers."""
    known = config.stash.setdefault(_markers_key, set())
    if name not in known:
        if not any(line.split(":")[0].split("(")[0].strip() == name for line in config.getini("markers")):
            config.addinivalue_line("markers", f"{name}: agentfloor case marker (from case data)")
        known.add(name)


#: the records an item made in the current phase; plugin.py moves them onto that phase's report
records_key = pytest.StashKey[list[dict[str, Any]]]()


def junit_properties_wanted(config: pytest.Config) -> bool:
    """Not under --junitxml with junit_family=xunit2, whose schema has no per-testcase properties."""
    return not (getattr(config.option, "xmlpath", None) and config.getini("junit_family") == "xunit2")


def save_record(item: pytest.Item, record: dict[str, Any]) -> None:
    """Store one run record: hooks, runs.jsonl, the item's report (for the controller) and JUnit properties.

    Benchmark items and users' tests (through `agentfloor_episode(..., record=True)`) share this.
    """
    item.ihook.pytest_agentfloor_record(record=record)
    if junit_properties_wanted(item.config):
        item.user_properties.extend(properties(record))
    item.stash.setdefault(records_key, []).append(record)
    item.config.stash[settings_key].log().append(record)


class CaseFile(pytest.File):
    """One case file; its items are (case, variant, instance, run, model) combinations.

    What a case is, how it expands and plays, belongs to its kind (:mod:`.kinds`); a file may
    hold one case (the ladder) or many (a call-site table).
    """

    def collect(self) -> Iterator["CaseItem"]:
        settings = self.config.stash[settings_key]
        if settings.error:  # a run that did not look like a benchmark run deferred this usage error
            raise pytest.UsageError(settings.error)
        self.kind, entries = load_file(self.path)
        ids = self.config.stash.setdefault(case_ids_key, {})
        for entry in entries:
            first = ids.setdefault(entry.id, self.path)
            if first != self.path:  # records are keyed by case id: a second file would silently replace them
                raise CaseError(self.path, [f"id: case id {entry.id!r} is already defined in {first}; "
                                            "every case file needs its own id"])
        for entry in entries:
            specs = [(v, i) for v, i in entry.specs
                     if (settings.variants is None or v in settings.variants)
                     and (settings.instances is None or i in settings.instances)]
            for model in settings.selected:
                fingerprint = config_fingerprint(model.public(), settings.protocol.params())
                for v, i in specs:
                    for r in range(settings.runs):
                        item = CaseItem.from_parent(
                            self, name=item_name(entry.id, v, i, r, model.name),
                            nodeid=item_nodeid(self.nodeid, entry.id, v, i, r, model.name),
                            entry=entry, variant=v, instance=i, run=r, model=model)
                        tag = settings.pressure_tag if self.kind.name == "episode" else ""
                        item.resume_key = resume_key(model.name, entry.id, v, i, r, entry.content_hash + tag,
                                                     fingerprint)
                        yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, CaseError):
            return excinfo.value.render()
        if isinstance(excinfo.value, pytest.UsageError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # type: ignore[return-value]


class CaseFailed(Exception):
    """The model failed the case; the message is the grader's account."""


class InfrastructureError(Exception):
    """The endpoint failed after its retries: an error of the setup, not of the model."""


class ContextLimitReached(Exception):
    """The prompt did not fit the model's context window: an error of the setup, not of the model."""


class CaseItem(pytest.Item):
    #: read by the plugin's per-item hooks instead of an isinstance check that would import this module
    agentfloor_case = True

    def __init__(self, *, entry: Entry, variant: str, instance: str, run: int, model: ModelConfig, **kw: Any):
        super().__init__(**kw)
        self.entry, self.variant, self.instance, self.run, self.model = entry, variant, instance, run, model
        self.add_marker("agentfloor")
        for marker in entry.markers + (entry.spec_markers(variant, instance) if entry.spec_markers else ()):
            _register_marker(self.config, marker)
            self.add_marker(marker)
        self.extra_keyword_matches.update({entry.id, model_keyword(model.name)})
        self.trajectory = None
        self.assessment: Any = None  # judge.assess.Assessment: the semantic verdicts
        self.resume_key = ""

    @property
    def resolved_case(self) -> Any:
        case = self.entry.resolve(self.variant, self.instance)
        settings = self.config.stash[settings_key]
        if settings.pressure_tag and self.kind.name == "episode":  # --menu / --encoding on a ladder case
            from .pressure.compiler import apply_pressure

            case = apply_pressure(case, size=settings.menu, encoding=settings.encoding or "raw")
            case = case.model_copy(update={"content_hash": case.content_hash + settings.pressure_tag})
        return case

    @property
    def kind(self) -> CaseKind:
        return self.parent.kind  # type: ignore[union-attr]

    def setup(self) -> None:
        """Run the episode; an endpoint that keeps failing makes the item an error, not a failure.

        With --agentfloor-concurrency the episode may already be playing in a thread (:mod:`.prefetch`);
        the item then waits for its trajectory here, in order.
        """
        settings = self.config.stash[settings_key]
        probed = settings.probes.get(self.model.name)
        if probed and probed[0] == "error":  # a dead endpoint: nothing to measure, and no record
            raise InfrastructureError(f"model {self.model.name!r} not run: the probe at session start failed: "
                                      f"{probed[1]}")
        case = self.resolved_case
        prefetcher = self.config.stash.get(prefetcher_key, None)
        future = prefetcher.take(self) if prefetcher is not None else None
        if future is not None and not future.cancel():
            self.trajectory = future.result()
        else:
            job = self.episode_job()
            if job is None:
                try:
                    settings.provider(self.model)
                except ProviderError as exc:  # e.g. the API key variable is unset: no request can be made
                    self.trajectory = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant,
                                                 instance=case.instance, run=self.run, model=self.model.name,
                                                 tools=list(case.tools), termination="provider_error",
                                                 error=str(exc))
            else:
                self.trajectory = job()
        assert self.trajectory is not None
        if self.trajectory.termination == "provider_error":
            self._save_record(None)
            raise InfrastructureError(safe_text(
                f"infrastructure error ({self.model.provider}): {self.trajectory.error}"))
        if self.trajectory.termination == "context_limit":  # the setup's limit, not the model's failure
            self._save_record(None)
            raise ContextLimitReached(safe_text(f"context limit ({self.model.name}): {self.trajectory.error}"))
        # the judge runs here, not in the call phase: a judge that fails is an error of the setup
        self.assessment = assess(case, self.trajectory, settings.judge_for())
        if self.assessment.error is not None:
            self._save_record(None)
            raise InfrastructureError(safe_text(f"infrastructure error (judge): {self.assessment.error}"))

    def episode_job(self) -> Callable[[], Trajectory] | None:
        """The episode as a call that touches nothing of the item (safe in a thread), or None.

        None when there is nothing to play: the probe found the endpoint dead, or no provider
        can be made (both are handled in setup). Providers are made here, in the main thread.
        """
        settings = self.config.stash[settings_key]
        probed = settings.probes.get(self.model.name)
        if probed and probed[0] == "error":
            return None
        try:
            provider = settings.provider(self.model)
        except ProviderError:
            return None
        if hasattr(provider, "at_run"):  # record/replay key cassettes by the item's run as well
            provider = provider.at_run(self.run)
        kind, case, model, run = self.kind, self.resolved_case, self.model, self.run
        return lambda: kind.play(settings, case, model, provider, run)

    def runtest(self) -> None:
        case, traj = self.resolved_case, self.trajectory
        assert traj is not None
        judged = self.assessment.by_predicate() if self.assessment is not None else {}
        # only kinds with semantic checks (the ladder's episodes) receive the verdicts
        result = self.kind.grade(case, traj, self.ihook, *((judged,) if judged else ()))
        self._save_record(result)
        if not result.passed:
            lines = self.assessment.lines() if self.assessment is not None else []
            raise CaseFailed(result.message(traj) + "".join(f"\n{safe_text(line)}" for line in lines))

    def teardown(self) -> None:
        self.trajectory = self.assessment = None  # the record holds it now; keeping it would grow memory (and GC time) per item

    def _save_record(self, result: Any) -> None:
        save_record(self, build_record(self.resolved_case, self.trajectory, result, self.model, self.nodeid,
                                       protocol=self.config.stash[settings_key].protocol.params(),
                                       judging=self.assessment))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, (CaseFailed, InfrastructureError, ContextLimitReached)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # type: ignore[return-value]

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


