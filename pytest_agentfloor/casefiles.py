"""Which TOML files are the plugin's case files, by their content (never by a folder's name).

A file is a case file when its head carries a built-in kind's signature, or declares a plug-in
kind (``kind = "NAME"`` of an installed ``agentfloor.kinds`` entry point):

- the ladder (``kind = "episode"``, or no kind line at all): top-level ``id`` and ``tier`` keys and
  its prompt variants (a ``[prompts]`` table); the tier's value is not checked, so that a typo is
  collected and reported rather than skipped;
- ``kind = "callsite"``: a top-level ``site`` key or a ``[[case]]`` table;
- ``kind = "pressure"``: a top-level ``intent`` key or a ``[[families]]`` or ``[[frontier]]`` table.

A word alone is too common: another tool's ``id`` and ``tier = "S1"`` or a CFD case's
``kind = "pressure"`` must leave the run alone. Keys and table headers are read in every form TOML
allows them (quoted, indented, spaced inside the brackets, CRLF, a byte order mark). A text check
of the file's head, not a parse: a case with a syntax error must still be collected and reported.
It sits at the bottom of the package (scope.py and kinds.py read it) and imports nothing heavy: it
runs in every pytest run of the environment.
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


# a key (bare or quoted, maybe indented) and a table header (maybe spaced inside its brackets), as TOML
# allows them; a UTF-8 byte order mark is dropped first
_KEY = r'^[ \t]*["\']?{}["\']?[ \t]*='
_KIND = re.compile(_KEY.format("kind") + r'[ \t]*["\'](?P<kind>[A-Za-z_]+)["\'][ \t\r]*(?:#.*)?$', re.M)
# top-level keys only: a key before the first [table] header
_TOP_KEY = re.compile(_KEY.format("(?P<key>[A-Za-z_]+)"), re.M)
_TABLE = re.compile(r"^\s*\[", re.M)


def _header(names: str, array: bool = False) -> re.Pattern[str]:
    """A [name] (or [[name]]) header; its closing bracket is not needed (a broken header is still the
    file's, to be reported)."""
    left = r"\[\[" if array else r"\[(?!\[)"
    return re.compile(rf'^[ \t]*{left}[ \t]*["\']?(?:{names})(?![A-Za-z0-9_.-])', re.M)


#: the ladder's signature (module doc): top-level id and tier, and a [prompts] table (or prompts key)
LADDER_KEYS = frozenset({"id", "tier"})
_PROMPTS = _header("prompts")
#: what a built-in declared kind's file has besides its kind line: a top-level key, or a table of its own
_SIGNATURES: dict[str, tuple[str, re.Pattern[str]]] = {
    "callsite": ("site", _header("case", array=True)),
    "pressure": ("intent", _header("families|frontier", array=True)),
}
#: bytes read to decide: every declaring key sits at the top of the file
HEAD_BYTES = 16384
#: the most read to find a ladder file's [prompts] table after a long table before it
MAX_BYTES = 4 * 1024 * 1024


def _head(path: Path, limit: int = HEAD_BYTES) -> tuple[str, str] | None:
    """The file's head, and its part before the first [table] header (where top-level keys sit);
    None: unreadable."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(limit).decode("utf-8", errors="replace").removeprefix("\ufeff")
    except OSError:
        return None
    table = _TABLE.search(text)
    return text, text[:table.start()] if table else text


def _top_keys(top: str) -> set[str]:
    return {m.group("key") for m in _TOP_KEY.finditer(top)}


def _ladder(path: Path, text: str, top: str) -> bool:
    keys = _top_keys(top)
    if not LADDER_KEYS <= keys:
        return False
    if "prompts" in keys or _PROMPTS.search(text):
        return True
    try:  # a long table (fixtures) before [prompts]: read on, for files with id and tier only
        longer = path.stat().st_size > HEAD_BYTES
    except OSError:
        return False
    whole = _head(path, MAX_BYTES) if longer else None
    return whole is not None and _PROMPTS.search(whole[0]) is not None


def shaped_as_case(path: Path) -> bool:
    """Whether a TOML file is one of the plugin's case files, by its content.

    Deliberately a text check, not a parse: a case file with a syntax error must still be
    collected (and reported as a collection error), and nothing else is parsed at all.
    """
    return case_shape(path)[0]


def case_shape(path: Path) -> tuple[bool, str | None]:
    """(whether `path` is a case file, the kind its head declares or None), from one read of its head."""
    head = _head(path) if path.suffix == ".toml" else None
    if head is None:
        return False, None
    text, top = head
    declared = _KIND.search(top)
    kind = declared.group("kind") if declared else None
    if kind is None or kind == "episode":
        return _ladder(path, text, top), kind
    if kind in _SIGNATURES:
        key, table = _SIGNATURES[kind]
        return key in _top_keys(top) or table.search(text) is not None, kind
    return kind in collected_kinds(), kind
