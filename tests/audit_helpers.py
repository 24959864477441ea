"""Helpers for the ladder validity audit: load every case, replay references, build mutations.

Everything here goes through the package's public pieces (loader, episode, scripted oracle,
grader), so the audit checks the cases exactly as a benchmark run would see them. A mutation is a
changed reference solution replayed by the oracle through the real episode loop (so scripted
failures, the call limit and the sandbox behave as in a run); only the runs that the episode can
never produce (more turns than the budget) are built by editing a trajectory dump.
"""

from __future__ import annotations

import copy
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from pytest_agentfloor.config import builtin_models
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.protocol import PROTOCOLS, Protocol
from pytest_agentfloor.grading import Grade, grade, remaining_steps
from pytest_agentfloor.matching import subset
from pytest_agentfloor.providers.scripted import ScriptedProvider
from pytest_agentfloor.sandbox import Sandbox
from pytest_agentfloor.suite.loader import iter_case_files, load_case, resolve
from pytest_agentfloor.suite.schema import TOOL_NAMES, Case, RefCall, RefTurn, ResolvedCase
from pytest_agentfloor.trajectory import Trajectory

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "cases"
INVENTED_TOOL = "fetch_all_records"

Ref = list[dict[str, Any]]  # a reference as plain data: [{"calls": [{"tool", "args"}], "final": ...}]


# -- loading --------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def cases() -> dict[str, tuple[Case, str]]:
    """Every case of the ladder, by id, with its content hash."""
    out: dict[str, tuple[Case, str]] = {}
    for path in iter_case_files(CASES):
        case, digest = load_case(path)
        out[case.id] = (case, digest)
    return out


def instances(case: Case) -> list[str]:
    return ["i0", *sorted(case.instances)]


def combos(*, all_variants: bool = True) -> list[tuple[str, str, str]]:
    """(case id, variant, instance) for the whole ladder; v0 only when all_variants is False."""
    out = []
    for cid, (case, _) in cases().items():
        variants = sorted(case.prompts) if all_variants else ["v0"]
        out += [(cid, v, i) for v in variants for i in instances(case)]
    return out


@lru_cache(maxsize=None)
def resolved(cid: str, variant: str = "v0", instance: str = "i0") -> ResolvedCase:
    case, digest = cases()[cid]
    return resolve(case, variant, instance, digest)


# -- running --------------------------------------------------------------------------------
_ORACLE = ScriptedProvider(builtin_models()["oracle"])


def to_ref(rc: ResolvedCase) -> Ref:
    return [t.model_dump() for t in rc.reference]


def _ref_turns(ref: Ref) -> tuple[RefTurn, ...]:
    return tuple(RefTurn(calls=[RefCall(**c) for c in t.get("calls", [])], final=t.get("final")) for t in ref)


def play(rc: ResolvedCase, ref: Ref | None = None, *, lax: bool = False,
         protocol: Protocol = PROTOCOLS["agentfloor"]) -> Trajectory:
    """Replay `ref` (default: the case's own reference) with the oracle through the real episode.

    `lax` lifts the turn budget and call limit for the run only (so an over-budget policy can
    finish); the trajectory then carries the limits `protocol` sets for the case, for grading.
    """
    runner = rc if ref is None else rc.model_copy(update={"reference": _ref_turns(ref)})
    if lax:
        runner = runner.model_copy(update={"turn_budget": 99, "call_limit": 99})
    traj = run_episode(runner, _ORACLE, model="oracle", protocol=protocol,
                       remaining_steps=None if lax else remaining_steps)
    if lax:
        limits = protocol.limits(rc)
        traj.turn_budget, traj.call_limit, traj.token_budget = limits.turns, limits.calls, limits.tokens
    return traj


def judge(rc: ResolvedCase, traj: Trajectory) -> Grade:
    return grade(rc, traj, hook=None)


def first_code(g: Grade) -> str | None:
    return g.first_unmet.code if g.first_unmet else None


def stable_json(traj: Trajectory) -> str:
    """The trajectory without its wall-clock fields, as canonical JSON."""
    data = traj.model_dump(mode="json")
    data["wall_s"] = 0.0
    for t in data["turns"]:
        t["latency_s"] = 0.0
    return json.dumps(data, sort_keys=True)


def oracle_digests() -> dict[str, str]:
    """sha256 of every oracle trajectory of the ladder, by 'case-variant-instance'."""
    return {f"{c}-{v}-{i}": hashlib.sha256(stable_json(play(resolved(c, v, i))).encode()).hexdigest()
            for c, v, i in combos()}


# -- reference surgery ------------------------------------------------------------------------
def call_positions(ref: Ref) -> list[tuple[int, int]]:
    return [(ti, ci) for ti, t in enumerate(ref) for ci, _ in enumerate(t.get("calls", []))]


def _tidy(ref: Ref) -> Ref:
    """Drop turns left with neither calls nor text (the oracle would answer them with '')."""
    return [t for t in ref if t.get("calls") or t.get("final") is not None]


def drop_calls(ref: Ref, positions: set[tuple[int, int]]) -> Ref:
    out = copy.deepcopy(ref)
    for ti, t in enumerate(out):
        t["calls"] = [c for ci, c in enumerate(t.get("calls", [])) if (ti, ci) not in positions]
    return _tidy(out)


def calls_for_step(ref: Ref, step: Any) -> set[tuple[int, int]]:
    """Every reference call that could satisfy a step (its tool or an alt, with the step's args)."""
    return {(ti, ci) for ti, ci in call_positions(ref)
            if ref[ti]["calls"][ci]["tool"] in step.tools and subset(step.args, ref[ti]["calls"][ci]["args"])}


def submit_positions(ref: Ref) -> list[tuple[int, int]]:
    return [(ti, ci) for ti, ci in call_positions(ref) if ref[ti]["calls"][ci]["tool"] == "submit_decision"]


def unexposed_tool(rc: ResolvedCase) -> str:
    return next((t for t in TOOL_NAMES if t not in rc.tools), INVENTED_TOOL)


def with_unexposed_call(rc: ResolvedCase) -> Ref:
    """The reference with a call to a tool the case does not offer, made in its first call turn."""
    ref = to_ref(rc)
    call = {"tool": unexposed_tool(rc), "args": {"query": "everything"}}
    first = next((ti for ti, t in enumerate(ref) if t.get("calls")), None)
    if first is None:
        return [{"calls": [call], "final": None}, *ref]
    ref[first]["calls"].insert(0, call)
    return ref


def _fallback_calls(rc: ResolvedCase) -> Iterator[tuple[str, dict[str, Any]]]:
    for n in range(1, 200):
        for tool in rc.tools:
            if tool == "compute_value":
                yield tool, {"operation": "sum", "operands": [n, 1000]}
            elif tool == "search_records":
                yield tool, {"query": f"nothing matches this {n}"}
            elif tool == "list_options":
                yield tool, {"category": f"no_such_category_{n}"}
            elif tool == "lookup_record":
                yield tool, {"record_id": f"ZZZ-{n:05d}"}
            elif tool == "get_attribute":
                yield tool, {"record_id": f"ZZZ-{n:05d}", "attribute": "x"}
            elif tool == "check_constraint":
                yield tool, {"record_id": f"ZZZ-{n:05d}", "constraint": "x"}
            elif tool == "compare_records":
                yield tool, {"record_ids": [f"ZZZ-{n:05d}", "ZZZ-00000"], "attribute": "x"}


def filler_calls(rc: ResolvedCase, n: int) -> list[dict[str, Any]]:
    """`n` distinct, valid calls to exposed tools that change nothing a grader reads.

    Never a submission, never a call a scripted failure would match (that would move the failure
    the reference recovers from), never a call the reference itself makes. Successful reads first,
    then calls that find nothing.
    """
    fx = rc.fixtures
    own = {json.dumps([c.tool, c.args], sort_keys=True) for t in rc.reference for c in t.calls}
    probe = Sandbox(fx, rc.tools)
    candidates: list[tuple[str, dict[str, Any]]] = []
    for rec in fx.records:
        candidates.append(("lookup_record", {"record_id": rec.id}))
        candidates += [("get_attribute", {"record_id": rec.id, "attribute": f}) for f in rec.fields]
        candidates.append(("search_records", {"query": rec.name or rec.id}))
        candidates += [("check_constraint", {"record_id": rec.id, "constraint": c.name}) for c in fx.constraints]
    candidates += [("list_options", {"category": cat}) for cat in fx.options]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for tool, args in [*candidates, *_fallback_calls(rc)]:
        if len(out) == n:
            break
        key = json.dumps([tool, args], sort_keys=True)
        if tool not in rc.tools or tool == "submit_decision" or key in own or key in seen:
            continue
        if any(f.tool == tool and subset(f.match, args) for f in fx.failures):
            continue
        if (tool, args) in candidates and probe.call(tool, args).get("status") != "ok":
            continue
        seen.add(key)
        out.append({"tool": tool, "args": args})
    assert len(out) == n, f"{rc.id}: only {len(out)} filler calls available, {n} needed"
    return out


def over_turn_budget(rc: ResolvedCase) -> Ref:
    """The reference stretched to one turn more than the budget, by filler turns before its last turn."""
    ref = to_ref(rc)
    extra = rc.turn_budget + 1 - len(ref)
    fillers = [{"calls": [c], "final": None} for c in filler_calls(rc, extra)]
    return [*ref[:-1], *fillers, ref[-1]]


def over_call_limit(rc: ResolvedCase) -> Ref:
    """The reference with filler calls added to its first call turn, one call past the limit."""
    ref = to_ref(rc)
    extra = rc.call_limit + 1 - sum(len(t["calls"]) for t in ref)
    first = next(ti for ti, t in enumerate(ref) if t.get("calls"))
    ref[first]["calls"] = filler_calls(rc, extra) + ref[first]["calls"]
    return ref


def text_turns_over_budget(traj: Trajectory) -> Trajectory:
    """For no-tool cases: the oracle trajectory with a draft text turn before its answer."""
    data = copy.deepcopy(traj.model_dump())
    draft = copy.deepcopy(data["turns"][0])
    draft["content"] = "Draft: let me think about this first."
    data["turns"] = [draft, *data["turns"]]
    for i, t in enumerate(data["turns"]):
        t["index"] = i
        for c in t["calls"]:
            c["turn"] = i
    return Trajectory.model_validate(data)


# -- legitimate alternatives to the reference ---------------------------------------------------------
def whole_record_reads(rc: ResolvedCase) -> Ref | None:
    """The reference with every get_attribute replaced by a lookup_record of the same record (one
    per record and turn): a model that reads whole records instead of fields. None when the case
    offers no such alternative, or when scripted failures make the rewrite ambiguous."""
    if "lookup_record" not in rc.tools or rc.fixtures.failures:
        return None
    ref = to_ref(rc)
    changed = False
    for t in ref:
        calls, seen = [], set()
        for c in t.get("calls", []):
            if c["tool"] == "get_attribute":
                c, changed = {"tool": "lookup_record", "args": {"record_id": c["args"]["record_id"]}}, True
            key = json.dumps(c, sort_keys=True)
            if key not in seen:
                seen.add(key)
                calls.append(c)
        t["calls"] = calls
    return ref if changed else None


def careful_checks(rc: ResolvedCase) -> Ref:
    """The reference of a constraint case, done the careful way: every candidate it checks at all is
    checked against every constraint, in one turn, and a check that fails on purpose is retried."""
    ref = to_ref(rc)
    checks = [(ti, ci) for ti, ci in call_positions(ref) if ref[ti]["calls"][ci]["tool"] == "check_constraint"]
    first = checks[0][0]
    candidates: list[str] = []
    for ti, ci in checks:
        rid = ref[ti]["calls"][ci]["args"]["record_id"]
        if rid not in candidates:
            candidates.append(rid)
    full = [{"tool": "check_constraint", "args": {"record_id": r, "constraint": c.name}}
            for r in candidates for c in rc.fixtures.constraints]
    retries = [c for c in full for f in rc.fixtures.failures
               if f.tool == "check_constraint" and subset(f.match, c["args"])]
    out: Ref = []
    for ti, t in enumerate(ref):
        rest = [c for c in t.get("calls", []) if c["tool"] != "check_constraint"]
        if ti == first:
            out.append({"calls": rest + full, "final": None})
            if retries:
                out.append({"calls": retries, "final": None})
        elif rest or t.get("final") is not None:
            out.append({"calls": rest, "final": t.get("final")})
    return out
