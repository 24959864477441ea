"""``capture review --agentfloor-judge MODEL``: a judge model pre-labels the provisional references.

A pre-label is advice to the reviewer, never a review: the judge's verdict on the production reply is
stored in the case as ``judge = {verdict, reason, judge, fingerprint, prompt}``, the case stays
``review = "provisional"`` (so the statistics keep it aside), and the interactive flow shows the
judge's verdict and puts the cases it failed first. Only a person's accept or edit counts.

The judge is the plugin's (judge/): the same versioned prompt and strict JSON verdict, temperature 0,
a fixed seed, and the report dir's verdict cache, so a second pre-label of unchanged cases asks
nothing. What the judge is shown: the call's system prompt, the tools it offered (name and
description), the conversation as captured, and the production reply as the answer to check.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..judge.client import Judge
    from .review import Table

PREDICATE = "captured_reply_correct"
#: stored with each label beside the judge prompt's version: change it whenever RUBRIC or task_text changes
PRELABEL_VERSION = "prelabel-v1"
RUBRIC = ("The answer is what the assistant's instructions ask for in reply to the last message of the conversation: "
          "the right content in the form the instructions ask for (for example the one correct label, JSON with the "
          "right values, a call of the right tool with the right arguments, or a sentence true to the tool's result). "
          "Fail a wrong label, wrong values, a missing or wrong tool call, or a statement the conversation "
          "contradicts. Do not fail a correct answer for its wording.")


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def task_text(table: "Table", case: dict[str, Any]) -> str:
    """What the judge is shown of the call: the assistant's instructions, its tools, the conversation as captured."""
    parts = ["An assistant inside an application was given these instructions:",
             str(table.fields.get("system_prompt", "")).strip()]
    tools = table.fields.get("tools") or []
    if tools:
        lines = []
        for t in tools:
            fn = t.get("function", t) if isinstance(t, dict) else {}
            lines.append(f"- {fn.get('name')}: {fn.get('description', '')} (parameters: "
                         f"{json.dumps(fn.get('parameters', {}), ensure_ascii=False)})")
        parts += ["", "It could call these tools (a tool call is its answer when it calls one):", *lines]
    parts += ["", "The conversation it answered:"]
    for m in case.get("messages") or [{"role": "user", "content": case.get("prompt", "")}]:
        line = f"{m.get('role')}: {_content(m.get('content'))}".rstrip()
        calls = m.get("tool_calls") or []
        if calls:
            line += " [called " + json.dumps([(c.get("function") or {}) for c in calls], ensure_ascii=False) + "]"
        parts.append(line)
    return "\n".join(parts)


def production_reply(case: dict[str, Any]) -> str:
    """The reply production gave (an edited case keeps it in provenance.production_reply)."""
    return str((case.get("provenance") or {}).get("production_reply") or case.get("reference") or "")


def prelabel(tables: list["Table"], judge: "Judge", *, out: Callable[[str], None] = print) -> tuple[Counter[str], list[str]]:
    """Label every provisional case this judge has not labelled; save each table as it goes.

    Returns (counts of pass / fail / kept, the errors of cases the judge could not label)."""
    from ..judge.client import JudgeError
    from ..judge.prompt import PROMPT_VERSION

    prompt = f"{PROMPT_VERSION}+{PRELABEL_VERSION}"
    done: Counter[str] = Counter()
    errors: list[str] = []
    for table in tables:
        changed = False
        for case in table.cases:
            if case.get("review", "provisional") != "provisional":
                continue
            label = case.get("judge")
            if isinstance(label, dict) and label.get("fingerprint") == judge.fingerprint \
                    and label.get("prompt") == prompt:
                done["kept"] += 1
                continue
            try:
                verdict = judge.judge(case_id=str(case.get("id")), task=task_text(table, case), reference=None,
                                      predicate=PREDICATE, rubric=RUBRIC, text=production_reply(case))
            except JudgeError as exc:
                errors.append(f"{table.path.name} {case.get('id')}: {exc}")
                if len(errors) == 1:
                    out(f"  judge error: {exc}")
                continue
            case["judge"] = {"verdict": "pass" if verdict.passed else "fail", "reason": verdict.reason,
                             "judge": judge.name, "fingerprint": judge.fingerprint, "prompt": prompt}
            done[case["judge"]["verdict"]] += 1
            changed = True
        if changed:
            table.save()
    return done, errors
