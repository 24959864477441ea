"""Sentinel repeats and the probe-then-repair policy against hand-worked numbers (and seed 002's counts)."""

from __future__ import annotations

import pytest

from pytest_agentfloor.pressure.repairs.policy import Attempt, Block, probe_then_repair
from pytest_agentfloor.pressure.repairs.quantities import NO_REPAIR, Outcome
from pytest_agentfloor.pressure.repairs.repeats import repeated_gain, repeats


def test_repeat_rates_by_hand() -> None:
    r = repeats({"a": [1, 1, 1], "b": [1, 1, 0], "c": [0, 0, 0], "d": [True, False, False], "e": [1, 1]})
    # complete groups a-d: 6 successes of 12 runs; all: a; any: a, b, d; mixed: b, d
    assert (r.groups, r.incomplete) == (4, 1)
    assert (r.pass_at_1, r.all_runs, r.any_run, r.disagreement) == (0.5, 0.25, 0.75, 0.5)


def test_disagreement_is_any_minus_all_and_bounds_hold() -> None:
    groups = {f"g{i}": [(i >> k) & 1 for k in range(3)] for i in range(8)}  # all 8 patterns of 3 runs
    r = repeats(groups)
    assert r.pass_at_1 == 0.5 and r.all_runs == 1 / 8 and r.any_run == 7 / 8 and r.disagreement == 6 / 8
    assert r.all_runs <= r.pass_at_1 <= r.any_run


def test_repeats_degenerate_inputs() -> None:
    assert repeats({}).pass_at_1 is None
    assert repeats({"a": [1]}).incomplete == 1
    with pytest.raises(ValueError, match="at least 2"):
        repeats({"a": [1]}, runs=1)


def test_repeated_gain_is_the_paired_mean_over_runs() -> None:
    out = []
    for i in range(4):  # repair 3/3, none 2/3 on u0,u1; repair 1/3, none 1/3 on u2,u3 -> gain (1/3 + 1/3)/4 = 16.7 pp
        rep, none = ([1, 1, 1], [1, 1, 0]) if i < 2 else ([1, 0, 0], [0, 1, 0])
        out += [Outcome(f"u{i}", f"c{i}", "router", True, s) for s in rep]
        out += [Outcome(f"u{i}", f"c{i}", NO_REPAIR, True, s) for s in none]
    g = repeated_gain(out, "router", n_boot=1000)
    assert g.units == 4 and g.pp == pytest.approx(100 / 6)
    assert g.lo is not None and g.hi is not None and g.lo <= g.pp <= g.hi


def seed_002_blocks() -> list[Block]:
    """192 blocks, 127 probes succeed; of the 65 failed, the switch recovers 64, the combined repairs 43
    and the unchanged retry 16 (seed 002's policy pilot counts)."""
    blocks = []
    for i in range(192):
        ok = i < 127
        j = i - 127
        blocks.append(Block(Attempt(ok, 0.002), {
            "retry": Attempt(ok or j < 16, 0.002), "combined": Attempt(ok or j < 43, 0.003),
            "switch": Attempt(ok or j < 64, 0.001)}))
    return blocks


def test_policy_reproduces_seed_002s_after_failed_probe_rates() -> None:
    rows = {r.action: r for r in probe_then_repair(seed_002_blocks())}
    assert rows["retry"].probe_failed == 65 and rows["retry"].recovered == 16
    assert round(100 * rows["retry"].recovered_share, 1) == 24.6
    assert round(100 * rows["combined"].recovered_share, 1) == 66.2
    assert round(100 * rows["switch"].recovered_share, 1) == 98.5
    assert round(100 * rows["combined"].policy_success, 1) == 88.5  # (127 + 43) / 192
    assert round(100 * rows["switch"].policy_success, 1) == 99.5  # (127 + 64) / 192


def test_policy_costs_by_hand() -> None:
    blocks = [Block(Attempt(True, 1.0), {"switch": Attempt(True, 2.0)}),
              Block(Attempt(False, 1.0), {"switch": Attempt(True, 2.0)}),
              Block(Attempt(False, 3.0), {"switch": Attempt(False, 4.0)}),
              Block(Attempt(True, 1.0), {})]
    (row,) = probe_then_repair(blocks)
    assert (row.blocks, row.probe_failed, row.recovered) == (3, 2, 1)
    assert row.policy_success == pytest.approx(2 / 3) and row.restart_success == pytest.approx(2 / 3)
    # with the probe charged: (1 + (1 + 2) + (3 + 4)) / 3 * 1000; without: (2 + 2 + 4) / 3 * 1000
    assert row.cost_per_1000_with_probe == pytest.approx(11000 / 3)
    assert row.cost_per_1000_without_probe == pytest.approx(8000 / 3)


def test_policy_without_failed_probes_and_unknown_actions() -> None:
    (row,) = probe_then_repair([Block(Attempt(True, 1.0), {"retry": Attempt(False, 1.0)})])
    assert row.recovered_share is None and row.policy_success == 1.0 and row.cost_per_1000_with_probe == 1000.0
    with pytest.raises(ValueError, match="'cap'.*retry"):
        probe_then_repair([Block(Attempt(True), {"retry": Attempt(True)})], actions=["cap"])
