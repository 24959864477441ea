"""The redactor's fast paths change nothing it writes: the literal-first key pattern matches where the
plain ``\\bsk-...`` pattern does, the bearer pattern's word prefilter skips only text it cannot match, and
a remembered long text comes back as a fresh scan would give it (property-based)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentfloor.capture.redact import BUILTIN_PATTERNS, CACHE_MIN_CHARS, Redactor

#: the patterns as first written (the reference semantics)
PLAIN = (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"))
PIECES = st.sampled_from(["sk-", "SK-", "bearer ", "BeArEr\t", "abcdefgh", "0123456789", "_", "-", " ", "é", "ß",
                          "x", ".", "/", "\n", "İ", "ſ", "K"])
TEXT = st.lists(PIECES, max_size=40).map("".join)


def plain(text: str, extra: tuple[re.Pattern[str], ...] = ()) -> str:
    for p in PLAIN + extra:
        text = p.sub("[REDACTED]", text)
    return text


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_the_literal_first_pattern_matches_where_the_plain_one_does(text: str) -> None:
    assert BUILTIN_PATTERNS[0].sub("R", text) == PLAIN[0].sub("R", text)


@settings(max_examples=400, deadline=None)
@given(TEXT, st.booleans())
def test_redaction_is_the_plain_patterns_for_short_and_remembered_long_texts(text: str, long: bool) -> None:
    redactor = Redactor((re.compile(r"\d{4,}"),))
    if long:
        text = text + "." * CACHE_MIN_CHARS
    want = plain(text, (re.compile(r"\d{4,}"),))
    assert redactor._patterns(text) == want
    assert redactor._patterns(text) == want  # a second time (from the cache when long)
    assert redactor.part({"m": [text]}, []) == {"m": [want]}
