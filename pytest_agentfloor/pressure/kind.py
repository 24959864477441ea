"""The pressure case kind: a family file expands into one entry per family and one item per
(cell, lane); a cell plays and grades as an episode, so records and reports stay kind-agnostic."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..grading import Grade
from ..kindspec import Entry
from ..suite.kind import EpisodeKind
from ..suite.loader import CaseError, _loc
from .compiler import COMPILER_VERSION, LANES, all_cells, cell_name, compile_cell
from .encoding import ENCODINGS
from .family import INTENTS, FamilyFile
from .frontier import FRONTIER_CALLS, FrontierFile, frontier_case
from .menu import MENU_SIZES

if TYPE_CHECKING:
    from ..report.sections import ReportSection
    from ..suite.schema import ResolvedCase
    from ..trajectory import Trajectory

MARKERS: dict[str, str] = {
    "pressure": "a controlled-pressure cell (seed 002 matched variants)",
    **{i: f"pressure family of the {i} intent" for i in INTENTS},
    **{f"V{v}": f"pressure cell with a visible menu of {v} tool schemas" for v in MENU_SIZES},
    "Wlow": "pressure cell at low workflow (one cited source)",
    "Wmedium": "pressure checkpoint cell at medium workflow (two cited sources, one dependent call)",
    "Whigh": "pressure cell at high workflow (three cited sources, reached by dependent calls)",
    **{d: f"pressure cell with {d} returned-record encoding" for d in ENCODINGS},
    "fixed": "pressure menu lane: the full menu throughout",
    "routed": "pressure menu lane: narrowed to the operational tools after the first operational call (oracle-assisted)",
    "frontier": "a workflow frontier cell: a chain of public handoffs read for 2, 6, 14 or 30 calls",
    **{f"calls{k}": f"frontier cell whose reference program makes {k} calls" for k in FRONTIER_CALLS},
}


@dataclass(frozen=True)
class PressureGrade(Grade):
    """The episode's grade plus the cell's facets the pressure statistics read."""

    facets: dict[str, Any] = field(default_factory=dict)


def cell_facets(case: ResolvedCase, traj: Trajectory) -> dict[str, Any]:
    out = case.facets() or {}
    out["exposures"] = sum(t.menu_size or 0 for t in traj.turns)  # schemas shown, summed over requests
    out["distractor_calls"] = sum(1 for c in traj.calls if c.distractor)
    own = sum(1 for t in traj.turns if t.controller for _ in t.calls)
    if own:
        out["controller_calls"] = own  # calls the public-handoff controller issued (no model request)
    if traj.repairs:  # the arm: the repair statistics read it from the record's facets (pressure/repairs/records.py)
        out["repairs"] = sorted(traj.repairs)
    if traj.cap_scale:
        out["cap_scale"] = traj.cap_scale
    return out


def cell_markers(variant: str, instance: str) -> tuple[str, ...]:
    v, w, d = variant.split("-")
    return (v, f"W{w}", d, instance)


class PressureKind(EpisodeKind):
    name = "pressure"
    markers = MARKERS

    def play(self, options: Any, case: Any, model: Any, provider: Any, run: int) -> Trajectory:
        """An episode, as the ladder's; the trajectory also says the cap sweep's multiplier in force."""
        traj = super().play(options, case, model, provider, run)
        traj.cap_scale = model.cap_scale
        return traj

    def sections(self) -> list[ReportSection]:
        """The controlled-pressure section of every report, and the repairs' (arms, the cap sweep, the frontier)."""
        from .repair_tables import section as repairs
        from .tables import section

        return [section(), repairs()]

    def entries(self, data: dict[str, Any], path: Path, content_hash: str) -> list[Entry]:
        content_hash = f"{content_hash}+c{COMPILER_VERSION}"  # compiled cells change with the compiler
        try:
            if "frontier" in data:
                return self._frontier(FrontierFile.model_validate(data), path, content_hash)
            doc = FamilyFile.model_validate(data)
        except ValidationError as exc:
            problems = [f"{_loc(e['loc'])}: {'unknown field' if e['type'] == 'extra_forbidden' else e['msg'].removeprefix('Value error, ')}"
                        for e in exc.errors(include_url=False)]
            raise CaseError(path, problems[:8]) from None
        seen: set[str] = set()
        out = []
        for fam in doc.families:
            if fam.id in seen:
                raise CaseError(path, [f"families: id {fam.id!r} appears twice"])
            seen.add(fam.id)
            def _resolve(variant: str, instance: str, fam: Any = fam,
                         cache: dict[tuple[str, str], Any] = {}) -> Any:  # noqa: B006 - one cache per family
                key = (variant, instance)
                if key not in cache:
                    v, w, d = variant.split("-")
                    cache[key] = compile_cell(fam, doc.intent, int(v[1:]), w, d, instance, content_hash)
                return cache[key]

            specs = tuple((cell_name(v, w, d), lane) for v, w, d in all_cells() for lane in LANES)
            out.append(Entry(fam.id, content_hash, specs, ("pressure", doc.intent, fam.id), _resolve,
                             spec_markers=cell_markers))
        return out

    @staticmethod
    def _frontier(doc: FrontierFile, path: Path, content_hash: str) -> list[Entry]:
        """A frontier file: one entry per family, one item per chain length (pressure/frontier.py)."""
        seen: set[str] = set()
        out = []
        for fam in doc.frontier:
            if fam.id in seen:
                raise CaseError(path, [f"frontier: id {fam.id!r} appears twice"])
            seen.add(fam.id)

            def _resolve(variant: str, instance: str, fam: Any = fam,
                         cache: dict[str, Any] = {}) -> Any:  # noqa: B006 - one cache per family
                if variant not in cache:
                    cache[variant] = frontier_case(fam, int(variant.removeprefix("calls")), content_hash)
                return cache[variant]

            specs = tuple((f"calls{k}", "fixed") for k in FRONTIER_CALLS)
            out.append(Entry(fam.id, content_hash, specs, ("pressure", "frontier", fam.intent, fam.id), _resolve,
                             spec_markers=lambda variant, instance: (variant,)))
        return out

    def grade(self, case: ResolvedCase, trajectory: Trajectory, hook: Any,
              judgments: Mapping[str, Any] | None = None) -> PressureGrade:
        from dataclasses import fields

        g = super().grade(case, trajectory, hook, judgments)
        return PressureGrade(**{f.name: getattr(g, f.name) for f in fields(g)}, facets=cell_facets(case, trajectory))
