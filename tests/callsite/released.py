"""The authors' released scored records (seed 001, waldiez/slm-callsite-eval) as our cases and verdicts.

``data/slm_callsite_records.jsonl`` holds real records of ``results/final_scored.jsonl`` (model,
category, case id, their harness's verdict, the output); ``data/slm_callsite_keys.jsonl`` the gold of
each case, from the released key files where they ship and otherwise recovered (each key says how):
data/README.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_agentfloor.callsite.graders import GRADERS
from pytest_agentfloor.callsite.parsers import first_word
from pytest_agentfloor.callsite.schema import Action, CallSiteCase, CodegenGold, PlannerGold

DATA = Path(__file__).parent / "data"
#: their call-site name -> ours
SITE = {"intent": "intent", "ha": "action_label", "actuator": "actuator"}


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def cases(parser: str) -> dict[str, CallSiteCase]:
    """One case per key; label sets are every label the keys and the records name at that site."""
    keys, recs = load("slm_callsite_keys.jsonl"), load("slm_callsite_records.jsonl")
    labels: dict[str, set[str]] = defaultdict(set)
    for k in keys:
        if k["category"] in ("intent", "ha"):
            labels[k["category"]].add(k["expected"])
    for r in recs:
        if r["category"] in ("intent", "ha") and first_word(r["output"]):
            labels[r["category"]].add(first_word(r["output"]))
    out = {}
    for k in keys:
        site = SITE[k["category"]]
        gold: dict[str, Any] = {}
        if site == "actuator":
            gold["actions"] = tuple(Action.model_validate(a) for a in k["expected"])
        else:
            gold["label"] = k["expected"]
            gold["labels"] = tuple(sorted(labels[k["category"]]))
        out[k["case_id"]] = CallSiteCase(id=k["case_id"], site=site, grader=site, group=k["case_id"].split("-")[1],
                                         system_prompt="", prompt="", reference="", content_hash="released",
                                         parser=parser, installation=None, **gold)
    return out


def verdicts(parser: str) -> list[tuple[str, str, str, bool, bool]]:
    """(site, case id, model, their verdict, ours) for every record whose case has a key."""
    cs = cases(parser)
    out = []
    for r in load("slm_callsite_records.jsonl"):
        case = cs.get(r["case_id"])
        if case is not None:
            ours = GRADERS[case.grader](case, r["output"]).passed
            out.append((case.site, r["case_id"], r["model"], r["passed"], ours))
    return out


def agreement(parser: str) -> dict[str, tuple[int, int]]:
    """Per site: (records on which our verdict equals theirs, records)."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for site, _, _, theirs, ours in verdicts(parser):
        tally[site][0] += theirs == ours
        tally[site][1] += 1
    return {s: (a, n) for s, (a, n) in tally.items()}


def planner_cases(parser: str = "deployed") -> dict[str, CallSiteCase]:
    """Their 50 planner cases (``benchmark/planner_grounded.jsonl``), keys only: the deployed parser reads no
    registry. A list key is shape only; a dict adds ``must_contain`` / ``must_not_contain`` (a nested list: any
    one of); the ``infeasible`` sub-group is a refusal, as seed 001 scores it (our deliberate deviation 1), and
    keeps its key's types and ``must_not_contain``, which the harness parser grades it by."""
    out = {}
    for k in load("slm_callsite_planner_keys.jsonl"):
        cid, exp = k["case_id"], k["expected"]
        group = cid.split("-")[1]
        if isinstance(exp, list):
            exp = {"types": exp}
        gold = PlannerGold(refuse=group == "infeasible", allowed_types=exp["types"],
                           must_contain=exp.get("must_contain", []), must_not_contain=exp.get("must_not_contain", []))
        out[cid] = CallSiteCase(id=cid, site="planner", grader="planner", group=group, system_prompt="", prompt="",
                                reference="[]", content_hash="released", parser=parser, installation=None,
                                plan=gold)
    return out


def planner_records() -> list[dict[str, Any]]:
    return load("slm_callsite_planner_records.jsonl") + load("slm_callsite_planner_infeasible.jsonl")


def planner_verdicts(parser: str = "deployed") -> list[tuple[str, str, bool, bool]]:
    """(case id, model, their verdict, ours under the parser) for every released planner record."""
    cs = planner_cases(parser)
    return [(r["case_id"], r["model"], r["passed"], GRADERS["planner"](cs[r["case_id"]], r["output"]).passed)
            for r in planner_records()]


def codegen_cases(parser: str) -> dict[str, CallSiteCase]:
    """Their 50 codegen ("dynamic") cases; the keys are the dict form, so their structural checks apply."""
    out = {}
    for k in load("slm_callsite_codegen_keys.jsonl"):
        cid, exp = k["case_id"], k["expected"]
        gold = CodegenGold(functions=exp["functions"], must_contain=exp["must_contain"],
                           must_not_contain=exp.get("must_not_contain", []))
        out[cid] = CallSiteCase(id=cid, site="codegen", grader="codegen", group=cid.split("-")[1], system_prompt="",
                                prompt="", reference="", content_hash="released", parser=parser, installation=None,
                                code=gold)
    return out


def codegen_verdicts(parser: str) -> list[tuple[str, str, bool, bool]]:
    """(case id, model, their verdict, ours under the parser) for every released codegen record."""
    cs = codegen_cases(parser)
    return [(r["case_id"], r["model"], r["passed"], GRADERS["codegen"](cs[r["case_id"]], r["output"]).passed)
            for r in load("slm_callsite_codegen_records.jsonl")]
