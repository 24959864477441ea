"""Pressure run records as the repair analyses read them: configuration, arm, cell, outcome.

* **Configuration**: the model name, with an arm's suffix removed (``--agentfloor-arms`` names the
  arms of model M ``M+router``, ``M+cap16``, ...), so the arms of one configuration pair up.
  Records keep their own names, so two arms never collapse into one run in the reports.
* **Arm**: the harness switches a record ran under: its repairs (``config.repairs``), a raised
  completion cap (``capN`` from ``config.cap_scale``) and the routed lane (``routed``, the repair
  of layer V). The plain harness, ``none``, is the fixed lane, no repair, the frozen cap.
* **Cell**: capacity cells (V, W, D) and frontier cells (calls); an episode's success is 1 or 0
  (an infrastructure failure is a 0, as in seed 002).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...stats.pressure import KIND

PLAIN: frozenset[str] = frozenset()
ROUTED = "routed"


@dataclass(frozen=True, slots=True)
class Run:
    config: str
    arm: frozenset[str]
    family: str
    intent: str
    cell: str
    V: int | None
    W: str | None
    D: str | None
    calls: int | None  # a frontier cell's length; None for capacity cells
    run: int
    success: float
    truncated: bool
    tokens: float
    wall_s: float
    cost: float | None
    termination: str
    model_calls: int
    controller_calls: int
    requests: int

    @property
    def frontier(self) -> bool:
        return self.calls is not None


def arm_label(arm: Iterable[str]) -> str:
    """``none``, or the switches joined by '+' (repairs sorted, then capN, then routed)."""
    parts = sorted(a for a in arm if a != ROUTED and not a.startswith("cap")) \
        + sorted(a for a in arm if a.startswith("cap")) + [a for a in arm if a == ROUTED]
    return "+".join(parts) or "none"


def _arm(record: Mapping[str, Any]) -> frozenset[str]:
    """From the facets (what reaches the controller under xdist), else the stored config."""
    facets = record["facets"]
    cfg = record.get("config")
    cfg = facets if "repairs" in facets or "cap_scale" in facets or not isinstance(cfg, Mapping) else cfg
    out = {str(x) for x in cfg.get("repairs") or ()}
    scale = cfg.get("cap_scale")
    if isinstance(scale, int) and not isinstance(scale, bool) and scale > 1:
        out.add(f"cap{scale}")
    if record["facets"].get("lane") == ROUTED:
        out.add(ROUTED)
    return frozenset(out)


def configuration(record: Mapping[str, Any], arm: frozenset[str]) -> str:
    """The configuration a record belongs to: its model name without its own arm's suffix."""
    name = str(record.get("model"))
    own = arm_label(arm - {ROUTED})
    return name[: -len(own) - 1] if own != "none" and name.endswith(f"+{own}") else name


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def runs(records: Iterable[Mapping[str, Any]]) -> list[Run]:
    """Every pressure record as a Run (records of other kinds are left out)."""
    out = []
    for r in records:
        f = r.get("facets")
        if r.get("kind") != KIND or not isinstance(f, Mapping):
            continue
        arm = _arm(r)
        cost = r.get("cost_usd")
        out.append(Run(
            config=configuration(r, arm), arm=arm, family=str(f.get("family")), intent=str(f.get("intent")),
            cell=str(f.get("cell")), V=int(f["V"]) if isinstance(f.get("V"), int) else None,
            W=None if f.get("W") is None else str(f["W"]), D=None if f.get("D") is None else str(f["D"]),
            calls=int(f["calls"]) if isinstance(f.get("calls"), int) else None, run=int(r.get("run") or 0),
            success=1.0 if r.get("passed") else 0.0,
            truncated=r.get("terminal_flag") == "truncation" or r.get("termination") == "truncated",
            tokens=_num(r.get("tokens_in")) + _num(r.get("tokens_out")), wall_s=_num(r.get("wall_s")),
            cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
            termination=str(r.get("termination")), model_calls=int(_num(r.get("calls"))) - int(
                _num(f.get("controller_calls"))),
            controller_calls=int(_num(f.get("controller_calls"))), requests=int(_num(r.get("turns"))),
        ))
    return out
