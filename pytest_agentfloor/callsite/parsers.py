"""Output parsers: how a deployment reads a call site's reply before acting on it.

A grade says whether the deployed system would have done the right thing with a reply, so the
grader first reads the reply the way the deployment does. Two parsers:

- ``deployed`` (the default): seed 001's rules where the paper states them, the authors' released
  harness where it is silent: the first word of a label reply, case-insensitive; the JSON array
  found in a fence or in surrounding prose; fences dropped line by line (an unclosed one too).
- ``strict``: the whole reply must be the answer (one label; one JSON value, at most one
  surrounding fence), the parser this plugin used before.

Pure functions of the text; docs/callsite.md has the rule-by-rule conformance table.
"""

from __future__ import annotations

import json
import re
from typing import Any

PARSERS: tuple[str, ...] = ("deployed", "strict")
DEFAULT_PARSER = "deployed"
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
    return first_word(text) if parser == "deployed" else strict_label(text)


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
    """(the array, "") or (None, why not): the deployed parser searches, the strict one does not."""
    if parser == "deployed":
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
    """Python source: fence lines dropped (deployed), or one closed surrounding fence removed (strict)."""
    return drop_fence_lines(text) if parser == "deployed" else unfence(text)
