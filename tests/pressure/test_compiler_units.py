"""The compiler's and the kind's exact outputs for one family, with hand-written expected values:
the base program per workflow, the linked encoding's records, steps and reference, the menu lanes
and the error texts (these survived mutation when only the invariants were checked)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from pytest_agentfloor.grading import Verdict
from pytest_agentfloor.pressure.compiler import OPERATIONAL, apply_pressure, base_case, compile_cell, link
from pytest_agentfloor.pressure.kind import PressureKind
from pytest_agentfloor.suite.loader import CaseError, read_toml

from .helpers import PRESSURE, families, play

FAM = families()["retention-delete"][1]
S, A, B, OTHER = "F2KC-7VNO", "G8TR-3ZAE", "Y1HM-5QCW", "F2KC-8JLU"


def _lid(owner: str, rid: str, field: str) -> str:
    h = hashlib.sha256(f"{owner}|{rid}|{field}".encode()).hexdigest().upper()
    return f"L{h[:3]}-{h[3:7]}"


def _steps(case: Any) -> list[tuple]:
    return [(s.id, s.tool, list(s.alt), dict(s.args), list(s.after)) for s in case.steps]


def _ref(case: Any) -> list[list[tuple]]:
    return [[(c.tool, dict(c.args)) for c in t.calls] for t in case.reference]


LOW_STEPS = [("find", "search_records", [], {}, []),
             ("read", "lookup_record", ["get_attribute"], {"record_id": S}, ["find"]),
             ("decide", "submit_decision", [], {"record_id": S}, ["read"])]
HIGH_STEPS = [LOW_STEPS[0], LOW_STEPS[1],
              ("source1", "lookup_record", ["get_attribute"], {"record_id": A}, ["read"]),
              ("source2", "lookup_record", ["get_attribute"], {"record_id": B}, ["source1"]),
              ("decide", "submit_decision", [], {"record_id": S}, ["read", "source2"])]
SEARCH = [("search_records", {"query": "Brixham delivery notes archive"})]


def test_base_case_low_workflow() -> None:
    case = base_case(FAM, "low", "h0")
    assert (case.id, case.tier, case.variant, case.instance, case.kind, case.content_hash) == (
        "retention-delete", "P", "low", "fixed", "pressure", "h0")
    assert case.prompt.endswith("Record the decision with submit_decision on the document, and "
                                "cite the document as the only evidence.")
    assert "$cite" not in case.prompt
    assert _steps(case) == LOW_STEPS
    assert _ref(case) == [SEARCH, [("lookup_record", {"record_id": S})],
                          [("submit_decision", {"decision": "retain", "record_id": S, "evidence": [S]})]]
    assert (case.call_limit, case.turn_budget) == (5, 7)  # 3 reference calls + 2, then + 2
    assert tuple(case.tools) == OPERATIONAL


def test_base_case_high_workflow() -> None:
    case = base_case(FAM, "high", "h0")
    assert case.prompt.endswith("cite as evidence exactly three records: the document, the folder it references "
                                "and the retention schedule that folder references.")
    assert _steps(case) == HIGH_STEPS
    assert _ref(case) == [SEARCH, [("lookup_record", {"record_id": S})], [("lookup_record", {"record_id": A})],
                          [("lookup_record", {"record_id": B})],
                          [("submit_decision", {"decision": "retain", "record_id": S, "evidence": [S, A, B]})]]
    assert (case.call_limit, case.turn_budget) == (7, 9)


def test_base_case_records_keep_names_and_tags() -> None:
    recs = {r.id: r for r in base_case(FAM, "low", "h0").fixtures.records}
    assert list(recs) == [S, A, B, OTHER]
    assert (recs[S].name, list(recs[S].tags)) == ("Brixham depot scanned delivery notes archive",
                                                  ["brixham", "delivery-notes"])
    assert (recs[A].name, list(recs[A].tags)) == ("Depot operations folder", [])


def test_link_splits_nested_objects_into_records() -> None:
    case = link(base_case(FAM, "high", "h0"))
    ls, lo = _lid("retention-delete", S, "retention"), _lid("retention-delete", OTHER, "retention")
    recs = {r.id: r for r in case.fixtures.records}
    assert list(recs) == [S, A, B, OTHER, ls, lo]
    assert recs[S].fields == {"size_mb": 740, "retention": {"$ref": ls}, "folder": A}
    assert recs[OTHER].fields["retention"] == {"$ref": lo}
    assert recs[A].fields == {"site": "Brixham", "schedule": B}  # nothing nested: unchanged
    assert (recs[ls].collection, recs[ls].fields) == ("documents.retention", {"ends": "2026-06-30",
                                                                              "legal_hold": True})
    assert _steps(case) == [HIGH_STEPS[0], HIGH_STEPS[1],
                            ("read.link0", "lookup_record", ["get_attribute"], {"record_id": ls}, ["read"]),
                            HIGH_STEPS[2], HIGH_STEPS[3],
                            ("decide", "submit_decision", [], {"record_id": S}, ["read", "source2", "read.link0"])]
    assert _ref(case) == [SEARCH, [("lookup_record", {"record_id": S})], [("lookup_record", {"record_id": ls})],
                          [("lookup_record", {"record_id": A})], [("lookup_record", {"record_id": B})],
                          [("submit_decision", {"decision": "retain", "record_id": S, "evidence": [S, A, B]})]]
    assert (case.call_limit, case.turn_budget) == (8, 10)  # one linked read added to both


def test_link_low_follows_the_read_not_the_submission() -> None:
    case = link(base_case(FAM, "low", "h0"))
    ls = _lid("retention-delete", S, "retention")
    assert _ref(case) == [SEARCH, [("lookup_record", {"record_id": S})], [("lookup_record", {"record_id": ls})],
                          [("submit_decision", {"decision": "retain", "record_id": S, "evidence": [S]})]]
    assert (case.call_limit, case.turn_budget) == (6, 8)


def test_link_without_nested_objects_changes_nothing() -> None:
    case = base_case(FAM, "low", "h0")
    flat = case.model_copy(update={"fixtures": case.fixtures.model_copy(update={"records": [
        r.model_copy(update={"fields": {k: v for k, v in r.fields.items() if not isinstance(v, dict)}})
        for r in case.fixtures.records]})})
    out = link(flat)
    assert out.fixtures.records == flat.fixtures.records
    assert (_steps(out), _ref(out), out.call_limit, out.turn_budget) == (LOW_STEPS, _ref(case), 5, 7)


def test_apply_pressure_without_a_size_shows_the_case_tools() -> None:
    case = apply_pressure(base_case(FAM, "low", "h0"), size=None)
    assert case.pressure.menu == OPERATIONAL and case.pressure.offered == OPERATIONAL
    assert (case.pressure.family, case.pressure.encoding, case.pressure.lane) == ("retention-delete", "raw", "fixed")


def test_apply_pressure_draws_the_menu_by_family() -> None:
    base = base_case(FAM, "low", "h0")
    named = apply_pressure(base, size=32, family="overdue-invoice")
    own = apply_pressure(base, size=32)
    assert named.pressure.family == "overdue-invoice" and own.pressure.family == "retention-delete"
    assert named.pressure.menu != own.pressure.menu  # the draw is seeded by the family
    assert set(OPERATIONAL) <= set(named.pressure.menu) and len(named.pressure.menu) == 32


def test_apply_pressure_and_compile_cell_error_texts() -> None:
    base = base_case(FAM, "low", "h0")
    with pytest.raises(ValueError) as err:
        apply_pressure(base, size=None, encoding="xml")
    assert str(err.value) == "encoding 'xml': valid are raw, compact, typed, linked"
    with pytest.raises(ValueError) as err:
        apply_pressure(base, size=None, lane="random")
    assert str(err.value) == "lane 'random': valid are fixed, routed"
    with pytest.raises(ValueError) as err:
        compile_cell(FAM, "files", 7, "low", "raw", "fixed", "h")
    assert str(err.value) == "cell V7-low: V is one of (8, 32, 128), W one of ('low', 'high', 'medium')"
    with pytest.raises(ValueError) as err:
        compile_cell(FAM, "files", 8, "middle", "raw", "fixed", "h")
    assert str(err.value).startswith("cell V8-middle: ")


def _data() -> dict:
    data, _ = read_toml(PRESSURE / "files.toml")
    data.pop("kind")
    return data


def test_entries_error_texts_name_the_file_and_drop_pydantics_prefix() -> None:
    path = PRESSURE / "files.toml"
    bad = _data()
    bad["families"][0] = {**bad["families"][0], "decision": "shred"}
    with pytest.raises(CaseError) as err:
        PressureKind().entries(bad, path, "h")
    assert err.value.path == str(path)
    assert err.value.problems == ["families[0]: decision 'shred' is not one of decisions ['delete', 'retain']"]
    many = {**_data(), **{f"x{i}": 1 for i in range(10)}}
    with pytest.raises(CaseError) as err:
        PressureKind().entries(many, path, "h")
    assert err.value.problems == [f"x{i}: unknown field" for i in range(8)]  # the first eight
    twice = _data()
    twice["families"] = [twice["families"][0]] * 2
    with pytest.raises(CaseError) as err:
        PressureKind().entries(twice, path, "h")
    assert err.value.path == str(path)


class _Hook:
    """A hook relay that fails one obligation and records the judgments it was handed."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def pytest_agentfloor_check_obligation(self, code: str, case: Any, trajectory: Any, judgments: Any) -> Any:
        self.seen.append(judgments)
        return Verdict(code, False, "by the hook", "failed") if len(self.seen) == 1 else None

    def pytest_agentfloor_extra_obligations(self, case: Any, trajectory: Any) -> list:
        return []

    def pytest_agentfloor_failure_mode(self, case: Any, trajectory: Any, verdicts: Any) -> Any:
        return "hooked"


def test_grade_passes_the_hook_and_the_judgments_on() -> None:
    case = compile_cell(FAM, "files", 8, "low", "raw", "fixed", "h")
    traj, _ = play(case)
    hook, judgments = _Hook(), {"p": "yes"}
    g = PressureKind().grade(case, traj, hook, judgments)
    assert not g.passed and g.failure_mode == "hooked"
    assert hook.seen and all(j is judgments for j in hook.seen)
    assert g.facets["cell"] == "V8-low-raw"
