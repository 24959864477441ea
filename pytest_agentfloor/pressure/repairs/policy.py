"""The probe-then-repair policy (seed 002, the policy pilot): what a practitioner would run.

A block is one condition: a probe (the incumbent as is) and restarts, each reset independently
(an unchanged retry, a larger cap, the router, the controller, the combined repairs, a switch...).
The policy keeps a successful probe and runs one chosen restart only after a failed probe. Per
restart action, over the blocks that hold it:

* recovered: successes among the blocks whose probe failed (the honest recovery rate: pooled
  restart success mixes recovery with restarts that were not needed);
* policy success: (probe successes + recovered) / blocks;
* cost per 1,000 conditions with the probe charged: 1000 x mean(probe cost + the action's cost
  where the probe failed); and without a probe: 1000 x mean(the action's cost), the action run
  on every block.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Attempt:
    success: bool
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Block:
    probe: Attempt
    actions: Mapping[str, Attempt] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PolicyRow:
    action: str
    blocks: int
    probe_failed: int
    recovered: int
    recovered_share: float | None
    restart_success: float
    policy_success: float
    cost_per_1000_with_probe: float
    cost_per_1000_without_probe: float


def probe_then_repair(blocks: Iterable[Block], actions: Iterable[str] | None = None) -> list[PolicyRow]:
    """One row per action (every action any block holds, in first-seen order, unless named)."""
    bs = list(blocks)
    names = list(actions) if actions is not None else list(dict.fromkeys(a for b in bs for a in b.actions))
    rows = []
    for name in names:
        have = [b for b in bs if name in b.actions]
        if not have:
            raise ValueError(f"action {name!r}: no block holds it; blocks hold "
                             f"{', '.join(sorted({a for b in bs for a in b.actions})) or 'none'}")
        n = len(have)
        failed = [b for b in have if not b.probe.success]
        recovered = sum(b.actions[name].success for b in failed)
        rows.append(PolicyRow(
            action=name, blocks=n, probe_failed=len(failed), recovered=recovered,
            recovered_share=recovered / len(failed) if failed else None,
            restart_success=sum(b.actions[name].success for b in have) / n,
            policy_success=(sum(b.probe.success for b in have) + recovered) / n,
            cost_per_1000_with_probe=1000.0 * sum(b.probe.cost + (0.0 if b.probe.success else b.actions[name].cost)
                                                  for b in have) / n,
            cost_per_1000_without_probe=1000.0 * sum(b.actions[name].cost for b in have) / n))
    return rows
