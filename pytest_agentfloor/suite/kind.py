"""The ladder's case kind (``episode``): one case per file, expanded over prompt variants and
instances, played as a tool-use episode. Registered through the ``agentfloor.kinds`` entry point
like any other kind; the pressure kind plays and grades its cells the same way."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kindspec import Entry
from .loader import parse_case, resolve

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..grading import Grade
    from ..options import Options
    from ..providers.base import Provider
    from ..trajectory import Trajectory
    from .schema import ResolvedCase


class EpisodeKind:
    """The ladder: one case per file, expanded over prompt variants and instances."""

    name = "episode"
    markers: dict[str, str] = {"ladder": "an AgentFloor ladder case (tiers A0-E); `-m ladder` selects the ladder alone"}

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        case = parse_case(data, path)
        variants = sorted(case.prompts, key=lambda v: int(v[1:]))
        instances = ["i0", *sorted(case.instances, key=lambda i: int(i[1:]))]
        cache: dict[tuple[str, str], ResolvedCase] = {}

        def _resolve(variant: str, instance: str) -> ResolvedCase:
            if (variant, instance) not in cache:
                cache[(variant, instance)] = resolve(case, variant, instance, content_hash)
            return cache[(variant, instance)]

        return [Entry(case.id, content_hash, tuple((v, i) for v in variants for i in instances),
                      ("ladder", f"tier_{case.tier}"), _resolve)]

    def play(self, options: Options, case: ResolvedCase, model: ModelConfig, provider: Provider,
             run: int) -> Trajectory:
        run_episode, remaining_steps = _episode_parts()
        return run_episode(case, provider, model=model.name, run=run, system_prompt=model.system_prompt,
                           protocol=options.protocol, timeout_s=options.episode_timeout,
                           remaining_steps=remaining_steps, repairs=tuple(model.repairs or ()))

    def grade(self, case: ResolvedCase, trajectory: Trajectory, hook: Any,
              judgments: Mapping[str, Any] | None = None) -> Grade:
        """`judgments`: the semantic verdicts by predicate (judge.assess), when the item has any."""
        return _grade()(case, trajectory, hook, judgments)


@functools.cache
def _episode_parts() -> tuple[Callable[..., Trajectory], Callable[[ResolvedCase, Trajectory], int]]:
    """The episode loop and the infeasibility count, imported on first play (collection needs neither),
    once: an import statement per item costs more than the lookup."""
    from ..episode import run_episode
    from ..grading import remaining_steps

    return run_episode, remaining_steps


@functools.cache
def _grade() -> Callable[..., Grade]:
    from ..grading import grade

    return grade
