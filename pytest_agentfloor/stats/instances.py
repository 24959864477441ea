"""The instance-variation ablation: TCR per task and instance, kept out of the headline tiers.

AgentFloor's headline TCR uses the canonical instance ``i0`` (with the prompt variants); the
instance variants (i1-i5 on a few tasks) are a separate ablation that asks whether a model's
result survives changed data. Pooling them into a tier would weight those tasks more than the
others, so by default they are reported here instead: one row per (model, task, instance) with
the Wilson interval (there are too few runs per cell for a bootstrap to mean anything).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .intervals import wilson

HEADLINE_INSTANCE = "i0"


@dataclass(frozen=True, slots=True)
class InstanceCell:
    model: str
    task: str
    tier: str
    instance: str
    n_runs: int
    n_passed: int
    n_infra: int
    tcr: float | None
    ci_low: float | None
    ci_high: float | None


def split_headline(records: list[Mapping[str, Any]],
                   headline_instance: str | None = HEADLINE_INSTANCE) -> tuple[list[Mapping[str, Any]], bool]:
    """(records for the headline statistics, whether instance variants were set aside).

    Variants are set aside only when the headline instance is present too; a run of instance
    variants alone keeps them (there is nothing else to report).
    """
    if headline_instance is None:
        return records, False
    instances = {str(r.get("instance")) for r in records}
    if headline_instance not in instances or instances == {headline_instance}:
        return records, False
    return [r for r in records if str(r.get("instance")) == headline_instance], True


def instance_ablation(records: Iterable[Mapping[str, Any]], *, infra_as_failure: bool,
                      alpha: float = 0.05) -> list[InstanceCell]:
    """Cells for every (model, task, instance) of the tasks that have more than one instance."""
    cells: dict[tuple[str, str, str], list[int]] = {}
    tiers: dict[str, str] = {}
    per_task: dict[str, set[str]] = {}
    for r in records:
        key = (str(r["model"]), str(r["task"]), str(r["instance"]))
        c = cells.setdefault(key, [0, 0, 0])
        infra = bool(r.get("infra_error"))
        c[2] += infra
        if infra and not infra_as_failure:
            continue
        c[0] += 1
        c[1] += bool(r.get("passed")) and not infra
        tiers[key[1]] = str(r["tier"])
        per_task.setdefault(key[1], set()).add(key[2])
    out = []
    for (m, t, i), (n, k, inf) in sorted(cells.items()):
        if len(per_task.get(t, ())) < 2:
            continue
        lo, hi = wilson(k, n, alpha / 2)
        out.append(InstanceCell(m, t, tiers[t], i, n, k, inf, k / n if n else None,
                                float(lo) if n else None, float(hi) if n else None))
    return out
