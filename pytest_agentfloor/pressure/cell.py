"""One pressure cell as data: what the episode loop needs to show a menu and deliver results."""

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

    @property
    def cell(self) -> str:
        parts = [f"V{self.size}" if self.size is not None else "Vown"]
        if self.workflow:
            parts.append(self.workflow)
        parts.append(self.encoding)
        return "-".join(parts)

    def facets(self) -> dict[str, Any]:
        return {"family": self.family, "intent": self.intent, "V": self.size, "W": self.workflow,
                "D": self.encoding, "lane": self.lane, "cell": self.cell}
