"""The workflow frontier (seed 002, Figure 9): how episodes of 2, 6, 14 and 30 calls end.

Per configuration, arm and chain length: episodes, success, which limit fired (the termination of
each failed episode: the episode token budget, the call limit, the turn limit, an infeasibility
stop, truncation at the completion cap, or another end), the median calls executed (the model's
and the controller's), model requests and reported tokens; and the change in success from 2 calls
to each longer chain, paired within family (mean over runs), with a 95% family-cluster interval.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ...stats.pressure import cluster_bootstrap
from .records import Run, arm_label

#: how a frontier episode ended, in the plot's order (a passed episode first)
ENDINGS: tuple[str, ...] = ("passed", "token_budget", "call_limit", "turn_budget", "infeasible", "truncated", "other")


def ending(r: Run) -> str:
    if r.success:
        return "passed"
    return r.termination if r.termination in ENDINGS else "other"


def frontier(runs: Sequence[Run], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """The frontier table (module doc), or None without frontier runs."""
    groups: dict[tuple[str, str], dict[int, list[Run]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        if r.frontier and r.calls is not None:
            groups[(r.config, arm_label(r.arm))][r.calls].append(r)
    if not groups:
        return None
    rows = []
    for (config, arm), by in sorted(groups.items()):
        fam2: dict[str, float] = {f: float(np.mean([r.success for r in by[2] if r.family == f]))
                                  for f in {r.family for r in by.get(2, [])}}
        for k in sorted(by):
            rs = by[k]
            ends = {e: sum(1 for r in rs if ending(r) == e) for e in ENDINGS}
            row: dict[str, Any] = {
                "config": config, "arm": arm, "calls": k, "episodes": len(rs),
                "success": sum(r.success for r in rs) / len(rs), "endings": ends,
                "median_calls": statistics.median(r.model_calls + r.controller_calls for r in rs),
                "median_controller_calls": statistics.median(r.controller_calls for r in rs),
                "median_requests": statistics.median(r.requests for r in rs),
                "median_tokens": statistics.median(r.tokens for r in rs),
            }
            if k != 2 and fam2:
                fams = sorted(f for f in {r.family for r in rs} if f in fam2)
                diffs = [100.0 * (float(np.mean([r.success for r in rs if r.family == f])) - fam2[f]) for f in fams]
                if diffs:
                    est, lo, hi, _ = cluster_bootstrap(np.array(diffs), fams, n_boot=n_boot, seed=seed)
                    row["change_from_2"] = {"pp": est, "lo": lo if len(fams) > 1 else None,
                                            "hi": hi if len(fams) > 1 else None, "families": len(fams)}
            rows.append(row)
    return {"rows": rows, "endings": list(ENDINGS)}
