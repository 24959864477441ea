"""Columnar, canonically ordered view of run records.

Every statistic is computed from this table rather than from the raw dicts so that results do
not depend on the order in which pytest happened to emit items: labels are coded by their sorted
value and rows are sorted by (model, task, variant, instance, run), which is a total order because
duplicate keys are rejected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

# Kept local (not imported from suite.schema) so the statistics have no dependency on the harness.
TIERS: tuple[str, ...] = ("A0", "A", "B", "C", "D", "E")
OVERALL = "overall"
FAILURE_MODES: tuple[str, ...] = ("F1", "F2", "F3", "F4", "F5", "F5b", "F6", "F7")
OBLIGATIONS: tuple[str, ...] = ("A", "S", "P", "Q", "E", "X", "G", "B", "C")
TERMINAL_FLAGS: tuple[str, ...] = (
    "truncation",
    "budget",
    "context_limit",
    "turn_limit",
    "infeasible",
    "wrong_conclusion",
    "other",
)
NONE_LABEL = "none"

Cluster = Literal["unit", "task", "run"]
CLUSTERS: tuple[str, ...] = ("unit", "task", "run")

_REQUIRED = ("model", "task", "tier", "variant", "instance", "run", "passed")
_NUMERIC = ("tokens_in", "tokens_out", "latency_s", "wall_s", "cost_usd", "busy_s")
#: largest plausible value per run; a server reporting more (or a negative or non-finite value)
#: is kept raw in the record but never enters a statistic
PLAUSIBLE_MAX: dict[str, float] = {
    "tokens_in": 1e8, "tokens_out": 1e8, "latency_s": 7 * 86400.0, "wall_s": 7 * 86400.0, "cost_usd": 1e5,
    "busy_s": 7 * 86400.0,
}


def normalise_cluster(cluster: str | None) -> Cluster:
    """``None`` means the default resampling unit, the (variant, instance, run) tuple."""
    c = "unit" if cluster is None else cluster
    if c not in CLUSTERS:
        raise ValueError(f"cluster must be None or one of {CLUSTERS}, got {cluster!r}")
    return c  # type: ignore[return-value]


def _codes(values: Sequence[Any]) -> tuple[tuple[Any, ...], np.ndarray]:
    if len(values) == 0:
        return (), np.empty(0, dtype=np.int64)
    labels, inv = np.unique(np.asarray(values), return_inverse=True)
    return tuple(labels.tolist()), inv.astype(np.int64).ravel()


def _category(values: Sequence[Any], known: tuple[str, ...],
              field: str) -> tuple[tuple[str, ...], np.ndarray, list[str]]:
    """Code an optional categorical; ``None`` gets code -1, unknown labels are appended sorted."""
    extra = sorted({str(v) for v in values if v is not None} - set(known))
    labels = known + tuple(extra)
    index = {lab: i for i, lab in enumerate(labels)}
    codes = np.fromiter((-1 if v is None else index[str(v)] for v in values), dtype=np.int64, count=len(values))
    warns = [f"unknown {field} label(s): {', '.join(extra)}"] if extra else []
    return labels, codes, warns


def _num(v: Any) -> float:
    if v is None or isinstance(v, bool):
        return np.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return np.inf  # flagged as implausible below


def _numeric(values: Sequence[Any]) -> np.ndarray:
    return np.fromiter((_num(v) for v in values), dtype=np.float64, count=len(values))


@dataclass(frozen=True, eq=False)
class RunTable:
    """Run records as numpy columns, sorted by (model, task, variant, instance, run).

    String columns are integer codes into the sorted ``*_names`` tuples; ``tier`` codes index
    ``TIERS``; optional categoricals use -1 for ``None``. Numeric columns use NaN for missing.
    """

    model_names: tuple[str, ...]
    task_names: tuple[str, ...]
    variant_names: tuple[str, ...]
    instance_names: tuple[str, ...]
    run_values: tuple[int, ...]
    failure_mode_labels: tuple[str, ...]
    first_unmet_labels: tuple[str, ...]
    terminal_flag_labels: tuple[str, ...]
    model: np.ndarray
    task: np.ndarray
    tier: np.ndarray
    variant: np.ndarray
    instance: np.ndarray
    run: np.ndarray
    passed: np.ndarray
    infra: np.ndarray
    failure_mode: np.ndarray
    first_unmet: np.ndarray
    terminal_flag: np.ndarray
    tokens_in: np.ndarray
    tokens_out: np.ndarray
    latency_s: np.ndarray
    wall_s: np.ndarray
    cost_usd: np.ndarray
    busy_s: np.ndarray
    warnings: tuple[str, ...]

    @property
    def n(self) -> int:
        return int(self.model.size)

    @property
    def tiers_present(self) -> tuple[str, ...]:
        present = set(np.unique(self.tier).tolist())
        return tuple(t for i, t in enumerate(TIERS) if i in present)

    def task_key(self) -> np.ndarray:
        """Model-independent key of a run: (task, variant, instance, run), used for pairing."""
        nv, ni, nr = len(self.variant_names), len(self.instance_names), len(self.run_values)
        return ((self.task * nv + self.variant) * ni + self.instance) * nr + self.run

    def group_key(self) -> np.ndarray:
        """(task, variant, instance): runs sharing it are repeats of one item, for pass@k."""
        nv, ni = len(self.variant_names), len(self.instance_names)
        return (self.task * nv + self.variant) * ni + self.instance

    def unit_code(self, cluster: Cluster) -> np.ndarray:
        """Resampling-unit id of each row; ids sort in the canonical unit order."""
        if cluster == "unit":
            ni, nr = len(self.instance_names), len(self.run_values)
            return (self.variant * ni + self.instance) * nr + self.run
        if cluster == "task":
            return self.task.copy()
        return np.arange(self.n, dtype=np.int64)

    def scored(self, infra_as_failure: bool) -> tuple[np.ndarray, np.ndarray]:
        """(mask of runs that count towards TCR, pass indicator); an infra error never passes."""
        ok = ~self.infra
        mask = np.ones(self.n, dtype=bool) if infra_as_failure else ok
        return mask, self.passed & ok


def build_table(records: Iterable[Mapping[str, Any]]) -> RunTable:
    """Validate and column-ise run records (see module docstring for the ordering contract)."""
    recs = list(records)
    for i, r in enumerate(recs):
        missing = [k for k in _REQUIRED if k not in r or r[k] is None]
        if missing:
            raise ValueError(f"record {i} lacks required field(s) {missing}")
    fields = (*_REQUIRED, "infra_error", "failure_mode", "first_unmet", "terminal_flag", *_NUMERIC)
    col: dict[str, list[Any]] = {k: [r.get(k) for r in recs] for k in fields}
    warnings: list[str] = []

    tier_index = {t: i for i, t in enumerate(TIERS)}
    bad = sorted({str(t) for t in col["tier"]} - set(TIERS))
    if bad:
        raise ValueError(f"unknown tier(s) {bad}; expected {TIERS}")
    tier = np.fromiter((tier_index[t] for t in col["tier"]), dtype=np.int64, count=len(recs))

    model_names, model = _codes([str(v) for v in col["model"]])
    task_names, task = _codes([str(v) for v in col["task"]])
    variant_names, variant = _codes([str(v) for v in col["variant"]])
    instance_names, instance = _codes([str(v) for v in col["instance"]])
    run_values, run = _codes([int(v) for v in col["run"]])
    passed = np.fromiter((bool(v) for v in col["passed"]), dtype=bool, count=len(recs))
    # a run cut by the context window measured the setup, not the model: excluded from scoring like
    # an infra error (and counted with them), never a model failure
    infra = np.fromiter((bool(v) or f == "context_limit" for v, f in zip(col["infra_error"], col["terminal_flag"])),
                        dtype=bool, count=len(recs))
    fm_labels, fm, w1 = _category(col["failure_mode"], FAILURE_MODES, "failure_mode")
    fu_labels, fu, w2 = _category(col["first_unmet"], OBLIGATIONS, "first_unmet")
    tf_labels, tf, w3 = _category(col["terminal_flag"], TERMINAL_FLAGS, "terminal_flag")
    warnings += w1 + w2 + w3
    numeric = {k: _numeric(col[k]) for k in _NUMERIC}
    for k, arr in numeric.items():
        bad = ~np.isnan(arr) & ~((arr >= 0) & (arr <= PLAUSIBLE_MAX[k]))
        if bad.any():
            warnings.append(f"{int(bad.sum())} record(s) report an impossible {k} (negative, non-numeric or above "
                            f"{PLAUSIBLE_MAX[k]:g}); kept in runs.jsonl, left out of every statistic")
            arr[bad] = np.nan
        n_missing = int(np.isnan(arr).sum())
        if n_missing and k != "cost_usd":  # an unpriced model has no recorded cost: expected, not a problem
            warnings.append(f"{n_missing} record(s) lack {k}; excluded from its sums and means")

    order = np.lexsort((run, instance, variant, task, model))
    cols = dict(model=model, task=task, tier=tier, variant=variant, instance=instance, run=run,
                passed=passed, infra=infra, failure_mode=fm, first_unmet=fu, terminal_flag=tf, **numeric)
    cols = {k: v[order] for k, v in cols.items()}

    if len(recs) > 1:
        keys = np.stack([cols[k] for k in ("model", "task", "variant", "instance", "run")], axis=1)
        dup = np.all(keys[1:] == keys[:-1], axis=1)
        if dup.any():
            i = int(np.argmax(dup))
            m, t, v, s, r = keys[i]
            raise ValueError(
                "duplicate run record for (model, task, variant, instance, run) = "
                f"({model_names[m]}, {task_names[t]}, {variant_names[v]}, {instance_names[s]}, {run_values[r]})"
            )
    if task_names:
        tiers_per_task = np.unique(np.stack([cols["task"], cols["tier"]], axis=1), axis=0)
        if tiers_per_task.shape[0] != len(task_names):
            tt, counts = np.unique(tiers_per_task[:, 0], return_counts=True)
            raise ValueError(f"task(s) recorded under several tiers: {[task_names[i] for i in tt[counts > 1]]}")

    return RunTable(
        model_names=model_names, task_names=task_names, variant_names=variant_names,
        instance_names=instance_names, run_values=tuple(int(v) for v in run_values),
        failure_mode_labels=fm_labels, first_unmet_labels=fu_labels, terminal_flag_labels=tf_labels,
        warnings=tuple(warnings), **cols,
    )


def scopes_of(table: RunTable) -> tuple[str, ...]:
    """Reporting scopes: the tiers present in the data (canonical order) plus ``overall``."""
    return table.tiers_present + (OVERALL,)


def expand_scopes(table: RunTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each selected row once under its tier's scope and once under ``overall``.

    Returns ``(row_index, scope_index)`` with scope indices into :func:`scopes_of`.
    """
    tiers = table.tiers_present
    tier_to_scope = np.full(len(TIERS), -1, dtype=np.int64)
    for j, t in enumerate(tiers):
        tier_to_scope[TIERS.index(t)] = j
    rows = np.asarray(rows, dtype=np.int64)
    scope = np.concatenate([tier_to_scope[table.tier[rows]], np.full(rows.size, len(tiers), dtype=np.int64)])
    return np.concatenate([rows, rows]), scope
