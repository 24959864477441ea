"""Sentinel repeats (seed 002, appendix: 3 runs per condition group): how much one run can be trusted.

A condition group is one (configuration, cell, arm) run `runs` times. Over the complete groups:

* pass@1: the mean success over all runs (the expected success of one run);
* all: share of groups whose every run succeeds; any: share with at least one success;
* disagreement: share of groups whose runs do not all agree, which equals any - all.

Groups with a different number of runs are left out and counted (`incomplete`), so a resumed or
interrupted study never mixes two- and three-run groups into one rate.
The repeated gain of a repair is the mean over paired units of (repair - none) success, each
unit's success the mean over its runs, with stats.pressure's cluster bootstrap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ...stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ...stats.pressure import cluster_bootstrap
from .quantities import NO_REPAIR, Outcome

SENTINEL_RUNS = 3


@dataclass(frozen=True, slots=True)
class Repeats:
    groups: int
    incomplete: int
    runs: int
    pass_at_1: float | None
    all_runs: float | None
    any_run: float | None
    disagreement: float | None


def repeats(groups: Mapping[str, Sequence[float]], runs: int = SENTINEL_RUNS) -> Repeats:
    """The four repeat rates (fractions) over groups of exactly `runs` runs (module doc)."""
    if runs < 2:
        raise ValueError(f"runs must be at least 2 to measure agreement, got {runs}")
    full = [[1.0 if s else 0.0 for s in g] for g in groups.values() if len(g) == runs]
    incomplete = len(groups) - len(full)
    if not full:
        return Repeats(0, incomplete, runs, None, None, None, None)
    n = len(full)
    every = sum(all(g) for g in full)
    some = sum(any(g) for g in full)
    return Repeats(n, incomplete, runs, sum(map(sum, full)) / (n * runs), every / n, some / n, (some - every) / n)


@dataclass(frozen=True, slots=True)
class RepeatedGain:
    repair: str
    units: int
    pp: float | None
    lo: float | None
    hi: float | None


def repeated_gain(outcomes: Iterable[Outcome], repair: str, *, stressed: bool = True, n_boot: int = DEFAULT_N_BOOT,
                  seed: int = DEFAULT_SEED) -> RepeatedGain:
    """Repair minus no repair at one pressure level, paired over units, in pp (module doc)."""
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    cluster: dict[str, str] = {}
    for o in outcomes:
        if o.stressed == stressed and o.arm in (NO_REPAIR, repair):
            acc[o.unit][o.arm].append(float(o.success))
            cluster[o.unit] = o.cluster
    units = sorted(u for u, a in acc.items() if NO_REPAIR in a and repair in a)
    if not units:
        return RepeatedGain(repair, 0, None, None, None)
    diffs = np.array([100.0 * (np.mean(acc[u][repair]) - np.mean(acc[u][NO_REPAIR])) for u in units])
    est, lo, hi, _ = cluster_bootstrap(diffs, [cluster[u] for u in units], n_boot=n_boot, seed=seed)
    one = len({cluster[u] for u in units}) < 2
    return RepeatedGain(repair, len(units), est, None if one else lo, None if one else hi)
