"""Which TOML files are the plugin's case files, by their content (never by a folder's name).

A file is a case file when its head carries a built-in kind's signature, or declares a plug-in
kind (``kind = "NAME"`` of an installed ``agentfloor.kinds`` entry point):

- the ladder (``kind = "episode"``, or no kind line at all): top-level ``id`` and ``tier`` keys, the
  tier a ladder tier's shape (a capital letter, maybe a digit: ``"A0"``, ``"E"``; a typo like ``"F"``
  still counts, so that it is reported rather than skipped);
- ``kind = "callsite"``: a top-level ``site`` key or a ``[[case]]`` table;
- ``kind = "pressure"``: a top-level ``intent`` key or a ``[[families]]`` or ``[[frontier]]`` table.

A word alone is too common: another tool's ``tier = "free"`` or a CFD case's ``kind = "pressure"``
must leave the run alone. A text check of the file's head, not a parse: a case with a syntax error
must still be collected and reported. It sits at the bottom of the package (scope.py and kinds.py
read it) and imports nothing heavy: it runs in every pytest run of the environment.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

#: kinds whose files become items; an ``installation`` file is data that call-site tables read
COLLECTED_KINDS = ("episode", "callsite", "pressure")
#: kinds whose files are data read by other files, never items themselves
DATA_KINDS = ("installation",)
_plugin_kinds: frozenset[str] | None = None


_entry_points: list[Any] | None = None


def kind_entry_points() -> list[Any]:
    """The installed ``agentfloor.kinds`` entry points, read once per process (importlib.metadata scans
    every installed distribution: tens of ms; kinds.py reads them through this too)."""
    global _entry_points
    if _entry_points is None:
        from importlib import metadata

        _entry_points = list(metadata.entry_points(group="agentfloor.kinds"))
    return _entry_points


def collected_kinds() -> frozenset[str]:
    """The built-in collected kinds plus every ``agentfloor.kinds`` entry point's name (read from the
    installed metadata, without importing any kind: this runs in every pytest run)."""
    global _plugin_kinds
    if _plugin_kinds is None:
        names = {ep.name for ep in kind_entry_points()}
        _plugin_kinds = frozenset(COLLECTED_KINDS) | (names - set(DATA_KINDS))
    return _plugin_kinds
_KIND = re.compile(r'^kind\s*=\s*["\'](?P<kind>[A-Za-z_]+)["\']\s*(?:#.*)?$', re.M)
# top-level keys only: a key before the first [table] header
_TOP_KEY = re.compile(r"^(?P<key>[A-Za-z_]+)\s*=", re.M)
_TABLE = re.compile(r"^\s*\[", re.M)
#: a ladder case without a kind line (seed 000's schema): both keys at the top level
LADDER_KEYS = frozenset({"id", "tier"})
#: a ladder tier's shape (A0, A ... E; a typo of the same shape is a case to report, "free" is no case)
_TIER = re.compile(r'^tier\s*=\s*["\'][A-Z][0-9]?["\']\s*(?:#.*)?$', re.M)
#: what a built-in declared kind's file has besides its kind line: a top-level key, or a table of its own
_SIGNATURES: dict[str, tuple[str, re.Pattern[str]]] = {
    "callsite": ("site", re.compile(r"^\[\[case\]\]", re.M)),
    "pressure": ("intent", re.compile(r"^\[\[(?:families|frontier)\]\]", re.M)),
}
#: bytes read to decide: every declaring key sits at the top of the file
HEAD_BYTES = 16384


def _head(path: Path) -> tuple[str, str] | None:
    """The file's head, and its part before the first [table] header (where top-level keys sit);
    None: unreadable."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    table = _TABLE.search(text)
    return text, text[:table.start()] if table else text


def _declared_kind(path: Path) -> str | None:
    head = _head(path)
    found = _KIND.search(head[1]) if head is not None else None
    return found.group("kind") if found else None


def _top_keys(top: str) -> set[str]:
    return {m.group("key") for m in _TOP_KEY.finditer(top)}


def shaped_as_case(path: Path) -> bool:
    """Whether a TOML file is one of the plugin's case files, by its content.

    Deliberately a text check, not a parse: a case file with a syntax error must still be
    collected (and reported as a collection error), and nothing else is parsed at all.
    """
    head = _head(path) if path.suffix == ".toml" else None
    if head is None:
        return False
    text, top = head
    declared = _KIND.search(top)
    kind = declared.group("kind") if declared else "episode"
    if kind == "episode":
        return LADDER_KEYS <= _top_keys(top) and _TIER.search(top) is not None
    if kind in _SIGNATURES:
        key, table = _SIGNATURES[kind]
        return key in _top_keys(top) or table.search(text) is not None
    return kind in collected_kinds()
