"""Visible menus (pressure V): the operational tools among seeded distractors, nested across sizes."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from ..sandbox.schemas import TOOL_SCHEMAS
from .catalogue import DISTRACTOR_NAMES, DISTRACTORS
from .routes import ROUTED_TOOLS, declare, distractor_route

MENU_SIZES: tuple[int, ...] = (8, 32, 128)
LANES: tuple[str, ...] = ("fixed", "routed")
_CACHE: dict[tuple[str, ...], list[dict[str, Any]]] = {}


def _rng(*parts: object) -> random.Random:
    """A generator seeded by text only, so every process draws the same menu."""
    return random.Random(int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16], 16))


def max_size(operational: int) -> int:
    return operational + len(DISTRACTOR_NAMES)


def draw(family: str, operational: tuple[str, ...], size: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(menu in shown order, operational tools on it) for a menu of `size` schemas.

    Distractors come from one permutation per family, so V=8 is inside V=32 inside V=128; the
    shown order is shuffled per (family, size), so operational tools sit at no fixed position.
    A size below the number of operational tools keeps the first ones (obligation A then fails).
    """
    if size < 1 or size > max_size(len(operational)):
        raise ValueError(f"menu size {size} is outside 1..{max_size(len(operational))}")
    offered = operational[:size]
    pool = list(DISTRACTOR_NAMES)
    _rng("distractors", family).shuffle(pool)
    shown = list(offered) + pool[:size - len(offered)]
    _rng("order", family, size).shuffle(shown)
    return tuple(shown), offered


def _schema(name: str, route: tuple[str, str, str] | None) -> dict[str, Any]:
    if name in TOOL_SCHEMAS:
        return declare(TOOL_SCHEMAS[name], route if name in ROUTED_TOOLS else None)
    return declare(DISTRACTORS[name], distractor_route(name) if route is not None else None)


def _schemas(names: tuple[str, ...], route: tuple[str, str, str] | None = None) -> list[dict[str, Any]]:
    """The schemas of `names`; with a family route every read tool and distractor declares its route."""
    key = (*names, "|route", *(route or ()))
    if key not in _CACHE:
        _CACHE[key] = [_schema(n, route) for n in names]
    return _CACHE[key]


def full_menu(cell: Any) -> list[dict[str, Any]]:
    return _schemas(tuple(cell.menu), cell.route)


def operational_menu(cell: Any) -> list[dict[str, Any]]:
    return _schemas(tuple(n for n in cell.menu if n in cell.offered), cell.route)
