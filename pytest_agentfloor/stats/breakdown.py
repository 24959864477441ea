"""Why runs failed: failure-mode, first-unmet-obligation and terminal-flag counts.

Counts are over *model* failures only: failed runs that are not infra errors (an endpoint
failure says nothing about the model's failure mode), whatever ``infra_as_failure`` says for TCR.
Every known label is present (zero if unseen) so report tables have a fixed shape; a failed run
without a label is counted under ``"none"``; unknown labels get their own key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import NONE_LABEL, RunTable, expand_scopes, scopes_of


@dataclass(frozen=True, slots=True)
class FailureBreakdown:
    """Label counts of one (model, scope) cell; each mapping sums to ``n_failed``."""

    model: str
    scope: str
    n_failed: int
    n_infra: int
    failure_mode: dict[str, int]
    first_unmet: dict[str, int]
    terminal_flag: dict[str, int]


def _count(codes: np.ndarray, labels: tuple[str, ...], cell: np.ndarray, n_cells: int) -> np.ndarray:
    """``(n_cells, len(labels) + 1)`` counts; the last column is the ``None`` label (code -1)."""
    k = len(labels) + 1
    col = np.where(codes < 0, k - 1, codes)
    return np.bincount(cell * k + col, minlength=n_cells * k).reshape(n_cells, k)


def compute_breakdown(table: RunTable) -> dict[str, dict[str, FailureBreakdown]]:
    """Failure label counts for every model x (tiers present + overall)."""
    scopes = scopes_of(table)
    n_s = len(scopes)
    n_cells = n_s * len(table.model_names)
    rows, scope = expand_scopes(table, np.flatnonzero(~table.passed & ~table.infra))
    cell = table.model[rows] * n_s + scope
    irows, iscope = expand_scopes(table, np.flatnonzero(table.infra))
    n_infra = np.bincount(table.model[irows] * n_s + iscope, minlength=n_cells)
    fields = {
        "failure_mode": (table.failure_mode, table.failure_mode_labels),
        "first_unmet": (table.first_unmet, table.first_unmet_labels),
        "terminal_flag": (table.terminal_flag, table.terminal_flag_labels),
    }
    counts = {f: _count(codes[rows], labels, cell, n_cells) for f, (codes, labels) in fields.items()}
    n_failed = np.bincount(cell, minlength=n_cells)

    out: dict[str, dict[str, FailureBreakdown]] = {}
    for mi, name in enumerate(table.model_names):
        out[name] = {}
        for si, sc in enumerate(scopes):
            i = mi * n_s + si
            maps = {
                f: {lab: int(v) for lab, v in zip((*fields[f][1], NONE_LABEL), counts[f][i])}
                for f in fields
            }
            out[name][sc] = FailureBreakdown(model=name, scope=sc, n_failed=int(n_failed[i]),
                                             n_infra=int(n_infra[i]), **maps)
    return out
