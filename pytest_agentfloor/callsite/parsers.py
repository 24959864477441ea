"""Output parsers: how a deployment reads a call site's reply before acting on it.

A grade says whether the deployed system would have done the right thing with a reply, so the
grader first reads the reply the way the deployment does. Three readings:

- ``deployed`` (the default): seed 001's rules where the paper states them, the authors' released
  harness where it is silent: the first word of a label reply, case-insensitive; the JSON array
  found in a fence or in surrounding prose; fences dropped line by line (an unclosed one too).
- ``strict``: the whole reply must be the answer (one label; one JSON value, at most one
  surrounding fence), the parser this plugin used before.
- ``harness``: the authors' released harness (``waldiez/slm-callsite-eval``,
  ``harness/evalharness.py``) also where it contradicts the paper: an infeasible planner request
  graded as a feasible one, codegen checked on the harness's structural findings only,
  ``service_data`` compared as a whole object where the gold names it. For reproducing their
  published verdicts, not for choosing a model.

The text readers are pure functions; :data:`READINGS` says, rule by rule, what each parser does
where they part ways, so the graders ask a named rule rather than a parser's name.
docs/callsite.md has the rule-by-rule conformance table.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .schema import ParserName

PARSERS: tuple[str, ...] = get_args(ParserName)
DEFAULT_PARSER = "deployed"


@dataclass(frozen=True)
class Reading:
    """What one parser does at each rule where the parsers differ (docs/callsite.md, "Conformance")."""

    #: label sites: the first word of the reply is the label (else the whole reply)
    first_word_label: bool
    #: JSON sites and code: search the reply (whole, fence lines dropped, outermost span), else the whole
    #: reply or one surrounding fence
    lenient_text: bool
    #: actuator ``service_data``: "keys" (only the gold's keys), "object" (the whole object, when the gold
    #: has one), "exact" (the whole object, absent = ``{}``)
    service_data: Literal["keys", "object", "exact"]
    #: actuator: a call may carry keys beyond domain, service, entity_id and service_data
    extra_call_keys: bool
    #: actuator: every emitted call must match a gold call (else: same count and every gold call matched)
    each_call_matched: bool
    #: planner: an infeasible request (``refuse``) requires ``[]``, as seed 001 scores it (else graded as the
    #: harness grades it: a non-empty plan of the allowed types that avoids ``must_not_contain``)
    infeasible_is_refusal: bool
    #: planner: steps need only a type, a name and a description (else kebab-case names, each type's fields,
    #: schedules, registry entities and published topics)
    light_plan_shape: bool
    #: codegen: a module-level import fails only when it is not the standard library
    stdlib_imports_allowed: bool
    #: codegen: a required function whose body is only ``pass``, a docstring or ``...`` fails
    stub_bodies_fail: bool
    #: codegen: the whole run-time contract (entry points at module level with the framework's arity, every
    #: awaited or unawaited API call, one-argument async callbacks, no ``while True`` in process(), the wider
    #: list of model clients); else only the harness's structural findings
    runtime_contract: bool
    #: codegen: an unawaited ``agent.log(...)`` fails even where the task does not ask for logging (else only
    #: where it does: the call is dropped with a RuntimeWarning and the agent runs on without that line)
    unawaited_log_fails: bool


READINGS: dict[str, Reading] = {
    "deployed": Reading(first_word_label=True, lenient_text=True, service_data="keys", extra_call_keys=True,
                        each_call_matched=True, infeasible_is_refusal=True, light_plan_shape=True,
                        stdlib_imports_allowed=True, stub_bodies_fail=True, runtime_contract=True,
                        unawaited_log_fails=False),
    "strict": Reading(first_word_label=False, lenient_text=False, service_data="exact", extra_call_keys=False,
                      each_call_matched=True, infeasible_is_refusal=True, light_plan_shape=False,
                      stdlib_imports_allowed=False, stub_bodies_fail=False, runtime_contract=True,
                      unawaited_log_fails=True),
    "harness": Reading(first_word_label=True, lenient_text=True, service_data="object", extra_call_keys=True,
                       each_call_matched=False, infeasible_is_refusal=False, light_plan_shape=True,
                       stdlib_imports_allowed=True, stub_bodies_fail=True, runtime_contract=False,
                       unawaited_log_fails=False),
}


def reading(parser: str) -> Reading:
    """The rules of a parser by name (KeyError for an unknown one: the schema admits only :data:`PARSERS`)."""
    return READINGS[parser]
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.S)
#: what the deployed router strips from the first word (the authors' harness: punctuation and quotes)
_WORD_STRIP = ".,:;!\"'"


def unfence(text: str) -> str:
    """The body of one surrounding markdown code fence (strict), else the stripped text."""
    m = _FENCE.match(text)
    return m.group(1) if m else text.strip()


def drop_fence_lines(text: str) -> str:
    """The text without any line that opens or closes a fence: tolerates an unclosed (truncated) one."""
    return "\n".join(ln for ln in (text or "").strip().splitlines() if not ln.strip().startswith("```")).strip()


def first_word(text: str) -> str:
    """The label a router reading the first token sees: first whitespace-separated word, punctuation off."""
    words = (text or "").split()
    return words[0].strip(_WORD_STRIP) if words else ""


def strict_label(text: str) -> str:
    """The label in `"actuate".`, `actuate.` or `'actuate'`: quotes, then a full stop, then quotes."""
    t = text.strip().strip("`\"'").strip()
    return t[:-1].strip().strip("`\"'").strip() if t.endswith(".") else t


def read_label(text: str, parser: str) -> str:
    return first_word(text) if reading(parser).first_word_label else strict_label(text)


def _short(text: str, n: int = 80) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 3] + "..."


def find_json(text: str) -> Any:
    """The JSON value a lenient production parser finds: the whole reply, the reply without fences,
    then the outermost ``[...]`` span, then the outermost ``{...}`` span. None if nothing parses."""
    for candidate in (text or "", drop_fence_lines(text)):
        candidate = candidate.strip()
        if candidate:
            try:
                return json.loads(candidate)
            except json.JSONDecodeError:
                pass
    body = drop_fence_lines(text)
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = body.find(opener), body.rfind(closer)
        if start != -1 and end > start:
            try:
                return json.loads(body[start:end + 1])
            except json.JSONDecodeError:
                continue
    return None


def read_json_array(text: str, parser: str) -> tuple[list[Any] | None, str]:
    """(the array, "") or (None, why not): the deployed and harness parsers search, the strict one does not."""
    if reading(parser).lenient_text:
        value = find_json(text)
        if value is None:
            return None, f"no JSON array found: {_short(text or '(empty)')}"
    else:
        try:
            value = json.loads(unfence(text))
        except json.JSONDecodeError as exc:
            return None, f"not JSON ({exc.msg} at char {exc.pos}): {_short(text or '(empty)')}"
    if not isinstance(value, list):
        return None, f"a JSON {type(value).__name__}, not an array"
    return value, ""


def read_code(text: str, parser: str) -> str:
    """Python source: fence lines dropped (deployed, harness), or one closed surrounding fence removed (strict)."""
    return drop_fence_lines(text) if reading(parser).lenient_text else unfence(text)
