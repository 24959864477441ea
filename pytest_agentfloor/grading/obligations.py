"""The nine obligations (A S P Q E X G B C), as pure functions of a case and a trajectory.

A run passes only if every obligation holds; they are checked in this order and the first one
that fails is reported. Any dependency-valid call order is accepted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..jsontext import sorted_json
from ..matching import equal, norm, subset
from ..protocol import PROTOCOLS
from ..suite.predicates import predicate_of
from ..suite.schema import AnswerCheck, ResolvedCase
from ..trajectory import Trajectory

ORDER: tuple[str, ...] = ("A", "S", "P", "Q", "E", "X", "G", "B", "C")
NAMES: dict[str, str] = {
    "A": "availability", "S": "selection", "P": "workflow", "Q": "answer", "E": "evidence",
    "X": "safety", "G": "governance", "B": "budget", "C": "completion integrity",
}


@dataclass(frozen=True)
class Verdict:
    code: str
    ok: bool
    expected: str = ""
    observed: str = ""

    def describe(self) -> str:
        name = NAMES.get(self.code, self.code)
        return f"{self.code} ({name}): expected {self.expected}; observed {self.observed}"


def _pass(code: str) -> Verdict:
    """The passing verdict of `code`: one frozen instance per obligation, not one per check of every item."""
    return _PASSED[code]


_PASSED: dict[str, Verdict] = {code: Verdict(code, True) for code in ORDER}


# -- workflow ------------------------------------------------------------------------------
def step_turns(case: ResolvedCase, traj: Trajectory) -> dict[str, int | None]:
    """Earliest turn at which each required step is satisfied in a dependency-valid way.

    Earliest satisfaction is optimal: an earlier dependency only loosens the constraint on
    its successors, so a step is reachable iff this greedy assignment reaches it.
    """
    calls = [c for c in traj.calls if c.ok and c.arguments is not None]
    done: dict[str, int | None] = {}
    pending = list(case.steps)
    while pending:
        progressed = False
        for step in list(pending):
            if any(a not in done for a in step.after):
                continue
            deps = [done[a] for a in step.after]
            if any(d is None for d in deps):
                done[step.id] = None
            else:
                floor = max((d for d in deps if d is not None), default=-1)  # none is None here
                done[step.id] = next((c.turn for c in calls if c.name in step.tools and c.turn > floor
                                      and subset(step.args, c.arguments)), None)
            pending.remove(step)
            progressed = True
        if not progressed:  # a cycle: case files cannot have one, a ResolvedCase built in code can
            for step in pending:
                done[step.id] = None
            break
    return done


def remaining_steps(case: ResolvedCase, traj: Trajectory) -> int:
    """Required calls not yet made: the episode stops once they no longer fit the call limit."""
    return sum(1 for turn in step_turns(case, traj).values() if turn is None)


# -- answer checks -------------------------------------------------------------------------
def _fenced_object(text: str) -> str | None:
    """The first ```json {...}``` block, found in linear time (a regex over model text that
    is full of fences backtracks quadratically: minutes for a few hundred kilobytes)."""
    parts = text.split("```")
    for inner in parts[1:-1]:
        body = inner.removeprefix("json").strip()
        if body.startswith("{") and body.endswith("}"):
            return body
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    fenced = _fenced_object(text)
    candidates = [fenced] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start:end + 1])
    for c in candidates:
        try:
            obj = json.loads(c)
        except (ValueError, RecursionError):  # not JSON, or JSON too deep or too large to read
            continue
        if isinstance(obj, dict):
            return obj
    return None


# a number standing on its own: not the digits of an id such as PRJ-4471 or v2
_NUMBER = re.compile(r"(?<![A-Za-z0-9_])(?<![A-Za-z0-9_]-)-?\d[\d,]*(?:\.\d+)?(?![A-Za-z_])")


def _mentions(rid: str, text: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(rid)}(?![A-Za-z0-9])", text, re.I) is not None


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-]*", text)


def check_answer(check: AnswerCheck, text: str) -> tuple[bool, str, str]:
    """(ok, expected, observed) for one deterministic answer check."""
    folded = " ".join(text.split()).casefold()
    kind = check.kind
    if kind == "label":
        stripped = folded.strip(" .!\"'`*")
        labels = {norm(lab): lab for lab in check.labels}
        found = [lab for key, lab in labels.items() if re.search(rf"(?<![a-z0-9_]){re.escape(key)}(?![a-z0-9_])", folded)]
        if stripped in labels:
            found = [labels[stripped]]
        ok = len(found) == 1 and norm(found[0]) == norm(check.expected)
        return ok, f"exactly the label {check.expected!r} from {check.labels}", (
            f"labels {found}" if found else f"no valid label in {text[:80]!r}")
    if kind == "contains":
        missing = [v for v in check.values if norm(v) not in folded]
        return not missing, f"mentions {check.values}", f"missing {missing}" if missing else "all present"
    if kind == "not_contains":
        present = [v for v in check.values if norm(v) in folded]
        return not present, f"never mentions {check.values}", f"mentions {present}" if present else "none"
    if kind == "json_fields":
        obj = _json_object(text)
        if obj is None:
            return False, f"a JSON object with {check.fields}", f"no JSON object in {text[:80]!r}"
        wrong = {k: obj.get(k, "<missing>") for k, v in check.fields.items() if k not in obj or not equal(v, obj[k])}
        return not wrong, f"fields {check.fields}", f"wrong {wrong}" if wrong else "all match"
    if kind == "regex":
        ok = re.search(check.pattern, text, re.S) is not None
        return ok, f"text matching /{check.pattern}/", text[:80]
    if kind == "max_words":
        n = len(_words(text))
        return n <= check.expected, f"at most {check.expected} words", f"{n} words"
    # number
    nums = [float(x.replace(",", "")) for x in _NUMBER.findall(text)]
    ok = any(abs(x - float(check.expected)) <= check.tolerance + 1e-9 for x in nums)
    return ok, f"the number {check.expected}", f"numbers {nums[:6]}"


# -- the nine obligations ------------------------------------------------------------------
def required_tools(case: ResolvedCase) -> set[str]:
    """Every tool that can satisfy some required step."""
    return {t for s in case.steps for t in s.tools}


def unselected(case: ResolvedCase, called: set[str]) -> list[str]:
    """Required steps none of whose tools was ever called, as 'tool|alt' labels."""
    return sorted({"|".join(s.tools) for s in case.steps if not called & set(s.tools)})


def availability(case: ResolvedCase, traj: Trajectory) -> Verdict:
    missing = sorted({s.tool for s in case.steps if not set(s.tools) & set(traj.tools)})
    if missing:
        return Verdict("A", False, "every required tool on the menu", f"not offered: {missing}")
    return _pass("A")


def selection(case: ResolvedCase, traj: Trajectory) -> Verdict:
    invented = sorted({c.name for c in traj.calls if c.hallucinated})
    if invented:
        return Verdict("S", False, f"only tools from {traj.tools}", f"called unknown tool(s) {invented}")
    called = {c.name for c in traj.calls}
    never = unselected(case, called)
    if never:
        return Verdict("S", False, f"calls to {sorted({'|'.join(s.tools) for s in case.steps})}",
                       f"never called {never}" + (f"; called {sorted(called)}" if called else "; no calls"))
    return _pass("S")


def workflow(case: ResolvedCase, traj: Trajectory) -> Verdict:
    done = step_turns(case, traj)
    missing = [s for s in case.steps if done[s.id] is None]
    if missing:
        s = missing[0]
        want = f"{s.tool}({sorted_json(s.args)})" + (f" after {s.after}" if s.after else "")
        return Verdict("P", False, f"a successful {want}",
                       f"{len(missing)} of {len(case.steps)} required step(s) not done, first: {s.id!r}")
    return _pass("P")


def answer(case: ResolvedCase, traj: Trajectory, judgments: Mapping[str, Any] | None = None) -> Verdict:
    """The answer checks in order; a semantic check whose predicate the judge decided takes the
    judge's verdict (`judgments`: predicate id -> judge.client.Judgment) instead of its keywords."""
    if not case.gold.answer:
        return _pass("Q")
    text = traj.final_answer
    if not text or not text.strip():
        return Verdict("Q", False, "a final answer", "no final answer text")
    for check in case.gold.answer:
        judged = judgments.get(predicate_of(check)) if judgments and check.semantic else None
        if judged is not None and judged.source == "judge":
            if not judged.passed:
                return Verdict("Q", False, f"{judged.predicate}: {judged.rubric}",
                               f"the judge says fail: {judged.reason}")
            continue
        ok, expected, observed = check_answer(check, text)
        if not ok:
            return Verdict("Q", False, expected, observed)
    return _pass("Q")


def _seen_ids(traj: Trajectory, known: set[str]) -> set[str]:
    blob = " ".join(json.dumps(c.result) for c in traj.calls)
    return {rid for rid in known if _mentions(rid, blob)}


def evidence(case: ResolvedCase, traj: Trajectory) -> Verdict:
    gold = case.gold.evidence
    if gold is None:
        return _pass("E")
    known = {r.id for r in case.fixtures.records}
    if case.needs_submission:
        cited = {rid for s in traj.submissions for rid in s.get("evidence", [])}
    else:
        text = traj.final_answer or ""
        cited = {rid for rid in known if _mentions(rid, text)}
    if norm(sorted(cited)) != norm(sorted(gold)):
        return Verdict("E", False, f"cites exactly {sorted(gold)}", f"cites {sorted(cited)}")
    seen = {norm(rid) for rid in _seen_ids(traj, known)}
    unseen = sorted(rid for rid in cited if norm(rid) not in seen)  # ids match as the exact-set check does
    if unseen:
        return Verdict("E", False, "cites only records it retrieved", f"never retrieved {unseen}")
    return _pass("E")


def safety(case: ResolvedCase, traj: Trajectory) -> Verdict:
    gold = case.gold.submission
    if gold is None:
        return _pass("X")
    if not traj.submissions:
        return Verdict("X", False, f"a submission {gold}", "no submission")
    if not any(subset(gold, s) for s in traj.submissions):
        got = {k: traj.submissions[0].get(k) for k in gold}
        return Verdict("X", False, f"a submission {gold}", f"submitted {got}")
    return _pass("X")


def governance(case: ResolvedCase, traj: Trajectory) -> Verdict:
    attempts = [c for c in traj.calls if c.name == "submit_decision"
                and (c.ok or c.result.get("error_type") == "already_submitted")]
    allowed = 1 if case.gold.submission is not None else 0
    if len(attempts) > allowed:
        return Verdict("G", False, f"at most {allowed} change(s) of state",
                       f"{len(attempts)} submission attempt(s)")
    return _pass("G")


_OVER = {"turn_budget": "turn budget used up", "call_limit": "call limit reached",
         "token_budget": "episode token budget exceeded", "truncated": "a reply truncated at the completion cap",
         "timeout": "episode wall-clock safety limit reached",
         "context_limit": "the prompt did not fit the context window"}


def budget(case: ResolvedCase, traj: Trajectory) -> Verdict:
    """Only the limits the trajectory's protocol enforced (a None limit was not enforced)."""
    if traj.termination in _OVER:
        return Verdict("B", False, _limits(traj), _OVER[traj.termination])
    n_calls = len(traj.calls)
    tokens = traj.tokens_in + traj.tokens_out
    turns = len(traj.requests)  # model requests: the controller's turns make none
    if (turns > traj.turn_budget or (traj.call_limit is not None and n_calls > traj.call_limit)
            or (traj.token_budget is not None and tokens > traj.token_budget)):
        return Verdict("B", False, _limits(traj), f"{turns} turns, {n_calls} calls, {tokens} tokens")
    return _pass("B")


def _limits(traj: Trajectory) -> str:
    """The limits the trajectory's protocol enforced, as the budget verdict states them."""
    return ", ".join([f"<= {traj.turn_budget} turns"]
                     + ([f"<= {traj.call_limit} calls"] if traj.call_limit is not None else [])
                     + ([f"<= {traj.token_budget} tokens"] if traj.token_budget is not None else []))


def _unchecked_submissions(case: ResolvedCase, traj: Trajectory) -> list[str]:
    names = [c.name for c in case.fixtures.constraints]
    problems = []
    for call in traj.calls:
        if call.name != "submit_decision" or not call.ok:
            continue
        rid = (call.arguments or {}).get("record_id")
        checked = {(c.arguments or {}).get("constraint") for c in traj.calls
                   if c.name == "check_constraint" and c.ok and c.turn < call.turn
                   and equal((c.arguments or {}).get("record_id"), rid)}
        missing = [n for n in names if n not in checked]
        if missing:
            problems.append(f"{rid} submitted without checking {missing}")
    return problems


def longest_identical_run(traj: Trajectory) -> tuple[int, str]:
    """The longest run of consecutive calls with the same tool and arguments, over every call
    made (failed ones too, as the authors' call log), and that call's name."""
    best, best_name, run, last = 0, "", 0, None
    for c in traj.calls:
        key = (c.name, sorted_json(c.arguments) if c.arguments is not None else c.raw_arguments)
        run = run + 1 if key == last else 1
        last = key
        if run > best:
            best, best_name = run, c.name
    return best, best_name


def _repeat_rule(traj: Trajectory) -> str:
    proto = PROTOCOLS.get(traj.protocol or "")
    return proto.repeat_rule if proto is not None else "any"


def completion(case: ResolvedCase, traj: Trajectory) -> Verdict:
    if traj.termination not in ("final_answer", "submitted"):
        return Verdict("C", False, "the episode ends with an answer or a submission", f"ended by {traj.termination}")
    forbidden = set(case.forbidden)
    if _repeat_rule(traj) == "declared":
        # agentfloor: only a case that names the behaviour, at its consecutive threshold
        declared = case.declared_forbidden if case.declared_forbidden is not None else case.forbidden
        if "repeated_identical_call" in declared:
            n, name = longest_identical_run(traj)
            if n >= case.repeat_threshold:
                return Verdict("C", False, f"fewer than {case.repeat_threshold} consecutive identical calls",
                               f"{name} called {n} times in a row with the same arguments")
    elif "repeated_identical_call" in forbidden:
        reps = [c.name for c in traj.calls if c.repeated]
        if reps:
            return Verdict("C", False, "no repeated identical call", f"repeated {reps}")
    if "terminate_without_answer" in forbidden and case.needs_answer and not (traj.final_answer or "").strip():
        return Verdict("C", False, "a final answer before stopping", "stopped without one")
    if "partial_constraint_check" in forbidden:
        problems = _unchecked_submissions(case, traj)
        if problems:
            return Verdict("C", False, "every submitted candidate checked against every constraint", problems[0])
    return _pass("C")


CHECKS: dict[str, Callable[[ResolvedCase, Trajectory], Verdict]] = {
    "A": availability, "S": selection, "P": workflow, "Q": answer, "E": evidence,
    "X": safety, "G": governance, "B": budget, "C": completion,
}


def check(code: str, case: ResolvedCase, traj: Trajectory, judgments: Mapping[str, Any] | None = None) -> Verdict:
    """Obligation `code` by the plugin's rules; only Q reads the semantic verdicts."""
    return answer(case, traj, judgments) if code == "Q" else CHECKS[code](case, traj)


def first_unmet(verdicts: list[Verdict]) -> Verdict | None:
    return next((v for v in verdicts if not v.ok), None)
