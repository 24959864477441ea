"""Audit of the workflow frontier (seed 002): matched chains of 2, 6, 14 and 30 calls.

Every cell of a family shares the closing record, the decision, the evidence and each record's
handoff; only the start differs. The oracle passes the 2-, 6- and 14-call cells under tbb and
every cell without an episode budget; at 30 calls the model-run loop meets the 128,000-token
budget before the call limit, which is the frontier's point (the controller's test above).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.pressure.frontier import FRONTIER_CALLS, FrontierFile, chain_id, frontier_case
from pytest_agentfloor.pressure.kind import PressureKind
from pytest_agentfloor.protocol import TBB_EPISODE_TOKENS
from pytest_agentfloor.suite.loader import CaseError, read_toml

from .helpers import FRONTIER, entries, frontier_families, play

ENTRIES = entries(frontier=True)
FAMILIES = frontier_families()


def test_four_families_one_per_intent_each_with_four_cells() -> None:
    assert sorted(f.intent for f in FAMILIES.values()) == ["accounting", "calendar", "email", "files"]
    for e in ENTRIES:
        assert e.specs == tuple((f"calls{k}", "fixed") for k in FRONTIER_CALLS)
        assert e.markers[:2] == ("pressure", "frontier") and e.spec_markers("calls14", "fixed") == ("calls14",)


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_matched_cells_share_the_outcome_and_the_handoffs(fid: str) -> None:
    fam = FAMILIES[fid]
    cases = {k: frontier_case(fam, k, "h") for k in FRONTIER_CALLS}
    assert len({json.dumps(c.gold.model_dump(), sort_keys=True) for c in cases.values()}) == 1
    assert cases[2].gold.evidence == [fam.final.id] and cases[2].gold.submission["decision"] == fam.decision
    handoffs: dict[str, Any] = {}
    for k, c in cases.items():
        assert sum(len(t.calls) for t in c.reference) == len(c.steps) == k == c.call_limit - 2
        assert c.turn_budget == k + 4 and c.pressure.calls == k and c.variant == f"calls{k}"
        chain = [rid for rid, _ in c.pressure.handoffs]
        assert chain[-1] == fam.final.id and len(chain) == k - 1 and chain[0] in c.prompt
        assert chain[:-1] == [chain_id(fid, d) for d in range(k - 2, 0, -1)]
        for rid, nxt in c.pressure.handoffs:
            assert handoffs.setdefault(rid, nxt) == nxt  # a record hands off to the same record in every cell
        final = next(r for r in c.fixtures.records if r.id == fam.final.id)
        assert {k2: final.fields[k2] for k2 in fam.final.fields} == dict(fam.final.fields)  # the deciding facts
        others = {r.id for r in c.fixtures.records} - set(chain)
        assert others == {r.id for r in fam.others}
        assert c.prompt.replace(chain[0], "$start").split(" Use the connector")[0] == fam.request


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_the_oracle_passes_every_cell_within_the_budget_and_the_30_call_cell_meets_it(entry: Any) -> None:
    tokens = {}
    for v, lane in entry.specs:
        case = entry.resolve(v, lane)
        traj, g = play(case, protocol="agentfloor")  # no episode budget: the reference program is complete
        assert g.passed and len(traj.calls) == case.call_limit - 2
        traj, g = play(case, protocol="tbb")
        tokens[case.pressure.calls] = traj.tokens_in + traj.tokens_out
        if case.pressure.calls < 30:
            assert g.passed, (v, g.first_unmet and g.first_unmet.describe())
        else:  # the budget fires with calls to spare, as in seed 002's Figure 9
            assert (g.passed, traj.termination, g.terminal_flag) == (False, "token_budget", "budget")
            assert 15 <= len(traj.calls) < case.call_limit
    assert tokens[14] < TBB_EPISODE_TOKENS / 2 < TBB_EPISODE_TOKENS < tokens[30]
    assert tokens[2] < tokens[6] < tokens[14]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_frontier_reference_is_minimal(entry: Any) -> None:
    case = entry.resolve("calls6", "fixed")
    for n in range(len(case.reference)):
        shorter = case.model_copy(update={"reference": tuple(t for i, t in enumerate(case.reference) if i != n)})
        _, g = play(shorter, protocol="agentfloor")
        assert not g.passed, n


def test_frontier_files_fail_short_naming_the_field(tmp_path: Path) -> None:
    data, _ = read_toml(FRONTIER)
    data.pop("kind")
    fam = dict(data["frontier"][0])
    bad = {"frontier": [{**fam, "request": "no placeholder", "decision": "maybe", "step_name": "entry"}]}
    with pytest.raises(CaseError) as err:
        PressureKind().entries(bad, tmp_path / "f.toml", "h")
    text = err.value.render()
    assert "decision 'maybe' is not one of decisions" in text and "'$start' placeholder" in text and "'{n}'" in text
    with pytest.raises(CaseError) as err:
        PressureKind().entries({"frontier": [fam, fam]}, tmp_path / "f.toml", "h")
    assert "frontier: id 'close-trail' appears twice" in err.value.render()
    with pytest.raises(ValueError, match="frontier cell of 7 calls: valid are 2, 6, 14, 30"):
        frontier_case(FrontierFile.model_validate(data).frontier[0], 7, "h")
