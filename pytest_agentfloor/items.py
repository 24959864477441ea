"""Collection: a case file is a collector, each (variant, instance, run, model) an item.

The episode runs in the item's setup phase, so an endpoint that keeps failing makes the item an
error (not a failure); grading runs in the call phase.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from .config import ModelConfig
from .corpus import config_fingerprint, resume_key
from .episode import run_episode
from .grading import grade, remaining_steps
from .options import settings_key
from .providers.base import ProviderError
from .render import safe_text
from .results import build_record, properties
from .suite.loader import CaseError, load_case, resolve
from .suite.schema import Case, ResolvedCase
from .trajectory import Trajectory


#: case id -> the file that defined it first in this process's collection
case_ids_key = pytest.StashKey[dict[str, Path]]()


def model_keyword(name: str) -> str:
    return "model_" + re.sub(r"\W", "_", name)


def play(settings: Any, case: ResolvedCase, model: ModelConfig, provider: Any, run: int = 0) -> Trajectory:
    """Run one episode of `case` under the session's protocol (items and the user fixture share this)."""
    if hasattr(provider, "at_run"):  # record/replay key cassettes by the item's run as well
        provider = provider.at_run(run)
    return run_episode(case, provider, model=model.name, run=run, system_prompt=model.system_prompt,
                       protocol=settings.protocol, timeout_s=settings.episode_timeout,
                       remaining_steps=remaining_steps)


class CaseFile(pytest.File):
    """One case file; its items are (variant, instance, run, model) combinations."""

    case: Case
    content_hash: str

    def collect(self) -> Iterator["CaseItem"]:
        self.case, self.content_hash = load_case(self.path)
        first = self.config.stash.setdefault(case_ids_key, {}).setdefault(self.case.id, self.path)
        if first != self.path:  # records are keyed by case id: a second file would silently replace them
            raise CaseError(self.path, [f"id: case id {self.case.id!r} is already defined in {first}; "
                                        "every case file needs its own id"])
        self._resolved: dict[tuple[str, str], ResolvedCase] = {}
        settings = self.config.stash[settings_key]
        variants = [v for v in sorted(self.case.prompts, key=lambda v: int(v[1:]))
                    if settings.variants is None or v in settings.variants]
        instances = [i for i in ["i0", *sorted(self.case.instances, key=lambda i: int(i[1:]))]
                     if settings.instances is None or i in settings.instances]
        for model in settings.selected:
            fingerprint = config_fingerprint(model.public(), settings.protocol.params())
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
        probed = settings.probes.get(self.model.name)
        if probed and probed[0] == "error":  # a dead endpoint: nothing to measure, and no record
            raise InfrastructureError(f"model {self.model.name!r} not run: the probe at session start failed: "
                                      f"{probed[1]}")
        case = self.resolved_case
        try:
            provider = settings.provider(self.model)
        except ProviderError as exc:  # e.g. the API key variable is unset: no request can be made
            self.trajectory = Trajectory(case_id=case.id, tier=case.tier, variant=case.variant,
                                         instance=case.instance, run=self.run, model=self.model.name,
                                         tools=list(case.tools), termination="provider_error", error=str(exc))
        else:
            self.trajectory = play(settings, case, self.model, provider, self.run)
        if self.trajectory.termination == "provider_error":
            self._save_record(None)
            raise InfrastructureError(safe_text(
                f"infrastructure error ({self.model.provider}): {self.trajectory.error}"))

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
        record = build_record(self.resolved_case, self.trajectory, result, self.model, self.nodeid,
                              protocol=self.config.stash[settings_key].protocol.params())
        self.ihook.pytest_agentfloor_record(record=record)
        self.user_properties.extend(properties(record))
        self.config.stash[settings_key].log().append(record)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, (CaseFailed, InfrastructureError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # type: ignore[return-value]

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


