"""The pressure kind in-process: a family file's entries, a cell's markers, and its grade with the
facets the pressure statistics read."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentfloor.grading import Grade, grade
from pytest_agentfloor.pressure.kind import MARKERS, PressureGrade, PressureKind, cell_facets, cell_markers
from pytest_agentfloor.suite.loader import CaseError, read_toml
from pytest_agentfloor.trajectory import ToolCall, Trajectory, Turn

from .helpers import PRESSURE, play

ACCOUNTING = PRESSURE / "accounting.toml"


def _entries(data: dict | None = None, path: Path = ACCOUNTING) -> list:
    if data is None:
        data, _ = read_toml(path)
        data.pop("kind")
    return PressureKind().entries(data, path, "hash0")


def test_a_family_file_gives_one_entry_per_family_with_50_items() -> None:
    entries = _entries()
    assert [e.id for e in entries] == ["overdue-invoice", "duplicate-payment", entries[2].id]
    e = entries[0]
    assert (e.content_hash, e.markers) == ("hash0+c2", ("pressure", "accounting", "overdue-invoice"))
    assert len(e.specs) == 50 and len(set(e.specs)) == 50
    assert e.specs[:3] == (("V8-low-raw", "fixed"), ("V8-low-raw", "routed"), ("V8-low-compact", "fixed"))
    assert e.specs[-3] == ("V128-high-linked", "routed")
    assert e.specs[-2:] == (("V8-medium-raw", "fixed"), ("V8-medium-raw", "routed"))  # the W checkpoint
    assert e.spec_markers("V8-medium-raw", "fixed") == ("V8", "Wmedium", "raw", "fixed")
    assert e.spec_markers("V32-high-typed", "routed") == ("V32", "Whigh", "typed", "routed")


def test_entries_resolve_cells_once_and_per_family() -> None:
    first, second = _entries()[:2]
    case = first.resolve("V32-high-linked", "routed")
    assert (case.id, case.variant, case.instance, case.kind) == ("overdue-invoice", "V32-high-linked", "routed",
                                                                 "pressure")
    assert (case.pressure.size, case.pressure.workflow, case.pressure.encoding, case.pressure.lane,
            case.pressure.intent) == (32, "high", "linked", "routed", "accounting")
    assert len(case.pressure.menu) == 32 and case.content_hash == "hash0+c2"  # the compiler's version
    assert first.resolve("V32-high-linked", "routed") is case  # cached
    assert first.resolve("V32-high-linked", "fixed") is not case
    assert second.resolve("V32-high-linked", "routed").id == "duplicate-payment"


def test_bad_family_files_name_the_problem() -> None:
    data, _ = read_toml(ACCOUNTING)
    data.pop("kind")
    twice = {**data, "families": [data["families"][0], data["families"][0]]}
    with pytest.raises(CaseError) as err:
        _entries(twice)
    assert err.value.problems == ["families: id 'overdue-invoice' appears twice"]
    extra = {**data, "colour": "red"}
    with pytest.raises(CaseError) as err:
        _entries(extra)
    assert err.value.problems == ["colour: unknown field"]
    with pytest.raises(CaseError) as err:
        _entries({**data, "intent": "poetry"})
    assert err.value.problems[0].startswith("intent: ")


def test_cell_markers_and_registered_names() -> None:
    assert cell_markers("V8-low-raw", "fixed") == ("V8", "Wlow", "raw", "fixed")
    for name in ("pressure", "accounting", "V8", "V128", "Wlow", "Whigh", "linked", "fixed", "routed"):
        assert name in MARKERS


def _traj(menu_sizes: list[int | None], distractors: int) -> Trajectory:
    calls = [ToolCall(turn=0, id=f"d{i}", name="crm_list_accounts", raw_arguments="{}", arguments={},
                      result={"status": "ok"}, distractor=True) for i in range(distractors)]
    calls.append(ToolCall(turn=0, id="s", name="search_records", raw_arguments="{}", arguments={},
                          result={"status": "ok"}))
    turns = [Turn(index=i, menu_size=m, calls=calls if i == 0 else []) for i, m in enumerate(menu_sizes)]
    return Trajectory(case_id="c", tier="P", variant="V8-low-raw", instance="fixed", run=0, model="m", tools=[],
                      turns=turns, termination="final_answer", turn_budget=8)


def test_cell_facets_add_exposures_and_distractor_calls() -> None:
    case = _entries()[0].resolve("V8-low-raw", "fixed")
    facets = cell_facets(case, _traj([8, 8, None, 4], distractors=2))
    assert facets == {"family": "overdue-invoice", "intent": "accounting", "V": 8, "W": "low", "D": "raw",
                      "lane": "fixed", "cell": "V8-low-raw", "exposures": 20, "distractor_calls": 2}
    assert cell_facets(case, _traj([], distractors=0))["exposures"] == 0


def test_grade_is_the_episodes_plus_the_facets() -> None:
    case = _entries()[0].resolve("V8-high-raw", "fixed")
    traj, episode_grade = play(case)
    g = PressureKind().grade(case, traj, None)
    assert isinstance(g, PressureGrade) and isinstance(g, Grade)
    assert (g.passed, g.verdicts, g.first_unmet, g.failure_mode, g.terminal_flag) == (
        episode_grade.passed, episode_grade.verdicts, episode_grade.first_unmet, episode_grade.failure_mode,
        episode_grade.terminal_flag)
    assert g.passed and g.facets == cell_facets(case, traj)
    assert g.facets["exposures"] == 8 * len(traj.turns) and g.facets["distractor_calls"] == 0
    assert grade(case, traj).passed
