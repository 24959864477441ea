"""Audit of the public route coordinates: on every family cell the connector-first router, reading
only the request and the public descriptions, keeps exactly the operational tools; a request that
names no route or two leaves the menu unchanged; ladder menus declare no route."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentfloor.harness_repairs import declared_route, route_menu
from pytest_agentfloor.pressure.compiler import apply_pressure
from pytest_agentfloor.pressure.menu import operational_menu
from pytest_agentfloor.pressure.routes import REGIONS, WORKSPACES, distractor_route, family_route, sentence

from .helpers import entries

ENTRIES = entries() + entries(frontier=True)


def _names(menu: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in menu]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_the_router_keeps_exactly_the_operational_tools_of_every_cell(entry: Any) -> None:
    for v, lane in entry.specs:
        case = entry.resolve(v, lane)
        menu = case.pressure.menu_schemas()
        routed, how = route_menu(case.prompt, menu)
        assert how == "narrowed" and routed is not None, (v, lane, how)
        assert sorted(_names(routed)) == sorted(case.pressure.offered), (v, lane)
        # the routed lane's narrowed menu is the same set: the router reaches it before the first request
        assert sorted(_names(routed)) == sorted(_names(operational_menu(case.pressure)))


@pytest.mark.parametrize("entry", ENTRIES[:3], ids=lambda e: e.id)
def test_the_router_depends_on_the_public_surface_only(entry: Any) -> None:
    """The same request and menu give the same menu whatever the hidden program and gold say; a
    request that names no route, or a route besides its own, leaves the menu unchanged."""
    case = entry.resolve(entry.specs[-3][0], "fixed")  # a V=128 cell
    menu = case.pressure.menu_schemas()
    hidden = case.model_copy(update={"reference": tuple(reversed(case.reference)), "steps": (),
                                     "gold": case.gold.model_copy(update={"evidence": [], "submission": None})})
    assert route_menu(hidden.prompt, hidden.pressure.menu_schemas()) == route_menu(case.prompt, menu)
    own = case.prompt.rsplit(" Use the connector", 1)[0]
    assert route_menu(own, menu) == (None, "absent")
    other = next(t for t in menu if t["function"]["name"] not in case.pressure.offered)
    assert route_menu(f"{case.prompt} {sentence(declared_route(other))}", menu) == (None, "ambiguous")


def test_routes_are_deterministic_and_never_a_distractor_systems() -> None:
    assert family_route("overdue-invoice", "accounting", "invoices") == family_route("overdue-invoice", "accounting",
                                                                                      "invoices")
    assert family_route("x", "email", "c")[0] == "mailroom" and family_route("x", "email", "c")[1] in REGIONS
    systems = {distractor_route(name)[0] for e in ENTRIES for v, i in e.specs[:1]
               for name in e.resolve(v, i).pressure.distractor_names()}
    assert systems and not systems & set(WORKSPACES.values())


def test_ladder_menus_declare_no_route() -> None:
    """--agentfloor-menu on a ladder case: distractors without routes, so the router finds none."""
    case = ENTRIES[0].resolve("V8-low-raw", "fixed").model_copy(update={"pressure": None})
    menu = apply_pressure(case, size=32, family="B1").pressure.menu_schemas()
    assert all(declared_route(t) is None for t in menu)
    assert route_menu("workspace crm region eu-west collection accounts", menu) == (None, "absent")
