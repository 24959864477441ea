"""The embedded model's template call format read from text (local/template_calls.py): what the
template asks for becomes calls; anything else stays text, the paper's rule."""

from __future__ import annotations

import json

import pytest

from pytest_agentfloor.local.template_calls import read_calls

A = '{"name": "lookup_record", "arguments": {"record_id": "EMP-1"}}'
B = '{"name": "get_attribute", "arguments": {"record_id": "EMP-1", "attribute": "office"}}'
PAIR_A = ("lookup_record", '{"record_id": "EMP-1"}')
PAIR_B = ("get_attribute", '{"record_id": "EMP-1", "attribute": "office"}')


@pytest.mark.parametrize("text, expected", [
    (A, ("", [PAIR_A])),
    (A + "\n" + B, ("", [PAIR_A, PAIR_B])),
    ("  " + A + "\n\n  " + B + "\n", ("", [PAIR_A, PAIR_B])),
    ("I will look.\n" + A, ("I will look.\n", [PAIR_A])),
    ("a {brace} in prose\n" + A, ("a {brace} in prose\n", [PAIR_A])),
    ('{"name": "x", "arguments": "{\\"k\\": 1}"}', ("", [("x", '{"k": 1}')])),  # arguments as a JSON string
    ('{\n  "name": "lookup_record",\n  "arguments": {"record_id": "EMP-1"}\n}', ("", [PAIR_A])),  # pretty-printed
])
def test_the_templates_format_is_read_as_calls(text: str, expected: tuple[str, list[tuple[str, str]]]) -> None:
    assert read_calls(text) == expected


@pytest.mark.parametrize("text", [
    "", "The answer is 5.", A + B,  # two objects on one line: not one per line
    A + "\nDone.",  # text after the calls
    "```json\n" + A + "\n```",  # a fence: the template says none
    "see " + A,  # the object does not open its line
    '{"name": "x", "arguments": {}, "why": "extra key"}', '{"name": "", "arguments": {}}',
    '{"name": 5, "arguments": {}}', '{"name": "x", "arguments": [1]}', '{"name": "x"}', "[" + A + "]",
    "{" * 5000, "[" * 100_000 + "]" * 100_000, '{"name": "x", "arguments": {' + '"a": ' * 3 + "1}",
])
def test_anything_else_stays_text(text: str) -> None:
    assert read_calls(text) is None


def test_non_ascii_arguments_are_kept_as_written() -> None:
    (name, args), = read_calls('{"name": "note", "arguments": {"text": "Zoë \\ud83d"}}')[1]
    assert name == "note" and json.loads(args) == {"text": "Zoë \ud83d"}
