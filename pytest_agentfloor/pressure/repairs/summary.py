"""Everything the repair section reports, from run records (records.py): the repair table
(layers.py), repairs against configuration switches (switches.py), sentinel repeats (repeats.py),
the probe-then-repair policy (policy.py), the cap sweep (sweep.py) and the frontier (frontier.py).

Which cells are a repair's stressed cells (for the switch comparison, the repeated gains and the
policy's blocks): the router, the routed lane and a larger cap act on V=128; the workflow prompt on
W high; the interface guide on the non-raw encodings; the controller on the 30-call frontier and on
W high; canonical delivery on the 30-call frontier and the non-raw encodings. An arm of several
switches is stressed where any of them is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from .frontier import frontier
from .layers import repair_table
from .policy import Attempt, Block, probe_then_repair
from .quantities import NO_REPAIR, Outcome
from .records import PLAIN, Run, arm_label, runs
from .repeats import repeated_gain, repeats
from .sweep import cap_sweep
from .switches import CellRun, compare, counts


def _stressed_by(switch: str, r: Run) -> bool:
    if switch in ("router", "routed") or switch.startswith("cap"):
        return r.V == 128
    if switch == "workflow_prompt":
        return r.W == "high"
    if switch == "interface_guide":
        return not r.frontier and r.D != "raw"
    if switch == "controller":
        return r.calls == 30 or r.W == "high"
    if switch == "canonical_delivery":
        return r.calls == 30 or (not r.frontier and r.D != "raw")
    return False


def stressed(arm: Iterable[str], r: Run) -> bool:
    return any(_stressed_by(s, r) for s in arm)


def _unit(r: Run) -> str:
    return f"{r.family}|{r.cell}"


def switch_comparison(rs: list[Run], *, n_boot: int, seed: int) -> dict[str, Any] | None:
    """Each incumbent's arms against every other configuration's plain harness on the arm's stressed cells."""
    configs = sorted({r.config for r in rs if r.arm == PLAIN})
    arms = sorted({(r.config, r.arm) for r in rs if r.arm != PLAIN}, key=lambda k: (k[0], arm_label(k[1])))
    if len(configs) < 2 or not arms:
        return None
    cells: list[CellRun] = [CellRun(r.config, NO_REPAIR, _unit(r), r.family, r.success, r.tokens, r.wall_s,
                                    float("nan") if r.cost is None else r.cost) for r in rs if r.arm == PLAIN]
    for config, arm in arms:
        cells += [CellRun(config, arm_label(arm), _unit(r), r.family, r.success, r.tokens, r.wall_s,
                          float("nan") if r.cost is None else r.cost)
                  for r in rs if r.config == config and r.arm == arm and stressed(arm, r)]
    results = compare(cells, n_boot=n_boot, seed=seed)
    return {"rows": [{"incumbent": x.incumbent, "repair": x.repair, "success_superior": x.success_superior,
                      "cost_superior": x.cost_superior, "nondominated": x.nondominated,
                      "versus": [{"switch": v.switch, "units": v.units, "clusters": v.clusters,
                                  "success_pp": v.success_pp, "success_lo": v.success_lo, "success_hi": v.success_hi,
                                  "cost_diff": v.cost_diff, "cost_lo": v.cost_lo, "cost_hi": v.cost_hi,
                                  "cost_known": v.cost_known, "dominates": v.dominates} for v in x.versus]}
                     for x in results if x.versus],
            "counts": counts([x for x in results if x.versus])}


def repeat_table(rs: list[Run], *, n_boot: int, seed: int) -> dict[str, Any] | None:
    """Sentinel repeats per arm (runs of one condition group), and each single switch's repeated gain."""
    n = max((r.run for r in rs), default=0) + 1
    if n < 2:
        return None
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rs:
        groups[arm_label(r.arm)][f"{r.config}|{r.family}|{r.cell}"].append(r.success)
    rows = []
    for label in sorted(groups, key=lambda a: (a != "none", a)):
        x = repeats(groups[label], runs=n)
        rows.append({"arm": label, "groups": x.groups, "incomplete": x.incomplete, "runs": n, "pass_at_1": x.pass_at_1,
                     "all_runs": x.all_runs, "any_run": x.any_run, "disagreement": x.disagreement})
    gains = []
    for switch in sorted({a for r in rs for a in r.arm}):
        outs = [Outcome(f"{r.config}|{_unit(r)}", r.family, NO_REPAIR if r.arm == PLAIN else switch,
                        stressed(frozenset({switch}), r), r.success)
                for r in rs if r.arm in (PLAIN, frozenset({switch}))]
        g = repeated_gain(outs, switch, n_boot=n_boot, seed=seed)
        if g.units:
            gains.append({"repair": switch, "units": g.units, "pp": g.pp, "lo": g.lo, "hi": g.hi})
    return {"rows": rows, "gains": gains}


def policy_table(rs: list[Run]) -> list[dict[str, Any]] | None:
    """Probe then act, per incumbent and action: a block is (configuration, family, cell); the probe is
    its plain run 0 (a practitioner decides for the configuration they run, so blocks are not pooled)."""
    by: dict[tuple[str, str, str], dict[str, dict[int, Run]]] = defaultdict(lambda: defaultdict(dict))
    for r in rs:
        by[(r.config, r.family, r.cell)][arm_label(r.arm)][r.run] = r
    configs = sorted({c for c, _, _ in by})
    blocks: dict[str, list[tuple[Block, Block | None]]] = defaultdict(list)
    for (config, family, cell), arms in sorted(by.items()):
        probe = arms.get("none", {}).get(0)
        if probe is None:
            continue
        acts: dict[str, Run] = {}
        if 1 in arms["none"]:
            acts["retry"] = arms["none"][1]
        acts.update({a: runs_[0] for a, runs_ in arms.items() if a != "none" and 0 in runs_})
        for other in configs:
            sw = by.get((other, family, cell), {}).get("none", {}).get(0) if other != config else None
            if sw is not None:
                acts[f"switch to {other}"] = sw
        if not acts:
            continue
        tok = Block(Attempt(bool(probe.success), probe.tokens), {a: Attempt(bool(x.success), x.tokens)
                                                                 for a, x in acts.items()})
        usd = None
        if probe.cost is not None and all(x.cost is not None for x in acts.values()):
            usd = Block(Attempt(bool(probe.success), probe.cost or 0.0),
                        {a: Attempt(bool(x.success), x.cost or 0.0) for a, x in acts.items()})
        blocks[config].append((tok, usd))
    out = []
    for config, mine in sorted(blocks.items()):
        names = sorted({a for b, _ in mine for a in b.actions}, key=lambda a: (a.startswith("switch"), a != "retry", a))
        for row in probe_then_repair([b for b, _ in mine], names):
            priced = [u for b, u in mine if row.action in b.actions]
            usd_rows = (probe_then_repair([u for u in priced if u is not None], [row.action])
                        if priced and all(u is not None for u in priced) else [])
            out.append({"incumbent": config, "action": row.action, "blocks": row.blocks,
                        "probe_failed": row.probe_failed, "recovered": row.recovered,
                        "recovered_share": row.recovered_share, "policy_success": row.policy_success,
                        "tokens_per_1000_with_probe": row.cost_per_1000_with_probe,
                        "usd_per_1000_with_probe": usd_rows[0].cost_per_1000_with_probe if usd_rows else None,
                        "usd_per_1000_without_probe": usd_rows[0].cost_per_1000_without_probe if usd_rows else None})
    return out or None


def summarise(records: Iterable[Mapping[str, Any]], *, n_boot: int = DEFAULT_N_BOOT,
              seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """The repair section's statistic, or None when the records hold no arm but the plain harness and
    no frontier cell (the capacity section covers those)."""
    rs = runs(records)
    if not any(r.arm != PLAIN or r.frontier for r in rs):
        return None
    out: dict[str, Any] = {
        "configs": sorted({r.config for r in rs}),
        "arms": sorted({arm_label(r.arm) for r in rs}, key=lambda a: (a != "none", a)),
        "layers": repair_table(rs, n_boot=n_boot, seed=seed),
        "switches": switch_comparison(rs, n_boot=n_boot, seed=seed),
        "repeats": repeat_table(rs, n_boot=n_boot, seed=seed),
        "policy": policy_table(rs),
        "cap_sweep": cap_sweep(rs, n_boot=n_boot, seed=seed),
        "frontier": frontier(rs, n_boot=n_boot, seed=seed),
    }
    return out
