"""Tool calls in the embedded model's own chat-template format, read from its text.

The template (templates/qwen2.5-0.5b-tools.jinja) tells the model to write each call as one bare
``{"name": ..., "arguments": {...}}`` object on its own line, and nothing else. llama-server
derives its parser from the template, and that parser (llama.cpp's "peg-native" format) reads
exactly one such object, after optional text, for a declared tool: two or more calls, or a call
to a tool not on the menu, are refused with HTTP 500 although they are the format the template
asked for (measured against the real server: tests/realmodel/test_template_formats.py). This module
reads the text the server refused in that same format, so the model is graded on the calls it
made: a call to an undeclared tool reaches the sandbox, which rejects it as the model's own
malformed call. Anything else (code fences, text after the calls, extra keys) is not the
template's format and stays text, as the paper grades text.
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()
_KEYS = {"name", "arguments"}


def read_calls(text: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(the text before the calls, [(name, arguments as JSON text)]) when `text` is optional text
    followed by one or more call objects, each starting a line, up to the end; None otherwise."""
    start = 0
    while start <= len(text):
        brace = text.find("{", start)
        if brace < 0:
            return None
        line_start = text.rfind("\n", 0, brace) + 1
        if text[line_start:brace].strip() == "":  # the object opens its line
            calls = _calls_from(text, brace)
            if calls is not None:
                return text[:line_start], calls
        start = brace + 1
    return None


def _calls_from(text: str, pos: int) -> list[tuple[str, str]] | None:
    calls: list[tuple[str, str]] = []
    end = len(text)
    while True:
        try:
            obj, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return None
        call = _call(obj)
        if call is None:
            return None
        calls.append(call)
        gap_start = pos
        while pos < end and text[pos].isspace():
            pos += 1
        if pos == end:
            return calls
        if text[pos] != "{" or "\n" not in text[gap_start:pos]:  # the next call must open its own line
            return None


def _call(obj: Any) -> tuple[str, str] | None:
    if not isinstance(obj, dict) or set(obj) != _KEYS:
        return None
    name, args = obj["name"], obj["arguments"]
    if not isinstance(name, str) or not name.strip():
        return None
    if isinstance(args, dict):
        return name, json.dumps(args, ensure_ascii=False)
    if isinstance(args, str):  # arguments as a JSON string, as the server itself accepts
        return name, args
    return None
