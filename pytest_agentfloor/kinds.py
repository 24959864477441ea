"""The seam between case data and the one path every case takes: a registry of case kinds.

A case file names its kind (``kind = "callsite"``; no key means the ladder's ``episode``). The
kind turns the parsed file into entries (one per case, with its markers and (variant, instance)
specs), plays one resolved case into a Trajectory and grades it. Everything after the
Trajectory (records, user_properties, xdist, resume, statistics, reports) is shared and does
not ask which kind produced it.

Kinds are plug-ins: each is an entry point of the ``agentfloor.kinds`` group (pyproject.toml),
the built-in ones exactly as a third-party package's (docs/kinds.md). This module imports none
of them; it loads the group's entry points on first use.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from .kindspec import CaseKind, Entry
from .suite.loader import CaseError, read_toml

__all__ = ["BUILTIN_KINDS", "ENTRY_POINT_GROUP", "CaseKind", "Entry", "KindPluginError", "all_kinds",
           "is_case_file", "kind_named", "kind_names", "load_file", "plugin_kinds", "register_kind"]

ENTRY_POINT_GROUP = "agentfloor.kinds"

#: the built-in kinds' entry points, as pyproject.toml declares them (a test keeps the two equal).
#: Used only for names the installed metadata lacks: an install made before a kind was added
#: (an editable install registers entry points when it is made) still finds every built-in.
BUILTIN_KINDS: dict[str, str] = {
    "episode": "pytest_agentfloor.suite.kind:EpisodeKind",
    "callsite": "pytest_agentfloor.callsite.kind:CallSiteKind",
    "installation": "pytest_agentfloor.callsite.kind:InstallationKind",
    "pressure": "pytest_agentfloor.pressure.kind:PressureKind",
}


class KindPluginError(Exception):
    """An ``agentfloor.kinds`` entry point that cannot be loaded or does not make a kind."""


KINDS: dict[str, CaseKind] = {}
_loaded = False


def register_kind(kind: CaseKind) -> None:
    """Add (or replace) a kind by its name; entry points call this through :func:`all_kinds`."""
    KINDS[kind.name] = kind


_found: list[metadata.EntryPoint] | None = None


def _entry_points() -> list[metadata.EntryPoint]:
    """The group's entry points (read once per process): the built-ins first (from the metadata, else
    BUILTIN_KINDS), then the rest by name."""
    global _found
    if _found is None:
        _found = _read_entry_points()
    return _found


def _read_entry_points() -> list[metadata.EntryPoint]:
    from .casefiles import kind_entry_points

    found: dict[str, metadata.EntryPoint] = {}
    for ep in kind_entry_points():
        other = found.get(ep.name)
        if other is not None and other.value != ep.value:
            raise KindPluginError(f"{ENTRY_POINT_GROUP}: two entry points name the kind {ep.name!r} "
                                  f"({other.value} and {ep.value}); uninstall one")
        found[ep.name] = ep
    builtin = [found.pop(name) if name in found else metadata.EntryPoint(name, value, ENTRY_POINT_GROUP)
               for name, value in BUILTIN_KINDS.items()]
    return builtin + [found[name] for name in sorted(found)]


def _load(ep: metadata.EntryPoint) -> CaseKind:
    try:
        target = ep.load()
        # a class or a factory is called; an object that already is a kind is used as it is
        kind: CaseKind = target if hasattr(target, "entries") and not isinstance(target, type) else target()
    except Exception as exc:  # a broken plug-in names itself, not a traceback of importlib
        raise KindPluginError(f"{ENTRY_POINT_GROUP} entry point {ep.name} = {ep.value!r} "
                              f"could not be loaded: {type(exc).__name__}: {exc}") from exc
    missing = [a for a in ("name", "markers", "entries", "play", "grade") if not hasattr(kind, a)]
    if missing:
        raise KindPluginError(f"{ENTRY_POINT_GROUP} entry point {ep.name} = {ep.value!r} is not a case kind: "
                              f"no {', '.join(missing)} (see docs/kinds.md)")
    if kind.name != ep.name:
        raise KindPluginError(f"{ENTRY_POINT_GROUP} entry point {ep.name} = {ep.value!r} makes a kind named "
                              f"{kind.name!r}; the entry point's name must be the kind's name")
    return kind


def _plugins() -> None:
    global _loaded
    if not _loaded:
        for ep in _entry_points():
            if ep.name not in KINDS:  # a kind registered by hand (a test) stays
                register_kind(_load(ep))
        _loaded = True


def kind_names() -> list[str]:
    """Every kind's name, from the entry points and the kinds registered by hand, importing none."""
    return sorted({*KINDS, *(ep.name for ep in _entry_points())})


def kind_named(name: str) -> CaseKind:
    """The kind called `name`, loading only its own entry point (a ladder run never imports the call-site
    or pressure kinds); KeyError when no entry point names it."""
    if name not in KINDS:
        found = [ep for ep in _entry_points() if ep.name == name]
        if not found:
            raise KeyError(name)
        register_kind(_load(found[0]))
    return KINDS[name]


def plugin_kinds() -> list[CaseKind]:
    """The third-party kinds (every entry point beyond BUILTIN_KINDS), loaded: a broken one names itself
    at start-up, and their markers are registered before collection. The built-ins load by need."""
    return [kind_named(ep.name) for ep in _entry_points() if ep.name not in BUILTIN_KINDS]


def all_kinds() -> list[CaseKind]:
    """Every kind, in the entry points' order (the built-ins first), then those registered by hand: the
    built-ins load by need, so the registry's own order is whichever a run happened to read first."""
    _plugins()
    order = {ep.name: i for i, ep in enumerate(_entry_points())}
    return sorted(KINDS.values(), key=lambda kind: order.get(kind.name, len(order)))


def is_case_file(path: Path) -> bool:
    """A case file by its content (casefiles.shaped_as_case): a kind's signature or a plug-in kind's line.

    Installation files next to the tables are read by the tables that name them, not collected;
    any other TOML (a pyproject.toml in a folder that happens to be called callsite) is left alone.
    """
    from .casefiles import shaped_as_case

    return shaped_as_case(path)


def load_file(path: Path) -> tuple[CaseKind, list[Entry]]:
    """Read one case file and hand it to its kind; a CaseError names the file and the problem."""
    data, raw = read_toml(path)
    name = data.pop("kind", "episode")
    if not isinstance(name, str) or name not in kind_names():
        raise CaseError(path, [f"kind: unknown case kind {name!r}; valid: {', '.join(kind_names())}"])
    kind = kind_named(name)
    return kind, kind.entries(data, Path(path), hashlib.sha256(raw).hexdigest()[:16])

