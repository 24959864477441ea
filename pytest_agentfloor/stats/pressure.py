"""Statistics of the controlled pressures (seed 002), pure functions of pressure run records.

* **Eight contrasts**, each a paired within-unit difference in success in pp, where a unit is
  one (model, family) and its success in a cell the mean over its runs: with endpoint cells
  {8,128} x {low,high} x {raw,linked} and s_a(c) = -1 / +1 at the low / high level of axis a,
  a main effect is sum_c s_a(c) m_c / 4 (four paired differences), an interaction
  sum_c s_a(c) s_b(c) m_c / 2 (two differences-in-differences); compact and typed are the
  checkpoint (8, low, D) minus (8, low, raw). Seed 002 Appendix D.
* **Intervals**: 95% percentile cluster bootstrap, 10,000 draws, resampling families (primary),
  then intents, then models (configurations); a unit belongs to one cluster of each kind. The
  two-sided p value is that of the centred bootstrap: the share of replicates with
  |theta* - theta| >= |theta|, floored at 1/B; Holm over the eight, per resampling unit.
* **Exact sign-flip test over intents**: the statistic is the mean of the intent means; every one
  of the 2^k sign assignments of the intent means is enumerated; two-sided p = share with
  |T| >= |T_obs| (ties included). Holm over the eight.
* **Truncation** (menu pressure): share of episodes cut at the completion cap per V level; the
  matched pairs (model, family, W, D at the endpoint cells) at V=8 and V=128: lost and gained
  pairs, lost pairs whose V=128 variant was truncated and the pp they carry, the effect in the
  stratum where neither variant was truncated, and worst-case bounds when every truncated failure
  could have gone either way (non-truncated outcomes fixed).
* **Routed versus fixed lane**: paired over (model, family, cell), family-cluster bootstrap;
  tokens and schema exposures (schemas shown, summed over requests) per episode.
* **Failure records** per pressure level: (first unmet obligation, terminal flag) counts.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, resample_weights, tail_rank
from .multiplicity import holm

KIND = "pressure"
V_LO, V_HI = 8, 128
ENDPOINTS = [(v, w, d) for v in (V_LO, V_HI) for w in ("low", "high") for d in ("raw", "linked")]
CONTRASTS: tuple[str, ...] = ("V", "W", "linked", "VxW", "VxD", "WxD", "compact", "typed")
CLUSTERS: tuple[str, ...] = ("family", "intent", "model")


def _sign(axis: str, cell: tuple[int, str, str]) -> int:
    v, w, d = cell
    return {"V": 1 if v == V_HI else -1, "W": 1 if w == "high" else -1, "D": 1 if d == "linked" else -1}[axis]


def contrast_weights(name: str) -> dict[tuple[int, str, str], float]:
    """The cell weights of one contrast (they sum to zero)."""
    if name in ("compact", "typed"):
        return {(V_LO, "low", name): 1.0, (V_LO, "low", "raw"): -1.0}
    axes = {"V": ("V",), "W": ("W",), "linked": ("D",), "VxW": ("V", "W"), "VxD": ("V", "D"), "WxD": ("W", "D")}[name]
    scale = 4.0 if len(axes) == 1 else 2.0
    return {c: math.prod(_sign(a, c) for a in axes) / scale for c in ENDPOINTS}


def pressure_records(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The capacity cells' records (the workflow frontier's cells, facets with `calls`, report apart)."""
    return [r for r in records if r.get("kind") == KIND and isinstance(r.get("facets"), Mapping)
            and r["facets"].get("calls") is None]


def switched(record: Mapping[str, Any]) -> bool:
    """A record of a repair arm or a raised cap (config.repairs, config.cap_scale), not the frozen harness."""
    facets = record.get("facets")
    cfg = facets if isinstance(facets, Mapping) and ("repairs" in facets or "cap_scale" in facets) \
        else record.get("config")
    if not isinstance(cfg, Mapping):
        return False
    scale = cfg.get("cap_scale")
    return bool(cfg.get("repairs")) or (isinstance(scale, int) and not isinstance(scale, bool) and scale > 1)


def _cell(f: Mapping[str, Any]) -> tuple[int, str, str]:
    return int(f["V"]), str(f["W"]), str(f["D"])


def _success(r: Mapping[str, Any]) -> float:
    return 1.0 if r.get("passed") else 0.0  # an infrastructure failure counts as a failure (seed 002)


def unit_table(records: Iterable[Mapping[str, Any]], lane: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(model, family) -> {"intent", "cells": {cell: mean success over runs}} for one lane."""
    acc: dict[tuple[str, str], dict[tuple[int, str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    intent: dict[tuple[str, str], str] = {}
    for r in records:
        f = r["facets"]
        if f.get("lane") != lane:
            continue
        key = (str(r["model"]), str(f["family"]))
        acc[key][_cell(f)].append(_success(r))
        intent[key] = str(f.get("intent"))
    return {k: {"intent": intent[k], "cells": {c: sum(v) / len(v) for c, v in cells.items()}}
            for k, cells in acc.items()}


def unit_differences(units: Mapping[tuple[str, str], Mapping[str, Any]], name: str) -> list[tuple[str, str, str, float]]:
    """(model, family, intent, difference in pp) for every unit holding all cells of the contrast."""
    weights = contrast_weights(name)
    out = []
    for (model, family), u in sorted(units.items()):
        if all(c in u["cells"] for c in weights):
            out.append((model, family, u["intent"], 100.0 * sum(w * u["cells"][c] for c, w in weights.items())))
    return out


def cluster_bootstrap(values: np.ndarray, clusters: list[str], *, n_boot: int = DEFAULT_N_BOOT,
                      seed: int = DEFAULT_SEED, level: float = 0.95) -> tuple[float, float, float, float]:
    """(estimate, lower, upper, centred two-sided p) of the mean of `values`, resampling clusters."""
    names = sorted(set(clusters))
    idx = np.array([names.index(c) for c in clusters])
    sums = np.bincount(idx, values, minlength=len(names))
    counts = np.bincount(idx, minlength=len(names)).astype(float)
    est = float(values.mean())
    w = resample_weights(len(names), n_boot, seed)
    reps = np.sort((w @ sums) / np.maximum(w @ counts, 1e-300))
    k = tail_rank(n_boot, (1 - level) / 2)
    lo, hi = float(reps[k - 1]), float(reps[n_boot - k])
    p = max(1.0 / n_boot, float(np.mean(np.abs(reps - est) >= abs(est) - 1e-12))) if est != 0 else 1.0
    return est, lo, hi, min(1.0, p)


def sign_flip_p(group_means: Iterable[float]) -> float:
    """Exact two-sided sign-flip p value of the mean of `group_means` (all 2^k flips)."""
    x = np.asarray(list(group_means), dtype=float)
    if x.size == 0:
        return 1.0
    obs = abs(x.mean())
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=x.size)))
    stats = np.abs((flips * x).mean(axis=1))
    return float(np.mean(stats >= obs - 1e-12))


def contrasts(records: Iterable[Mapping[str, Any]], lane: str, *, n_boot: int = DEFAULT_N_BOOT,
              seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """The eight contrasts for one lane, each with its interval and Holm-adjusted p per unit of resampling."""
    units = unit_table(pressure_records(records), lane)
    rows = []
    for name in CONTRASTS:
        diffs = unit_differences(units, name)
        row: dict[str, Any] = {"contrast": name, "lane": lane, "units": len(diffs)}
        if diffs:
            values = np.array([d[3] for d in diffs])
            for ci, col in zip(CLUSTERS, (1, 2, 0)):
                est, lo, hi, p = cluster_bootstrap(values, [str(d[col]) for d in diffs], n_boot=n_boot, seed=seed)
                row.update({"pp": est, f"{ci}_lo": lo, f"{ci}_hi": hi, f"{ci}_p": p,
                            f"{ci}_clusters": len({d[col] for d in diffs})})
            by_intent: dict[str, list[float]] = defaultdict(list)
            for d in diffs:
                by_intent[d[2]].append(d[3])
            row["intent_means"] = {k: float(np.mean(v)) for k, v in sorted(by_intent.items())}
            row["signflip_p"] = sign_flip_p(row["intent_means"].values())
        rows.append(row)
    for key in [f"{c}_p" for c in CLUSTERS] + ["signflip_p"]:
        have = [r for r in rows if key in r]
        if have:
            for r, adj in zip(have, holm([r[key] for r in have])):
                r[f"{key}_holm"] = float(adj)
    return rows


def _truncated(r: Mapping[str, Any]) -> bool:
    return r.get("terminal_flag") == "truncation" or r.get("termination") == "truncated"


def truncation(records: Iterable[Mapping[str, Any]], lane: str) -> dict[str, Any] | None:
    """Truncation shares per V and the decomposition of the menu effect over matched pairs."""
    recs = [r for r in pressure_records(records) if r["facets"].get("lane") == lane]
    if not recs:
        return None
    share = {}
    for v in sorted({int(r["facets"]["V"]) for r in recs}):
        at = [r for r in recs if int(r["facets"]["V"]) == v]
        share[v] = {"episodes": len(at), "truncated": sum(_truncated(r) for r in at),
                    "share": sum(_truncated(r) for r in at) / len(at),
                    "before_first_call": sum(_truncated(r) and not r.get("calls") for r in at)}
    arm: dict[tuple[Any, ...], dict[int, tuple[float, bool]]] = defaultdict(dict)
    for r in recs:
        f = r["facets"]
        if int(f["V"]) in (V_LO, V_HI) and f["D"] in ("raw", "linked"):
            arm[(r["model"], f["family"], f["W"], f["D"], r.get("run", 0))][int(f["V"])] = (_success(r), _truncated(r))
    pairs = [(a[V_LO], a[V_HI]) for a in arm.values() if V_LO in a and V_HI in a]
    # truncated failures in each arm of the three main effects, over the endpoint cells
    ends = [r for r in recs if (int(r["facets"]["V"]), r["facets"]["W"], r["facets"]["D"]) in ENDPOINTS]
    arms = {axis: {str(level): sum(1 for r in ends if str(r["facets"][key]) == str(level) and _truncated(r))
                   for level in levels}
            for axis, key, levels in (("V", "V", (V_LO, V_HI)), ("W", "W", ("low", "high")),
                                      ("linked", "D", ("raw", "linked")))}
    out: dict[str, Any] = {"lane": lane, "per_V": share, "pairs": len(pairs), "truncated_by_arm": arms}
    if not pairs:
        return out
    n = len(pairs)
    lost = [(lo, hi) for lo, hi in pairs if lo[0] > hi[0]]
    gained = [(lo, hi) for lo, hi in pairs if lo[0] < hi[0]]
    lost_trunc = [p for p in lost if p[1][1]]
    neither = [(lo, hi) for lo, hi in pairs if not lo[1] and not hi[1]]
    effect = 100.0 * sum(hi[0] - lo[0] for lo, hi in pairs) / n
    # worst cases: a truncated failure may resolve either way; everything else keeps its outcome
    lower = 100.0 * sum((0.0 if hi[1] else hi[0]) - (1.0 if lo[1] else lo[0]) for lo, hi in pairs) / n
    upper = 100.0 * sum((1.0 if hi[1] else hi[0]) - (0.0 if lo[1] else lo[0]) for lo, hi in pairs) / n
    out.update({
        "effect_pp": effect, "lost": len(lost), "gained": len(gained),
        "lost_truncated_at_V128": len(lost_trunc), "pp_lost": 100.0 * len(lost) / n,
        "pp_lost_in_truncated": 100.0 * len(lost_trunc) / n,
        "neither_truncated": len(neither),
        "effect_neither_truncated_pp": (100.0 * sum(hi[0] - lo[0] for lo, hi in neither) / len(neither)
                                        if neither else None),
        "bounds_pp": [lower, upper],
    })
    return out


def _exposures(r: Mapping[str, Any]) -> float | None:
    x = r["facets"].get("exposures")
    return float(x) if isinstance(x, (int, float)) else None


def lanes(records: Iterable[Mapping[str, Any]], *, n_boot: int = DEFAULT_N_BOOT,
          seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """Routed minus fixed, paired on (model, family, cell, run)."""
    by: dict[tuple[Any, ...], dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in pressure_records(records):
        f = r["facets"]
        by[(r["model"], f["family"], f["cell"], r.get("run", 0))][str(f.get("lane"))] = r
    pairs = [(k, d["fixed"], d["routed"]) for k, d in sorted(by.items()) if "fixed" in d and "routed" in d]
    if not pairs:
        return None
    diffs = np.array([100.0 * (_success(ro) - _success(fx)) for _, fx, ro in pairs])
    est, lo, hi, p = cluster_bootstrap(diffs, [k[1] for k, _, _ in pairs], n_boot=n_boot, seed=seed)
    tok = [float((fx.get("tokens_in", 0) + fx.get("tokens_out", 0)) - (ro.get("tokens_in", 0) + ro.get("tokens_out", 0)))
           for _, fx, ro in pairs]
    exp = [(_exposures(fx), _exposures(ro)) for _, fx, ro in pairs]
    exp_d = [a - b for a, b in exp if a is not None and b is not None]
    return {"pairs": len(pairs), "routed_minus_fixed_pp": est, "lo": lo, "hi": hi, "p": p,
            "fixed_extra_tokens": float(np.mean(tok)),
            "fixed_extra_exposures": float(np.mean(exp_d)) if exp_d else None}


LEVELS: tuple[tuple[str, str], ...] = (("V", "V"), ("W", "W"), ("D", "D"))


def failure_records(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Failed episodes per pressure level and (first unmet obligation, terminal flag)."""
    counts: dict[tuple[str, str, str, str], int] = defaultdict(int)
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for r in pressure_records(records):
        f = r["facets"]
        for axis, key in LEVELS:
            level = f"{axis}{f[key]}" if axis == "V" else str(f[key])
            totals[(axis, level)] += 1
            if not r.get("passed"):
                ob = r.get("first_unmet") or ("infra" if r.get("infra_error") else "-")
                counts[(axis, level, ob, r.get("terminal_flag") or "-")] += 1
    ordered = sorted(counts.items(), key=lambda kv: (kv[0][0], _order(kv[0][0], kv[0][1]), -kv[1]))
    return [{"axis": a, "level": lv, "obligation": ob, "flag": fl, "failures": n, "episodes": totals[(a, lv)]}
            for (a, lv, ob, fl), n in ordered]


#: the design order of the named levels of each axis (V levels sort by their number)
NAMED_LEVELS: dict[str, tuple[str, ...]] = {"W": ("low", "medium", "high"), "D": ("raw", "compact", "typed", "linked")}

CHECKPOINT_W: tuple[str, ...] = ("low", "medium", "high")


def checkpoint(records: Iterable[Mapping[str, Any]], *, n_boot: int = DEFAULT_N_BOOT,
               seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """The W medium checkpoint (8, medium, raw) beside (8, low, raw) and (8, high, raw), per lane: mean
    success over the units (model, family) holding all three, and medium - low and high - medium with
    family-cluster intervals. Exploratory (curvature), as in seed 002: not one of the eight contrasts."""
    out = {}
    for lane in sorted({str(r["facets"].get("lane")) for r in pressure_records(records)}):
        units = unit_table(records, lane)
        cells = {w: (V_LO, w, "raw") for w in CHECKPOINT_W}
        have = sorted((k, u) for k, u in units.items() if all(c in u["cells"] for c in cells.values()))
        if not have:
            continue
        row: dict[str, Any] = {"units": len(have), "success": {
            w: float(np.mean([u["cells"][c] for _, u in have])) for w, c in cells.items()}}
        for name, a, b in (("medium_minus_low", "medium", "low"), ("high_minus_medium", "high", "medium")):
            diffs = np.array([100.0 * (u["cells"][cells[a]] - u["cells"][cells[b]]) for _, u in have])
            clusters = [k[1] for k, _ in have]
            est, lo, hi, _ = cluster_bootstrap(diffs, clusters, n_boot=n_boot, seed=seed)
            one = len(set(clusters)) < 2
            row[name] = {"pp": est, "lo": None if one else lo, "hi": None if one else hi}
        out[lane] = row
    return out or None


def _order(axis: str, level: str) -> tuple[float | str, ...]:
    """Sort key of a level within its axis: the known levels in design order, then any other level by name."""
    named = NAMED_LEVELS.get(axis, ())
    if axis == "V" and level[1:].isdecimal():
        return (int(level[1:]),)
    if level in named:
        return (named.index(level),)
    return (math.inf, level)


def summarise(records: Iterable[Mapping[str, Any]], *, n_boot: int = DEFAULT_N_BOOT,
              seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """Everything the pressure section reports, or None without pressure records."""
    recs = pressure_records(records)
    if not recs:
        return None
    plain = [r for r in recs if not switched(r)]
    left_out = len(recs) - len(plain) if plain else 0
    recs = plain or recs  # the capacity contrasts are the frozen harness's; repair arms report in their section
    present = sorted({str(r["facets"].get("lane")) for r in recs})
    primary = "routed" if "routed" in present else present[0]
    return {
        "primary_lane": primary,
        "episodes": len(recs),
        "success": {lane: sum(_success(r) for r in recs if r["facets"].get("lane") == lane)
                    / max(1, sum(1 for r in recs if r["facets"].get("lane") == lane)) for lane in present},
        "contrasts": {lane: contrasts(recs, lane, n_boot=n_boot, seed=seed) for lane in present},
        "truncation": {lane: truncation(recs, lane) for lane in present},
        "lanes": lanes(recs, n_boot=n_boot, seed=seed),
        "failure_records": failure_records(recs),
        "checkpoint": checkpoint(recs, n_boot=n_boot, seed=seed),
        "arm_records_left_out": left_out,
    }
