"""The repair table: each layer's repair against the plain harness on its own pressure (seed 002,
section 4.3), from run records.

A layer is a pressure axis with the switch aimed at it. Stressed (z = 1) and unstressed (z = 0)
levels, and the coordinates a paired unit holds fixed:

| layer | switch | z = 0 -> z = 1 | unit: configuration, family and |
|---|---|---|---|
| R | router (connector-first) | V 8 -> 128 | W, D |
| V | routed lane | V 8 -> 128 | W, D |
| W | workflow_prompt | W low -> high | V, D |
| D | interface_guide | D raw -> compact, typed or linked (pooled) | V, W |
| W (frontier) | controller | 2 -> 30 calls | |
| D (control) | canonical_delivery | 2 -> 30 calls | |

Our families have no catalogue beyond the visible menu, so the router is measured on the menu
pressure (V), not on seed 002's separate discovery study. A unit also holds the rest of the
harness fixed: a record whose arm holds the layer's switch is that repair's run of the unit whose
arm is the same without it, so repairs are paired with exactly the harness they changed. Arms that
hold two switches of one family of layers are left out of it. Clusters are families.
Activation: quantities.activation, Holm over the capacity layers present (R, V, W, D), and over
the controller with its wrong-layer control (canonical delivery), where the controller also needs
its wrong-layer advantage Delta > 0. The rows pool the configurations, as seed 002 does; each row
also holds every configuration's own L, Gamma and Sigma (``by_config``: estimates and intervals on
that configuration's units, no activation test), since a practitioner decides for one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from .quantities import NO_REPAIR, LayerRepair, Outcome, activation, as_dict, layer_repair
from .records import Run


@dataclass(frozen=True, slots=True)
class Layer:
    key: str
    switch: str
    axis: str  # V, W, D or calls
    group: str  # the Holm family: capacity or frontier


LAYERS: tuple[Layer, ...] = (
    Layer("R", "router", "V", "capacity"), Layer("V", "routed", "V", "capacity"),
    Layer("W", "workflow_prompt", "W", "capacity"), Layer("D", "interface_guide", "D", "capacity"),
    Layer("W (frontier)", "controller", "calls", "frontier"),
    Layer("D (control)", "canonical_delivery", "calls", "frontier"),
)
#: the layer whose activation also needs Delta > 0
NEEDS_DELTA: frozenset[str] = frozenset({"W (frontier)"})


def level(run: Run, axis: str) -> tuple[int, tuple[Any, ...]] | None:
    """(z, the coordinates the unit holds fixed) of a run on `axis`, or None when the run is on neither level."""
    if axis == "calls":
        return None if run.calls not in (2, 30) else (int(run.calls == 30), ())
    if run.frontier:
        return None
    if axis == "V":
        return None if run.V not in (8, 128) else (int(run.V == 128), (run.W, run.D))
    if axis == "W":
        return None if run.W not in ("low", "high") else (int(run.W == "high"), (run.V, run.D))
    return (int(run.D != "raw"), (run.V, run.W))


def outcomes(runs: Iterable[Run], axis: str, switches: Sequence[str]) -> list[Outcome]:
    """Each run as the outcome of one unit's arm: the switch of `switches` it holds (none: no repair)."""
    out = []
    for r in runs:
        lv = level(r, axis)
        held = r.arm & set(switches)
        if lv is None or len(held) > 1:
            continue
        arm = next(iter(held)) if held else NO_REPAIR
        rest = "+".join(sorted(r.arm - held))
        unit = "|".join([r.config, r.family, *map(str, lv[1]), rest])
        out.append(Outcome(unit=unit, cluster=r.family, arm=arm, stressed=bool(lv[0]), success=r.success))
    return out


def repair_table(runs: Sequence[Run], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                 alpha: float = 0.05) -> list[dict[str, Any]]:
    """One row per layer whose repair ran on paired units: L, Gamma, Sigma, Delta and the activation."""
    rows: list[dict[str, Any]] = []
    for group in ("capacity", "frontier"):
        layers = [lay for lay in LAYERS if lay.group == group]
        present = [lay for lay in layers if any(lay.switch in r.arm for r in runs)]
        results: dict[str, LayerRepair] = {}
        per: dict[str, dict[str, dict[str, Any] | None]] = {}
        for lay in present:
            others = [o.switch for o in present if o is not lay]
            outs = outcomes(runs, lay.axis, [lay.switch, *others])
            lr = layer_repair(outs, layer=lay.key, repair=lay.switch,
                              others=[o for o in others if any(x.arm == o for x in outs)],
                              n_boot=n_boot, seed=seed)
            if lr.L.units:
                results[lay.key] = lr
                mine = {o.unit.split("|", 1)[0] for o in outs}
                per[lay.key] = {c: _brief(layer_repair([o for o in outs if o.unit.split("|", 1)[0] == c],
                                                       layer=lay.key, repair=lay.switch, n_boot=n_boot, seed=seed))
                                for c in sorted(mine)}
        acts = activation(results, alpha=alpha, require_delta=[k for k in results if k in NEEDS_DELTA])
        for key, lr in results.items():
            rows.append({"group": group, **as_dict(lr, acts[key]),
                         "by_config": {c: v for c, v in per[key].items() if v is not None}})
    return rows


def _brief(lr: LayerRepair) -> dict[str, Any] | None:
    """One configuration's L, Gamma and Sigma (pp and interval), or None when it has no paired unit."""
    if not lr.L.units:
        return None
    return {"units": lr.L.units, **{q: {"pp": e.pp, "lo": e.lo, "hi": e.hi}
                                    for q, e in (("L", lr.L), ("gamma", lr.gamma), ("sigma", lr.sigma))}}
