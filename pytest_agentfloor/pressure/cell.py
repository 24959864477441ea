"""One pressure cell as data: what the episode loop needs to show a menu and deliver results.

A `PressureCell` is the pressure kind's `kindspec.EpisodePressure`: the episode loop and the case
schema read it through that protocol and import nothing of this package."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class PressureCell(BaseModel):
    """The pressures a resolved case runs under. `menu` is the ordered list of every schema name
    shown (operational and distractor); `offered` the operational tools on it."""

    model_config = ConfigDict(frozen=True)

    family: str
    intent: str | None = None
    size: int | None = None  # V; None: the case's own menu
    workflow: str | None = None  # W (families only)
    encoding: str = "raw"  # D
    lane: str = "fixed"  # fixed | routed
    menu: tuple[str, ...] = ()
    offered: tuple[str, ...] = ()
    #: the public route (workspace, region, collection) of the family's connector (pressure/routes.py);
    #: None: no tool declares a route (ladder cases under --agentfloor-menu)
    route: tuple[str, str, str] | None = None
    #: public handoffs: (record id, the id of the next record to read, or None where the chain ends)
    handoffs: tuple[tuple[str, str | None], ...] = ()
    calls: int | None = None  # a frontier cell: the reference program's length

    @property
    def cell(self) -> str:
        if self.calls is not None:
            return f"calls{self.calls}"
        parts = [f"V{self.size}" if self.size is not None else "Vown"]
        if self.workflow:
            parts.append(self.workflow)
        parts.append(self.encoding)
        return "-".join(parts)

    def distractor_names(self) -> tuple[str, ...]:
        return tuple(n for n in self.menu if n not in self.offered)

    def menu_schemas(self) -> list[dict[str, Any]]:
        from .menu import full_menu

        return full_menu(self)

    def public_result(self, name: str, args: dict[str, Any] | None, result: dict[str, Any]) -> dict[str, Any]:
        """`result` with the record's public handoff (``next_handoff``) when a read returns a record
        of the chain: ``{"tool": "lookup_record", "arguments": {"record_id": next}}``, or ``{}`` at its end."""
        if not self.handoffs or result.get("status") != "ok" or name not in ("lookup_record", "get_attribute"):
            return result
        data = result.get("data")
        rid = data.get("id", data.get("record_id")) if isinstance(data, dict) else None
        nxt = dict(self.handoffs).get(str(rid), "") if rid is not None else ""
        if nxt == "":  # not a record of the chain
            return result
        handoff = {} if nxt is None else {"tool": "lookup_record", "arguments": {"record_id": nxt}}
        return {**result, "next_handoff": handoff}

    def narrowed_menu(self) -> list[dict[str, Any]] | None:
        """The routed lane narrows the menu to the operational tools; the fixed lane never does."""
        if self.lane != "routed":
            return None
        from .menu import operational_menu

        return operational_menu(self)

    def deliver(self, result: dict[str, Any]) -> str:
        from .encoding import deliver

        return deliver(result, self.encoding)

    def distractor_result(self, name: str) -> dict[str, Any]:
        from .catalogue import distractor_result

        return distractor_result(name)

    def facets(self) -> dict[str, Any]:
        out = {"family": self.family, "intent": self.intent, "V": self.size, "W": self.workflow,
               "D": self.encoding, "lane": self.lane, "cell": self.cell}
        if self.calls is not None:
            out["calls"] = self.calls
        return out
