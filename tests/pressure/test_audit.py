"""The ladder-style audit of every family and cell: the oracle passes, every reference is minimal
(the certified minimum that sets the call limit), and mutations fail the intended obligation."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentfloor.pressure.compiler import apply_pressure, cells, compile_cell
from pytest_agentfloor.suite.schema import RefCall, RefTurn

from .helpers import entries, families, play

ENTRIES = entries()
FAMILIES = families()


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
@pytest.mark.parametrize("protocol", ["agentfloor", "tbb"])
def test_oracle_passes_every_cell_and_lane(entry: Any, protocol: str) -> None:
    assert len(entry.specs) == 50  # 24 factorial cells and the W medium checkpoint, two lanes
    for v, i in entry.specs:
        case = entry.resolve(v, i)
        assert (case.id, case.variant, case.instance) == (entry.id, v, i)  # each family resolves its own cells
        traj, g = play(case, protocol=protocol)
        assert g.passed, (v, i, g.first_unmet and g.first_unmet.describe())
        assert len(traj.calls) == case.call_limit - 2


def _with_reference(case: Any, turns: list[RefTurn]) -> Any:
    return case.model_copy(update={"reference": tuple(turns)})


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_reference_is_minimal(entry: Any) -> None:
    """Dropping any one call of the reference fails the cell: no shorter program exists, since
    every call satisfies a distinct required step."""
    for v, i in entry.specs[::2]:  # the lane does not change the program
        case = entry.resolve(v, i)
        assert sum(len(t.calls) for t in case.reference) == len(case.steps) == case.call_limit - 2
        for n in range(len(case.reference)):
            shorter = [t for k, t in enumerate(case.reference) if k != n]
            _, g = play(_with_reference(case, shorter), protocol="agentfloor")
            assert not g.passed, (v, n)


def _ref(case: Any) -> list[RefTurn]:
    return list(case.reference)


def _submit(case: Any) -> RefCall:
    return case.reference[-1].calls[0]


MUTATIONS = {
    # name: (cell, mutate(case) -> case, obligation that must reject it)
    "tool-cut-from-menu": ((8, "low", "raw"), lambda c: apply_pressure(
        c.model_copy(update={"pressure": None}), size=3, family=c.id), "A"),
    "invented-tool": ((32, "low", "raw"), lambda c: _with_reference(
        c, [RefTurn(calls=[RefCall(tool="erp_fetch_everything", args={})])] + _ref(c)), "S"),
    "skips-dependent-source": ((128, "high", "raw"), lambda c: _with_reference(
        c, [t for t in _ref(c) if not (t.calls[0].tool == "lookup_record"
                                       and t.calls[0].args["record_id"] == c.gold.evidence[2])]), "P"),
    "skips-linked-lookup": ((8, "low", "linked"), lambda c: _with_reference(
        c, [t for t in _ref(c) if not t.calls[0].args.get("record_id", "").startswith("L")]), "P"),
    "cites-one-of-three": ((8, "high", "compact"), lambda c: _with_reference(
        c, _ref(c)[:-1] + [RefTurn(calls=[_submit(c).model_copy(update={"args": {
            **_submit(c).args, "evidence": c.gold.evidence[:1]}})])]), "E"),
    "wrong-decision": ((32, "high", "typed"), lambda c: _with_reference(
        c, _ref(c)[:-1] + [RefTurn(calls=[_submit(c).model_copy(update={"args": {
            **_submit(c).args, "decision": next(d for d in c.fixtures.submission.decisions
                                                if d != _submit(c).args["decision"])}})])]), "X"),
    "second-submission": ((8, "low", "raw"), lambda c: _with_reference(
        c, _ref(c)[:-1] + [RefTurn(calls=[_submit(c), _submit(c)])]), "G"),
    "repeated-read": ((8, "low", "raw"), lambda c: _with_reference(
        c, _ref(c)[:2] + [_ref(c)[1]] + _ref(c)[2:]), "C"),
}


AGENTFLOOR_LENIENT = ("wrong-decision", "repeated-read")


@pytest.mark.parametrize("name", sorted(MUTATIONS))
@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_mutations_are_rejected_by_the_intended_obligation(fid: str, name: str) -> None:
    intent, fam = FAMILIES[fid]
    (v, w, d), mutate, code = MUTATIONS[name]
    case = compile_cell(fam, intent, v, w, d, "fixed", "h")
    mutant = mutate(case)
    # under agentfloor (seed 000's harness rules) a wrong submission is rejected and may be retried and
    # a single repeat is no violation: those two mutations are audited under the pressures' own tbb contract
    protocol = "tbb" if name in AGENTFLOOR_LENIENT else "agentfloor"
    _, g = play(mutant, protocol=protocol)
    assert not g.passed and g.first_unmet.code == code, g.first_unmet and g.first_unmet.describe()


def test_cells_cover_the_full_factorial() -> None:
    assert len(cells()) == 24 and len(set(cells())) == 24
