"""Public route coordinates (seed 002's connector routes): what the connector-first router reads.

A tool's public description may end with ``Route: workspace W, region R, collection C.``; a user
request names the route its records live on. The compiler gives every family a route (the
workspace of its intent, a region seeded by the family id, the subject's collection) and every
distractor the route of its own system, so on a family's menu exactly the operational read tools
declare the family's route. Nothing here is hidden: routes are in the descriptions and the request.
Ladder cases under ``--agentfloor-menu`` get no routes (their menus stay as they were).
"""

from __future__ import annotations

import hashlib
from typing import Any

Route = tuple[str, str, str]

#: the workspace of each intent's records (none is the name of a distractor system)
WORKSPACES: dict[str, str] = {"accounting": "ledger", "email": "mailroom", "files": "docstore", "calendar": "agenda"}
#: regions shared by families and distractors, so a region alone never picks a route
REGIONS: tuple[str, ...] = ("eu-west", "eu-north", "us-east", "us-west", "apac")
#: the operational tools that read records through the family's connector (submit_decision acts on
#: the subject and declares no route, so the router keeps it)
ROUTED_TOOLS: frozenset[str] = frozenset({"search_records", "lookup_record", "get_attribute"})


def _pick(options: tuple[str, ...], *parts: str) -> str:
    h = int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16)
    return options[h % len(options)]


def family_route(family: str, intent: str, collection: str) -> Route:
    """The route of a family's records (deterministic: the same in every process)."""
    return WORKSPACES[intent], _pick(REGIONS, "region", family), collection


def distractor_route(name: str) -> Route:
    """The route of a distractor's own system: workspace = its system, collection = what it lists."""
    system = name.split("_", 1)[0]
    from .catalogue import PLURALS

    return system, _pick(REGIONS, "region", system), PLURALS[system]


def sentence(route: Route) -> str:
    """How a request names its route (each coordinate as a whole word)."""
    w, r, c = route
    return f"Use the connector of workspace {w}, region {r}, collection {c}."


def declare(schema: dict[str, Any], route: Route | None) -> dict[str, Any]:
    """`schema` with its route appended to the public description (a new dict; None: unchanged)."""
    if route is None:
        return schema
    fn = schema["function"]
    w, r, c = route
    return {**schema, "function": {**fn, "description": f"{fn['description']} Route: workspace {w}, region {r}, "
                                                       f"collection {c}."}}
