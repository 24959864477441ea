"""The cap sweep (seed 002, appendix E.1): the same cells at the frozen completion cap and at a
larger one (``capN``, seed 002: x16), so the menu penalty that comes with truncation is measured
with the cap as the only change.

Per configuration and lane, with arms low (the frozen cap) and high (capN, the rest of the arm the
same):

* the V=128 truncation share in each arm; the stratum from the low arm's share: B (truncation-heavy)
  at least 20%, M 5 to 20%, N none, '-' between 0 and 5% (seed 002's strata, by the sweep's own
  low arm); the manipulation check passes when the high arm truncates at most 5% at V=128;
* the menu contrast in each arm: V=128 minus V=8, paired within (family, W, D) over the four
  endpoint W x D cells (low/high x raw/linked), each unit's success the mean over its runs, and the
  interaction (high-cap contrast minus low-cap contrast), each with a 95% family-cluster bootstrap
  interval; pooled per stratum (B over the configurations that pass the check, M and N as controls).

The interaction "clears" the pre-specified 5 pp margin when its lower bound is above 5 pp and the
exact sign-flip test of (interaction - 5) over family sums rejects at 2.5% one-sided: with fewer
than six families that can never happen (2^-5 > 0.025), however unanimous they are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ...stats.pressure import cluster_bootstrap
from .quantities import _flip_p
from .records import ROUTED, Run

MARGIN_PP = 5.0
CHECK_CEILING = 0.05
STRATA: tuple[tuple[str, str], ...] = (("B", "truncation >= 20%"), ("M", "5-20%"), ("N", "no truncation"))


def stratum(share: float) -> str:
    if share >= 0.20:
        return "B"
    if share >= 0.05:
        return "M"
    return "N" if share == 0 else "-"


def _cap(arm: frozenset[str]) -> int | None:
    caps = [int(a[3:]) for a in arm if a.startswith("cap") and a[3:].isdigit()]
    return caps[0] if caps else None


def _interval(values: list[float], clusters: list[str], n_boot: int, seed: int) -> dict[str, Any]:
    if not values:
        return {"pp": None, "lo": None, "hi": None, "units": 0, "clusters": 0}
    est, lo, hi, _ = cluster_bootstrap(np.array(values), clusters, n_boot=n_boot, seed=seed)
    k = len(set(clusters))
    return {"pp": est, "lo": lo if k > 1 else None, "hi": hi if k > 1 else None, "units": len(values), "clusters": k}


def _contrasts(units: dict[tuple[str, ...], dict[str, dict[int, list[float]]]], n_boot: int,
               seed: int) -> dict[str, Any]:
    """Menu contrast per arm and the interaction over units holding V 8 and 128 in both arms."""
    diffs: dict[str, list[float]] = {"low": [], "high": []}
    cl: list[str] = []
    for key, arms in sorted(units.items()):
        if all(v in arms.get(a, {}) for a in ("low", "high") for v in (8, 128)):
            for a in ("low", "high"):
                diffs[a].append(100.0 * (np.mean(arms[a][128]) - np.mean(arms[a][8])))
            cl.append(key[2])  # the family: keys are (config, lane, family, W, D)
    inter = [h - lo for h, lo in zip(diffs["high"], diffs["low"])]
    out = {"low": _interval(diffs["low"], cl, n_boot, seed), "high": _interval(diffs["high"], cl, n_boot, seed),
           "interaction": _interval(inter, cl, n_boot, seed)}
    it = out["interaction"]
    names = sorted(set(cl))
    sums = np.array([sum(v - MARGIN_PP for v, c in zip(inter, cl) if c == n) for n in names])
    it["clears_margin"] = bool(it["lo"] is not None and it["lo"] > MARGIN_PP and sums.size > 1
                               and _flip_p(sums, n_boot=n_boot, seed=seed) < 0.025)
    return out


def cap_sweep(runs: Sequence[Run], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """The sweep table (module doc), or None when no configuration ran a capN arm beside its frozen cap."""
    # (config, lane, rest of the arm) -> arm name -> runs
    groups: dict[tuple[str, str, frozenset[str]], dict[str, list[Run]]] = defaultdict(lambda: defaultdict(list))
    scale: dict[tuple[str, str, frozenset[str]], int] = {}
    for r in runs:
        if r.frontier or r.V is None:
            continue
        cap = _cap(r.arm)
        rest = frozenset(a for a in r.arm if not a.startswith("cap") and a != ROUTED)
        key = (r.config, ROUTED if ROUTED in r.arm else "fixed", rest)
        groups[key]["high" if cap else "low"].append(r)
        if cap:
            scale[key] = cap
    rows = []
    pooled: dict[str, dict[tuple[str, ...], dict[str, dict[int, list[float]]]]] = defaultdict(dict)
    for key in sorted(k for k in groups if "low" in groups[k] and "high" in groups[k]):
        config, lane, rest = key
        arms = groups[key]
        trunc = {}
        for a in ("low", "high"):
            at = [r for r in arms[a] if r.V == 128]
            trunc[a] = sum(r.truncated for r in at) / len(at) if at else None
        units: dict[tuple[str, ...], dict[str, dict[int, list[float]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list)))
        for a in ("low", "high"):
            for r in arms[a]:
                if r.W in ("low", "high") and r.D in ("raw", "linked") and r.V in (8, 128):
                    units[(config, lane, r.family, str(r.W), str(r.D))][a][r.V].append(r.success)
        st = stratum(trunc["low"]) if trunc["low"] is not None else "-"
        check = trunc["high"] is not None and trunc["high"] <= CHECK_CEILING
        row = {"config": config, "lane": lane, "arm": "+".join(sorted(rest)) or "none", "scale": scale[key],
               "stratum": st, "truncated_low": trunc["low"], "truncated_high": trunc["high"], "check": check,
               "runs": max((r.run for a in ("low", "high") for r in arms[a]), default=0) + 1,
               **_contrasts(units, n_boot, seed)}
        rows.append(row)
        if st == "B" and not check:
            continue  # stratum B pools the configurations that pass the manipulation check
        if st in ("B", "M", "N"):
            pooled[st].update(units)
    if not rows:
        return None
    strata = [{"stratum": st, "what": what, "configs": sum(1 for r in rows if r["stratum"] == st
                                                           and (st != "B" or r["check"])),
               **_contrasts(pooled[st], n_boot, seed)} for st, what in STRATA if pooled.get(st)]
    return {"rows": rows, "strata": strata, "margin_pp": MARGIN_PP, "check_ceiling": CHECK_CEILING}
