"""Per model x tier diagnostic rates beside the failure modes (AgentFloor "Diagnostics").

Per-call rates pool the calls of a cell (as the authors' harness does: a sum over runs divided by
the total number of calls), so a run with many calls weighs more:

* ``malformed_rate``: malformed calls / calls (the paper's SDR, schema deviation rate);
* ``hallucinated_rate``: calls to a tool that does not exist / calls;
* ``repeated_rate``: calls repeating an earlier identical call / calls;
* ``leaked_rate``: turns whose text looks like a tool call (not sent as one) / turns.

``mean_calls`` and ``mean_turns`` average over runs. Infra-error runs are left out (the endpoint,
not the model, ended them). A rate whose denominator is 0 is ``None``. Runs whose record lacks
the counts (older records without a trajectory) are left out and counted in ``n_runs_missing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from .records import OVERALL, RunTable, expand_scopes, scopes_of

DIAG_FIELDS: tuple[str, ...] = ("calls", "turns", "calls_malformed", "calls_hallucinated", "calls_repeated",
                                "turns_leaked")


@dataclass(frozen=True, slots=True)
class Diagnostics:
    model: str
    scope: str
    n_runs: int
    n_runs_missing: int
    n_calls: int
    malformed_rate: float | None
    hallucinated_rate: float | None
    repeated_rate: float | None
    leaked_rate: float | None
    mean_calls: float | None
    mean_turns: float | None


def counts_from_trajectory(traj: Mapping[str, Any]) -> dict[str, int]:
    """Diagnostic counts of one stored trajectory (``runs.jsonl`` ``trajectory`` field)."""
    raw_turns = traj.get("turns")  # a damaged or hand-made record: what is not a list of objects counts nothing
    turns = [t for t in raw_turns if isinstance(t, Mapping)] if isinstance(raw_turns, list) else []
    calls = [c for t in turns if isinstance(t.get("calls"), list) for c in t["calls"] if isinstance(c, Mapping)]
    return {
        "calls": len(calls), "turns": len(turns),
        "calls_malformed": sum(1 for c in calls if c.get("malformed")),
        "calls_hallucinated": sum(1 for c in calls if c.get("hallucinated")),
        "calls_repeated": sum(1 for c in calls if c.get("repeated")),
        "turns_leaked": sum(1 for t in turns if t.get("leaked_call")),
    }


def compute_diagnostics(table: RunTable, records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Diagnostics]]:
    """Diagnostics per model x (tiers present + overall); ``records`` aligned by run key with ``table``."""
    keyed: dict[tuple[str, str, str, str, int], Mapping[str, Any]] = {}
    for r in records:
        keyed[(str(r["model"]), str(r["task"]), str(r["variant"]), str(r["instance"]), int(r["run"]))] = r
    n = table.n
    cols = {f: np.full(n, np.nan) for f in DIAG_FIELDS}
    for i in range(n):
        rec = keyed.get((table.model_names[table.model[i]], table.task_names[table.task[i]],
                         table.variant_names[table.variant[i]], table.instance_names[table.instance[i]],
                         table.run_values[table.run[i]]))
        if rec is None or any(not isinstance(rec.get(f), (int, float)) or isinstance(rec.get(f), bool)
                              for f in DIAG_FIELDS):
            continue
        for f in DIAG_FIELDS:
            cols[f][i] = float(rec[f])
    scopes = scopes_of(table)
    n_s = len(scopes)
    n_cells = n_s * len(table.model_names)
    rows, scope = expand_scopes(table, np.flatnonzero(~table.infra))
    cell = table.model[rows] * n_s + scope
    known = ~np.isnan(cols["calls"][rows])
    n_runs = np.bincount(cell, minlength=n_cells)
    n_known = np.bincount(cell[known], minlength=n_cells)
    sums = {f: np.bincount(cell[known], cols[f][rows][known], minlength=n_cells) for f in DIAG_FIELDS}

    def ratio(num: np.ndarray, den: np.ndarray, i: int) -> float | None:
        return float(num[i] / den[i]) if den[i] > 0 else None

    out: dict[str, dict[str, Diagnostics]] = {}
    for mi, name in enumerate(table.model_names):
        out[name] = {}
        for si, sc in enumerate(scopes):
            i = mi * n_s + si
            out[name][sc] = Diagnostics(
                model=name, scope=sc, n_runs=int(n_runs[i]), n_runs_missing=int(n_runs[i] - n_known[i]),
                n_calls=int(sums["calls"][i]),
                malformed_rate=ratio(sums["calls_malformed"], sums["calls"], i),
                hallucinated_rate=ratio(sums["calls_hallucinated"], sums["calls"], i),
                repeated_rate=ratio(sums["calls_repeated"], sums["calls"], i),
                leaked_rate=ratio(sums["turns_leaked"], sums["turns"], i),
                mean_calls=ratio(sums["calls"], n_known.astype(float), i),
                mean_turns=ratio(sums["turns"], n_known.astype(float), i),
            )
    return out


__all__ = ["DIAG_FIELDS", "OVERALL", "Diagnostics", "compute_diagnostics", "counts_from_trajectory"]
