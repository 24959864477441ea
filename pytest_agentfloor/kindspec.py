"""What a case kind is: the protocol a kind implements and the entry it hands the collector.

At the bottom of the package (it imports nothing of it), so the registry (kinds.py), the
built-in kinds (suite/kind.py, callsite/kind.py, pressure/kind.py) and a third-party kind all
import these types without importing one another. docs/kinds.md shows a kind end to end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # types only: this module imports nothing of the package at run time
    from .config import ModelConfig
    from .grading import Grade
    from .options import Options
    from .providers.base import Provider
    from .trajectory import Trajectory


class KindCase(Protocol):
    """What the shared path reads of any kind's resolved case (records, node ids, resume keys)."""

    @property
    def id(self) -> str: ...
    @property
    def tier(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def instance(self) -> str: ...
    @property
    def content_hash(self) -> str: ...


@dataclass(frozen=True)
class Entry:
    """One case of a file, ready to be expanded into items."""

    id: str
    content_hash: str
    specs: tuple[tuple[str, str], ...]  # (variant, instance) pairs, in item order
    markers: tuple[str, ...]  # marker names the items carry (registered by the plugin)
    resolve: Callable[[str, str], Any] = field(compare=False, repr=False)  # -> the kind's KindCase
    #: markers that differ between the items of one entry (a pressure cell's V, W, D and lane)
    spec_markers: Callable[[str, str], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class CaseKind(Protocol):
    """A case kind: turns a parsed case file into entries, plays one resolved case, grades it.

    ``play`` returns a :class:`~pytest_agentfloor.trajectory.Trajectory` and ``grade`` a
    :class:`~pytest_agentfloor.grading.Grade` (or a subclass with ``facets``); everything after
    them (records, resume, xdist, statistics, reports) is shared by every kind. A case is typed
    ``Any`` here because each kind has its own (ResolvedCase, CallSiteCase, ...): a Protocol
    parameter cannot be narrowed by an implementation.
    """

    #: the value of a case file's ``kind`` key (the ladder's files, which have none, are ``episode``)
    name: str
    #: marker name -> description, registered before the kind's first items (a plug-in's at start-up)
    markers: dict[str, str]

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]: ...

    def play(self, options: Options, case: Any, model: ModelConfig, provider: Provider, run: int) -> Trajectory:
        """`case` is what the entry's resolve returned (the kind's own KindCase type)."""

    def grade(self, case: Any, trajectory: Trajectory, hook: Any) -> Grade:
        """`hook` is pytest's hook relay (``item.ihook``), or None outside pytest (regrade)."""


@runtime_checkable
class EpisodePressure(Protocol):
    """What the episode loop needs of the pressures a case runs under (a kind's own data, e.g. the
    pressure kind's ``pressure.cell.PressureCell``), so the core never imports a kind: the tools
    offered among distractors, the menu shown, the lane that may narrow it, the results' encoding.

    A resolved case carries one in ``pressure`` (None: its own tools, results as plain JSON).
    """

    @property
    def offered(self) -> tuple[str, ...]:
        """The operational tools on the menu (the case's sandbox serves these)."""

    @property
    def lane(self) -> str:
        """Recorded on the trajectory (the pressure kind's ``fixed`` or ``routed``)."""

    def distractor_names(self) -> tuple[str, ...]:
        """The other names on the menu: calls to them are answered by `distractor_result`."""

    def menu_schemas(self) -> list[dict[str, Any]]:
        """The tool schemas the model is shown at the start."""

    def narrowed_menu(self) -> list[dict[str, Any]] | None:
        """The schemas shown after the first executed operational call (None: the menu never narrows)."""

    def public_result(self, name: str, args: dict[str, Any] | None, result: dict[str, Any]) -> dict[str, Any]:
        """A tool's result with the public blocks the cell adds (the pressure kind: a record's
        ``next_handoff``); the result itself when it adds none."""

    def deliver(self, result: dict[str, Any]) -> str:
        """The tool message the model reads for a tool's result."""

    def distractor_result(self, name: str) -> dict[str, Any]:
        """The result of a call to a distractor."""

    def facets(self) -> dict[str, Any]:
        """The record's facets for this case (reports group by them)."""


def kind_sections(kind: object) -> Sequence[Any]:
    """The report sections a kind contributes (``sections()``, optional): report/sections.ReportSection."""
    sections = getattr(kind, "sections", None)
    return list(sections()) if callable(sections) else []
