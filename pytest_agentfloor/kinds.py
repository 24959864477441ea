"""The seam between case data and the one path every case takes: a registry of case kinds.

A case file names its kind (``kind = "callsite"``; no key means the ladder's ``episode``). The
kind turns the parsed file into entries (one per case, with its markers and (variant, instance)
specs), plays one resolved case into a Trajectory and grades it. Everything after the
Trajectory (records, user_properties, xdist, resume, statistics, reports) is shared and does
not ask which kind produced it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .suite.loader import CaseError, parse_case, read_toml, resolve


@dataclass(frozen=True)
class Entry:
    """One case of a file, ready to be expanded into items."""

    id: str
    content_hash: str
    specs: tuple[tuple[str, str], ...]  # (variant, instance) pairs, in item order
    markers: tuple[str, ...]  # marker names the items carry (registered by the plugin)
    resolve: Callable[[str, str], Any] = field(compare=False, repr=False)
    #: markers that differ between the items of one entry (a pressure cell's V, W, D and lane)
    spec_markers: Callable[[str, str], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)


class CaseKind(Protocol):
    name: str
    #: marker name -> description, registered at configure time
    markers: dict[str, str]

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]: ...

    def play(self, settings: Any, case: Any, model: Any, provider: Any, run: int) -> Any: ...

    def grade(self, case: Any, trajectory: Any, hook: Any) -> Any: ...


class EpisodeKind:
    """The ladder: one case per file, expanded over prompt variants and instances."""

    name = "episode"
    markers: dict[str, str] = {"ladder": "an AgentFloor ladder case (tiers A0-E); `-m ladder` selects the ladder alone"}

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        case = parse_case(data, path)
        variants = sorted(case.prompts, key=lambda v: int(v[1:]))
        instances = ["i0", *sorted(case.instances, key=lambda i: int(i[1:]))]
        cache: dict[tuple[str, str], Any] = {}

        def _resolve(variant: str, instance: str) -> Any:
            if (variant, instance) not in cache:
                cache[(variant, instance)] = resolve(case, variant, instance, content_hash)
            return cache[(variant, instance)]

        return [Entry(case.id, content_hash, tuple((v, i) for v in variants for i in instances),
                      ("ladder", f"tier_{case.tier}"), _resolve)]

    def play(self, settings: Any, case: Any, model: Any, provider: Any, run: int) -> Any:
        from .episode import run_episode
        from .grading import remaining_steps

        return run_episode(case, provider, model=model.name, run=run, system_prompt=model.system_prompt,
                           protocol=settings.protocol, timeout_s=settings.episode_timeout,
                           remaining_steps=remaining_steps)

    def grade(self, case: Any, trajectory: Any, hook: Any, judgments: Any = None) -> Any:
        """`judgments`: the semantic verdicts by predicate (judge.assess), when the item has any."""
        from .grading import grade

        return grade(case, trajectory, hook, judgments)


def is_case_file(path: Path) -> bool:
    """A case file by its content (scope.shaped_as_case): a declared kind or the ladder's keys.

    Installation files next to the tables are read by the tables that name them, not collected;
    any other TOML (a pyproject.toml in a folder that happens to be called callsite) is left alone.
    """
    from .scope import shaped_as_case

    return shaped_as_case(path)


KINDS: dict[str, CaseKind] = {}


def register_kind(kind: CaseKind) -> None:
    KINDS[kind.name] = kind


def kind_named(name: str) -> CaseKind:
    _builtin()
    return KINDS[name]


def _builtin() -> None:
    if "episode" not in KINDS:
        register_kind(EpisodeKind())
        from .callsite.kind import CallSiteKind, InstallationKind

        register_kind(CallSiteKind())
        register_kind(InstallationKind())
        from .pressure.kind import PressureKind

        register_kind(PressureKind())


def all_kinds() -> list[CaseKind]:
    _builtin()
    return list(KINDS.values())


def load_file(path: Path) -> tuple[CaseKind, list[Entry]]:
    """Read one case file and hand it to its kind; a CaseError names the file and the problem."""
    _builtin()
    data, raw = read_toml(path)
    name = data.pop("kind", "episode")
    if name not in KINDS:
        raise CaseError(path, [f"kind: unknown case kind {name!r}; valid: {', '.join(sorted(KINDS))}"])
    kind = KINDS[name]
    return kind, kind.entries(data, Path(path), hashlib.sha256(raw).hexdigest()[:16])
