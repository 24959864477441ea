"""The compiler: determinism across processes and the matched-variant invariants, per family and cell."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pytest_agentfloor.pressure.compiler import OPERATIONAL, apply_pressure, cells, compile_cell
from pytest_agentfloor.pressure.encoding import ENCODINGS, decode, deliver
from pytest_agentfloor.pressure.family import INTENTS
from pytest_agentfloor.pressure.menu import MENU_SIZES, draw
from pytest_agentfloor.suite.loader import load_case, resolve

from .helpers import ROOT, families, oracle, play

FAMILIES = families()

_DUMP = """
import hashlib, json, sys
sys.path.insert(0, {root!r})
from tests.pressure.helpers import entries
h = hashlib.sha256()
for e in entries():
    for v, i in e.specs:
        h.update(e.resolve(v, i).model_dump_json().encode())
print(h.hexdigest())
"""


def test_at_least_twelve_families_over_the_four_intents() -> None:
    intents = [intent for intent, _ in FAMILIES.values()]
    assert len(FAMILIES) >= 12
    assert set(intents) == set(INTENTS)
    assert min(intents.count(i) for i in INTENTS) >= 3


def test_compiler_is_deterministic_across_processes() -> None:
    digests = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _DUMP.format(root=str(ROOT))], env=env, capture_output=True,
                             text=True, check=True, cwd=ROOT)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_matched_variants_share_decision_facts_evidence_rule_and_final_state(fid: str) -> None:
    intent, fam = FAMILIES[fid]
    compiled = {(v, w, d, lane): compile_cell(fam, intent, v, w, d, lane, "h")
                for v, w, d in cells() for lane in ("fixed", "routed")}
    assert len(compiled) == 48
    finals = {json.dumps(c.gold.submission, sort_keys=True) for c in compiled.values()}
    assert len(finals) == 1  # the permitted final state (and with it the decision)
    assert json.loads(finals.pop())["decision"] == fam.decision
    for w in ("low", "high"):
        group = [c for k, c in compiled.items() if k[1] == w]
        assert len({tuple(c.gold.evidence) for c in group}) == 1  # the evidence rule of the W level
        assert len({c.prompt for c in group}) == 1  # V and D never touch the request
    assert len(compiled[(8, "low", "raw", "fixed")].gold.evidence) == 1
    assert len(compiled[(8, "high", "raw", "fixed")].gold.evidence) == 3
    medium = compile_cell(fam, intent, 8, "medium", "raw", "fixed", "h")  # the W checkpoint: one dependent read
    assert medium.gold.evidence == compiled[(8, "high", "raw", "fixed")].gold.evidence[:2]
    assert medium.gold.submission == compiled[(8, "low", "raw", "fixed")].gold.submission
    assert medium.call_limit == 4 + 2 and fam.cite_medium in medium.prompt
    # the facts: every encoding holds the subject's stored values (linked ones one lookup away)
    for c in compiled.values():
        recs = {r.id: r for r in c.fixtures.records}
        subject = recs[fam.subject.id]
        facts = {k: (recs[v["$ref"]].fields if isinstance(v, dict) and "$ref" in v else v)
                 for k, v in subject.fields.items()}
        assert facts == fam.subject.fields


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_menus_have_the_assigned_size_hold_every_operational_tool_and_nest(fid: str) -> None:
    intent, fam = FAMILIES[fid]
    menus = {}
    for v in MENU_SIZES:
        c = compile_cell(fam, intent, v, "low", "raw", "fixed", "h")
        assert len(c.pressure.menu) == v == len(set(c.pressure.menu))
        assert set(OPERATIONAL) <= set(c.pressure.menu)
        assert c.pressure.offered == OPERATIONAL
        menus[v] = set(c.pressure.menu)
    assert menus[8] <= menus[32] <= menus[128]
    # the operational tools are not always in front
    positions = {compile_cell(fam, intent, 128, "low", "raw", "fixed", "h").pressure.menu.index(t) for t in OPERATIONAL}
    assert max(positions) > 3


def test_distractor_draws_differ_between_families() -> None:
    a, b = sorted(FAMILIES)[:2]
    assert draw(a, OPERATIONAL, 32)[0] != draw(b, OPERATIONAL, 32)[0]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_encoding_decodes_to_the_raw_result_at_every_step_of_the_reference(encoding: str) -> None:
    for fid, (intent, fam) in FAMILIES.items():
        case = compile_cell(fam, intent, 8, "high", encoding, "fixed", "h")
        traj, _ = play(case)
        for call in traj.calls:
            assert decode(deliver(call.result, encoding), encoding) == json.loads(json.dumps(call.result)), fid


def test_compact_and_typed_change_the_text_not_the_content() -> None:
    result = {"status": "ok", "data": {"id": "Q7XK-2M9P", "terms": {"amount_due": 1240.5, "days_past_due": 41}}}
    compact, typed = deliver(result, "compact"), deliver(result, "typed")
    assert " " not in compact and "amount_due" in compact  # short keys in objects, the names in the dictionary
    assert json.loads(compact)["data"] == {"a": "Q7XK-2M9P", "b": {"c": 1240.5, "d": 41}}
    assert json.loads(typed)["data"]["fields"]["terms"]["fields"]["days_past_due"] == {"type": "integer", "value": 41}
    assert deliver(result, "raw") == deliver(result, "linked") == json.dumps(result, sort_keys=True)


def test_linked_encoding_costs_one_more_dependent_call_per_nested_object() -> None:
    intent, fam = FAMILIES["overdue-invoice"]
    raw = compile_cell(fam, intent, 8, "low", "raw", "fixed", "h")
    linked = compile_cell(fam, intent, 8, "low", "linked", "fixed", "h")
    assert linked.call_limit == raw.call_limit + 1
    follow = [s for s in linked.steps if s.id.startswith("read.link")]
    assert len(follow) == 1 and follow[0].after == ["read"]
    decide = next(s for s in linked.steps if s.id == "decide")
    assert follow[0].id in decide.after


def test_ladder_cases_take_the_same_menu_and_encoding_compilers() -> None:
    case = resolve(load_case(ROOT / "cases" / "tier_C" / "C1.toml")[0], "v0", "i0", "h")
    pressured = apply_pressure(case, size=32, encoding="compact")
    assert len(pressured.pressure.menu) == 32 and set(case.tools) <= set(pressured.pressure.menu)
    traj, g = play(pressured, protocol="agentfloor")
    assert g.passed and traj.turns[0].menu_size == 32 and len(traj.distractors) == 32 - len(case.tools)
    assert '"keys":' in traj.messages[3]["content"]
    # a menu too small for the case's tools fails availability, the obligation that could never fail before
    small = apply_pressure(case, size=1)
    traj, g = play(small, oracle(), protocol="agentfloor")
    assert not g.passed and g.first_unmet.code == "A"
    with pytest.raises(ValueError, match="encoding"):
        apply_pressure(case, size=8, encoding="yaml")
