"""Which TOML files are the plugin's case files, by their content (never by a folder's name).

A file is a case file when it declares a collected case kind (``kind = "callsite"``, a plug-in
kind's name) or carries the ladder schema's top-level ``id`` and ``tier``. A text check of the
file's head, not a parse: a case with a syntax error must still be collected and reported. It sits
at the bottom of the package (scope.py and kinds.py read it) and imports nothing heavy: it runs in
every pytest run of the environment.
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
#: bytes read to decide: every declaring key sits at the top of the file
HEAD_BYTES = 16384


def _top(path: Path) -> str | None:
    """The file's head before its first [table] header (where a declaring key must sit); None: unreadable."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    table = _TABLE.search(text)
    return text[:table.start()] if table else text


def _declared_kind(path: Path) -> str | None:
    top = _top(path)
    found = _KIND.search(top) if top is not None else None
    return found.group("kind") if found else None


def shaped_as_case(path: Path) -> bool:
    """Whether a TOML file is one of the plugin's case files, by its content.

    Deliberately a text check, not a parse: a case file with a syntax error must still be
    collected (and reported as a collection error), and nothing else is parsed at all.
    """
    top = _top(path) if path.suffix == ".toml" else None
    if top is None:
        return False
    declared = _KIND.search(top)
    if declared:
        return declared.group("kind") in collected_kinds()
    return LADDER_KEYS <= {m.group("key") for m in _TOP_KEY.finditer(top)}
