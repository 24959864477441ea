"""Validity audit of the AgentFloor ladder (cases/): the content, checked as tests.

* the oracle passes every task x prompt variant x instance, within its budgets, under every protocol;
* every reference solution is minimal, and every mutation of it is rejected by the right
  obligation (skipped step, wrong branch, extra submission, wrong evidence, unexposed tool,
  over budget) - the mutations are generated from the references, not written per task;
* the ladder's shape: 30 tasks, 5 per tier, one new demand per tier, the tool-coverage rule,
  opaque unshared record ids, distinct prompts, instance variants that change the answer;
* determinism of every tool result across runs and processes;
* docs/ladder.md is exactly what the ladder-table command writes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from pytest_agentfloor.grading import remaining_steps
from pytest_agentfloor.grading.obligations import check_answer
from pytest_agentfloor.protocol import PROTOCOLS
from pytest_agentfloor.suite import table
from pytest_agentfloor.suite.schema import TIER_TURN_BUDGET, TIERS, TOOL_NAMES

from . import audit_helpers as H

ALL = H.combos()
V0 = H.combos(all_variants=False)
INSTANCE_TASKS = ("A1", "B1", "C1", "E1")
TIER_IDS = {"A0": ["A01", "A02", "A03", "A04", "A05"], **{t: [f"{t}{n}" for n in range(1, 6)] for t in TIERS[1:]}}


def _id(combo: tuple[str, ...]) -> str:
    return "-".join(combo)


def _oracle(cid: str, variant: str = "v0", instance: str = "i0"):
    rc = H.resolved(cid, variant, instance)
    return rc, H.play(rc)


# -- the oracle -----------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
@pytest.mark.parametrize("combo", ALL, ids=_id)
def test_oracle_passes_within_budget(combo: tuple[str, str, str], protocol: str) -> None:
    rc = H.resolved(*combo)
    traj = H.play(rc, protocol=PROTOCOLS[protocol])
    g = H.judge(rc, traj)
    assert g.passed, g.message(traj)
    assert traj.protocol == protocol and len(traj.turns) <= traj.turn_budget
    assert len(traj.calls) <= rc.call_limit
    assert traj.termination in ("final_answer", "submitted")
    assert remaining_steps(rc, traj) == 0


# -- minimality and skipped steps -------------------------------------------------------------
def _call_mutations() -> list[tuple[str, str, int, int]]:
    out = []
    for cid, _, inst in V0:
        ref = H.to_ref(H.resolved(cid, "v0", inst))
        out += [(cid, inst, ti, ci) for ti, ci in H.call_positions(ref)]
    return out


@pytest.mark.parametrize("cid,inst,ti,ci", _call_mutations(), ids=lambda x: str(x))
def test_reference_is_minimal(cid: str, inst: str, ti: int, ci: int) -> None:
    """Dropping any single call of a reference fails the task, at S or P: every call is required."""
    rc = H.resolved(cid, "v0", inst)
    ref = H.to_ref(rc)
    dropped = ref[ti]["calls"][ci]
    traj = H.play(rc, H.drop_calls(ref, {(ti, ci)}))
    g = H.judge(rc, traj)
    assert not g.passed, f"{cid}/{inst}: the reference still passes without {dropped}"
    assert H.first_code(g) in ("S", "P"), g.message(traj)


def _step_mutations() -> list[tuple[str, str, str]]:
    return [(cid, inst, s.id) for cid, _, inst in V0 for s in H.resolved(cid, "v0", inst).steps]


@pytest.mark.parametrize("cid,inst,step_id", _step_mutations(), ids=lambda x: str(x))
def test_skipped_required_step_fails_selection_or_workflow(cid: str, inst: str, step_id: str) -> None:
    """Every call that could satisfy one required step removed: S if a required tool is then never
    called at all, otherwise P."""
    rc = H.resolved(cid, "v0", inst)
    ref = H.to_ref(rc)
    step = next(s for s in rc.steps if s.id == step_id)
    positions = H.calls_for_step(ref, step)
    assert positions, f"{cid}/{inst}: no reference call satisfies step {step_id!r}"
    mutated = H.drop_calls(ref, positions)
    called = {c["tool"] for t in mutated for c in t.get("calls", [])}
    expected = "S" if any(not set(s.tools) & called for s in rc.steps) else "P"
    traj = H.play(rc, mutated)
    g = H.judge(rc, traj)
    assert H.first_code(g) == expected, g.message(traj)


# -- wrong branch (tier C) ----------------------------------------------------------------------
def _branch_pairs() -> list[tuple[str, str, str]]:
    out = []
    for cid, (case, _) in H.cases().items():
        if case.tier != "C":
            continue
        insts = H.instances(case)
        for mine in insts:
            for other in insts:
                if mine != other and H.resolved(cid, "v0", mine).gold != H.resolved(cid, "v0", other).gold:
                    out.append((cid, mine, other))
    return out


def test_every_branch_task_has_a_flipping_instance() -> None:
    flips = {cid for cid, mine, _ in _branch_pairs() if mine == "i0"}
    assert flips == set(TIER_IDS["C"])


@pytest.mark.parametrize("cid,mine,other", _branch_pairs(), ids=lambda x: str(x))
def test_wrong_branch_is_rejected(cid: str, mine: str, other: str) -> None:
    """Another instance's reference (the other branch), replayed on this instance, fails at P, Q or X;
    at S exactly when the other branch never calls a tool this branch requires (C5: no comparison)."""
    rc = H.resolved(cid, "v0", mine)
    ref = H.to_ref(H.resolved(cid, "v0", other))
    called = {c["tool"] for t in ref for c in t.get("calls", [])}
    allowed = ("S",) if any(not set(s.tools) & called for s in rc.steps) else ("P", "Q", "X")
    traj = H.play(rc, ref)
    g = H.judge(rc, traj)
    assert not g.passed and H.first_code(g) in allowed, g.message(traj)


# -- governance: one change of state at most ---------------------------------------------------------
def _submitting() -> list[tuple[str, str]]:
    return [(cid, inst) for cid, _, inst in V0 if "submit_decision" in H.resolved(cid, "v0", inst).tools]


@pytest.mark.parametrize("kind", ["duplicate", "extra"])
@pytest.mark.parametrize("cid,inst", _submitting(), ids=lambda x: str(x))
def test_second_submission_fails_governance(cid: str, inst: str, kind: str) -> None:
    rc = H.resolved(cid, "v0", inst)
    ref = H.to_ref(rc)
    subs = H.submit_positions(ref)
    if subs:
        ti, ci = subs[-1]
        second = json.loads(json.dumps(ref[ti]["calls"][ci]))
        if kind == "extra":
            other = next(r.id for r in rc.fixtures.records if r.id != second["args"].get("record_id"))
            second["args"] = {**second["args"], "record_id": other}
    else:  # an answer-only case that exposes submit_decision: any submission is one too many
        ti = max(t for t, _ in H.call_positions(ref))
        rules = rc.fixtures.submission
        second = {"tool": "submit_decision",
                  "args": {"decision": rules.decisions[0] if rules.decisions else "done",
                           "record_id": rc.fixtures.records[0].id}}
    ref[ti]["calls"].append(second)
    traj = H.play(rc, ref)
    g = H.judge(rc, traj)
    assert H.first_code(g) == "G", g.message(traj)


# -- evidence ---------------------------------------------------------------------------------------
def _with_evidence() -> list[tuple[str, str]]:
    return [(cid, inst) for cid, _, inst in V0 if H.resolved(cid, "v0", inst).gold.evidence is not None]


def test_evidence_is_graded_somewhere_in_every_upper_tier() -> None:
    tiers = {H.resolved(cid, "v0", inst).tier for cid, inst in _with_evidence()}
    assert {"D", "E"} <= tiers


@pytest.mark.parametrize("kind", ["missing", "wrong", "extra"])
@pytest.mark.parametrize("cid,inst", _with_evidence(), ids=lambda x: str(x))
def test_bad_evidence_fails_evidence(cid: str, inst: str, kind: str) -> None:
    rc = H.resolved(cid, "v0", inst)
    gold = list(rc.gold.evidence or [])
    stranger = next(r.id for r in rc.fixtures.records if r.id not in gold)
    ref = H.to_ref(rc)
    if rc.needs_submission:
        ti, ci = H.submit_positions(ref)[-1]
        args = ref[ti]["calls"][ci]["args"]
        args["evidence"] = {"missing": gold[1:], "wrong": [stranger, *gold[1:]], "extra": [*gold, stranger]}[kind]
        answer_ok = True
    else:
        text = ref[-1]["final"]
        if kind in ("missing", "wrong"):
            text = text.replace(gold[0], stranger if kind == "wrong" else "")
        else:
            text += f" See also {stranger}."
        ref[-1]["final"] = text
        answer_ok = all(check_answer(c, text)[0] for c in rc.gold.answer)
    traj = H.play(rc, ref)
    g = H.judge(rc, traj)
    assert H.first_code(g) == "E" if answer_ok else H.first_code(g) in ("Q", "E"), g.message(traj)


# -- selection: a tool that is not on the menu --------------------------------------------------------
@pytest.mark.parametrize("combo", V0, ids=_id)
def test_unexposed_tool_fails_selection_as_f1(combo: tuple[str, str, str]) -> None:
    rc = H.resolved(*combo)
    traj = H.play(rc, H.with_unexposed_call(rc))
    g = H.judge(rc, traj)
    assert H.first_code(g) == "S" and g.failure_mode == "F1", g.message(traj)


# -- budgets -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["agentfloor", "legacy"])  # the protocols with tier step budgets
@pytest.mark.parametrize("combo", V0, ids=_id)
def test_more_turns_than_the_budget_fails_budget(combo: tuple[str, str, str], protocol: str) -> None:
    rc = H.resolved(*combo)
    if rc.tools:
        traj = H.play(rc, H.over_turn_budget(rc), lax=True, protocol=PROTOCOLS[protocol])
    else:
        traj = H.text_turns_over_budget(H.play(rc, protocol=PROTOCOLS[protocol]))
    assert len(traj.turns) == rc.turn_budget + 1
    g = H.judge(rc, traj)
    assert H.first_code(g) == "B", g.message(traj)


@pytest.mark.parametrize("protocol", ["tbb", "legacy"])  # the protocols with a call limit
@pytest.mark.parametrize("combo", [c for c in V0 if H.resolved(*c).tools], ids=_id)
def test_more_calls_than_the_limit_fails_budget(combo: tuple[str, str, str], protocol: str) -> None:
    rc = H.resolved(*combo)
    traj = H.play(rc, H.over_call_limit(rc), lax=True, protocol=PROTOCOLS[protocol])
    assert len(traj.calls) == rc.call_limit + 1 and len(traj.turns) <= traj.turn_budget
    g = H.judge(rc, traj)
    assert H.first_code(g) == "B", g.message(traj)


@pytest.mark.parametrize("combo", [c for c in V0 if H.resolved(*c).tools], ids=_id)
def test_agentfloor_has_no_call_limit_for_budget_to_check(combo: tuple[str, str, str]) -> None:
    """Obligation B checks only what the protocol enforces: agentfloor has no call limit."""
    rc = H.resolved(*combo)
    traj = H.play(rc, H.over_call_limit(rc), lax=True, protocol=PROTOCOLS["agentfloor"])
    assert len(traj.calls) == rc.call_limit + 1 and traj.call_limit is None
    g = H.judge(rc, traj)
    assert next(v for v in g.verdicts if v.code == "B").ok, g.message(traj)


# -- legitimate alternatives pass -------------------------------------------------------------------
@pytest.mark.parametrize("combo", [c for c in V0 if H.whole_record_reads(H.resolved(*c))], ids=_id)
def test_reading_whole_records_instead_of_fields_passes(combo: tuple[str, str, str]) -> None:
    """get_attribute and lookup_record are interchangeable wherever a step reads a record."""
    rc = H.resolved(*combo)
    traj = H.play(rc, H.whole_record_reads(rc))
    g = H.judge(rc, traj)
    assert g.passed, g.message(traj)


@pytest.mark.parametrize("combo", [c for c in V0 if H.resolved(*c).tier == "E"], ids=_id)
def test_checking_every_candidate_against_every_constraint_fits(combo: tuple[str, str, str]) -> None:
    """The E call limits leave room for the careful plan (every candidate x every constraint)."""
    rc = H.resolved(*combo)
    traj = H.play(rc, H.careful_checks(rc))
    g = H.judge(rc, traj)
    assert g.passed, g.message(traj)
    assert len(traj.calls) > sum(len(t.calls) for t in rc.reference)


# -- the ladder's shape ---------------------------------------------------------------------------------
def test_thirty_tasks_five_per_tier_with_the_tier_budgets() -> None:
    by_tier = defaultdict(list)
    for cid, (case, _) in H.cases().items():
        by_tier[case.tier].append(cid)
        # per-task budgets are allowed where the reference needs them (the authors' E budgets are 9-12)
        assert case.budget is None or case.tier in ("D", "E"), cid
        if case.tier == "E":  # the authors' per-task E budgets: 10/9/10/12/12
            assert 9 <= case.turn_budget <= 12, cid
        else:
            assert case.turn_budget >= TIER_TURN_BUDGET[case.tier], cid
    assert {t: sorted(ids) for t, ids in by_tier.items()} == TIER_IDS


def test_tier_demands() -> None:
    """What each tier adds, as far as the case data shows it."""
    for cid, (case, _) in H.cases().items():
        for inst in H.instances(case):
            rc = H.resolved(cid, "v0", inst)
            calls = [c for t in rc.reference for c in t.calls]
            call_turns = [t for t in rc.reference if t.calls]
            where = f"{cid}/{inst}"
            if case.tier == "A0":
                assert not case.tools and not calls and not rc.steps, where
            elif case.tier == "A":
                assert len(calls) == 1 and len(rc.steps) == 1, where
            elif case.tier == "B":  # a chain: the second step depends on the first
                assert len(call_turns) == 2 and any(s.after for s in rc.steps), where
            elif case.tier == "D" and rc.fixtures.failures:  # 2 of 5, as the published tier
                traj = H.play(rc)
                assert any(not c.ok for c in traj.calls), f"{where}: the reference never meets its failure"
            elif case.tier == "E":
                # the published E: about 5.4 calls a task, E1 about 8 (tests/test_ladder_calibration.py
                # holds the tier mean to its band)
                assert 5 <= len(calls) <= 8, f"{where}: {len(calls)} reference calls"
                assert len(rc.fixtures.constraints) >= 2 and any(c.tool == "check_constraint" for c in calls), where
                if "partial_constraint_check" in case.forbidden:  # declared: the submitted record passed every check
                    traj = H.play(rc)
                    assert H.judge(rc, traj).passed, where
                # a careful model checks every candidate against every constraint: the call limit must
                # leave room for that, and little more
                checks = {(c.args["record_id"], c.args["constraint"]) for c in calls if c.tool == "check_constraint"}
                candidates = {r for r, _ in checks}
                careful = len(calls) - len(checks) + len(candidates) * len(rc.fixtures.constraints)
                assert case.call_limit is not None and careful <= case.call_limit <= careful + 2, \
                    f"{where}: call limit {case.call_limit}, a careful model needs {careful}"


def test_every_tool_is_required_by_at_least_two_tasks() -> None:
    users: dict[str, set[str]] = {t: set() for t in TOOL_NAMES}
    for cid, (case, _) in H.cases().items():
        for inst in H.instances(case):
            for s in H.resolved(cid, "v0", inst).steps:
                users[s.tool].add(cid)
    thin = {t: sorted(u) for t, u in users.items() if len(u) < 2}
    assert not thin, f"tools required by fewer than two tasks: {thin}"


def test_record_ids_are_opaque_and_never_shared() -> None:
    owner: dict[str, str] = {}
    for cid, (case, _) in H.cases().items():
        for rec in case.fixtures.records:
            assert rec.id not in owner, f"{rec.id} is in both {owner.get(rec.id)} and {cid}"
            owner[rec.id] = cid
            assert rec.id == rec.id.upper() and "-" in rec.id and any(ch.isdigit() for ch in rec.id), rec.id


def test_prompt_variants_are_distinct_and_complete() -> None:
    for cid, (case, _) in H.cases().items():
        assert sorted(case.prompts) == ["v0", "v1", "v2", "v3", "v4"], cid
        for inst in H.instances(case):
            texts = [H.resolved(cid, v, inst).prompt for v in sorted(case.prompts)]
            assert len(set(texts)) == len(texts), f"{cid}/{inst}: two prompt variants are the same"
            assert all("$" not in t for t in texts), f"{cid}/{inst}: an unfilled $placeholder"


def test_instance_variants_change_the_answer() -> None:
    for cid, (case, _) in H.cases().items():
        if cid in INSTANCE_TASKS:
            assert sorted(case.instances) == ["i1", "i2", "i3", "i4", "i5"], cid
        base = H.resolved(cid)
        for name, inst in case.instances.items():
            assert inst.patch_records or inst.options is not None or inst.constraints is not None or inst.vars, \
                f"{cid}/{name} changes no fixture value"
            assert inst.gold is not None and inst.steps is not None and inst.reference is not None, \
                f"{cid}/{name} needs its own gold, steps and reference"
            assert H.resolved(cid, "v0", name).gold != base.gold, f"{cid}/{name} has the base case's gold"
            if cid == "C1":  # the branch itself flips, not just the record it is about
                assert inst.gold.submission["decision"] != base.gold.submission["decision"], f"{cid}/{name}"


# -- determinism ----------------------------------------------------------------------------------------
def test_tool_results_are_deterministic_across_runs_and_processes() -> None:
    first = H.oracle_digests()
    assert H.oracle_digests() == first
    code = "import json; from tests import audit_helpers as H; print(json.dumps(H.oracle_digests()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=H.REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(H.REPO)})
    other = json.loads(out.stdout)
    assert other == first, sorted(k for k in first if other.get(k) != first[k])[:10]


# -- the generated table --------------------------------------------------------------------------------
def test_ladder_doc_is_current(tmp_path) -> None:
    out = tmp_path / "ladder.md"
    assert table.main(["--cases", str(H.CASES), "--out", str(out)]) == 0
    committed = H.REPO / "docs" / "ladder.md"
    assert committed.read_text("utf-8") == out.read_text("utf-8"), \
        "docs/ladder.md is stale: run `python -m pytest_agentfloor ladder-table`"


def test_reference_length_distribution_is_reported_per_tier() -> None:
    rows = table.summarise(table.load_rows(H.CASES))
    assert [r["tier"] for r in rows] == list(TIERS)
    for r in rows:
        lengths = [n for cid, (case, _) in H.cases().items() if case.tier == r["tier"]
                   for n in [sum(len(t.calls) for t in H.resolved(cid, "v0", i).reference) for i in H.instances(case)]]
        assert (r["calls_min"], r["calls_median"], r["calls_max"]) == (
            min(lengths), statistics.median(lengths), max(lengths))
    assert Counter(r["tier"] for r in rows) == Counter(TIERS)
