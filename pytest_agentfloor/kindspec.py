"""What a case kind is: the protocol a kind implements and the entry it hands the collector.

At the bottom of the package (it imports nothing of it), so the registry (kinds.py), the
built-in kinds (suite/kind.py, callsite/kind.py, pressure/kind.py) and a third-party kind all
import these types without importing one another. docs/kinds.md shows a kind end to end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


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


@runtime_checkable
class CaseKind(Protocol):
    """A case kind: turns a parsed case file into entries, plays one resolved case, grades it.

    ``play`` returns a :class:`~pytest_agentfloor.trajectory.Trajectory` and ``grade`` a
    :class:`~pytest_agentfloor.grading.Grade` (or a subclass with ``facets``); everything after
    them (records, resume, xdist, statistics, reports) is shared by every kind.
    """

    #: the value of a case file's ``kind`` key (the ladder's files, which have none, are ``episode``)
    name: str
    #: marker name -> description, registered at configure time
    markers: dict[str, str]
    #: the folder name (an fnmatch pattern) whose TOML files are this kind's; None: never collected
    folder: str | None
    #: whether a file in that folder must also say ``kind = "<name>"`` to be collected
    declared: bool

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]: ...

    def play(self, settings: Any, case: Any, model: Any, provider: Any, run: int) -> Any: ...

    def grade(self, case: Any, trajectory: Any, hook: Any) -> Any: ...


def kind_sections(kind: object) -> Sequence[Any]:
    """The report sections a kind contributes (``sections()``, optional): report/sections.ReportSection."""
    sections = getattr(kind, "sections", None)
    return list(sections()) if callable(sections) else []
