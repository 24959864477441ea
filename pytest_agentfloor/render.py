"""Safe rendering of text the model (or a server) controls.

Tool names, arguments, answers and server errors reach the terminal, JUnit XML, report.md and
report.html. A terminal must never receive their escape sequences (clear screen, set the title,
hyperlinks, bell), so every control character is shown as a visible escape instead: ``\\x1b``.
"""

from __future__ import annotations

import html
import re

# C0 and C1 controls, DEL, and the invisible Unicode characters that reorder or hide text
# (bidi overrides and isolates, zero-width joiners, line/paragraph separators, BOM), and lone
# surrogates: a model's JSON can carry "\ud800", which no UTF-8 file or terminal can hold
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")
_UNSAFE_LINES = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # only a '<' that could open HTML; 'p < 0.05' stays readable
_ENTITY = re.compile(r"&(?=#?\w+;)")  # only an '&' that would start a character reference


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its JSON/Python escape (``\\ud800``).

    Everything else is kept as is; the result always encodes to UTF-8, and inside a JSON
    document the escape reads back as the same character.
    """
    return _SURROGATE.sub(_visible, text) if _SURROGATE.search(text) else text


def safe_text(text: object, *, multiline: bool = True) -> str:
    """`text` with every control character made visible; newlines and tabs kept if `multiline`."""
    s = str(text)
    return (_UNSAFE if multiline else _UNSAFE_LINES).sub(_visible, s)


def safe_markdown(text: object) -> str:
    """One table cell or line of Markdown: no controls, no raw HTML, no table breaks."""
    s = _ENTITY.sub("&amp;", safe_text(text, multiline=False))
    return _TAG.sub("&lt;", s).replace("|", "\\|")


def safe_markdown_text(text: str) -> str:
    """A whole Markdown document: controls made visible (newlines and tabs kept), no raw HTML tags."""
    return _TAG.sub("&lt;", safe_text(text))


def safe_html(text: object) -> str:
    return html.escape(safe_text(text), quote=True)
