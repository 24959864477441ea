"""Time `aggregate` on a synthetic paper-scale AgentFloor corpus.

Corpus: 17 models in total = 16 candidate models + 1 reference ("gpt-5"), each run on
30 tasks (5 per tier A0..E) x 5 prompt variants (v0..v4, instance i0) x 5 runs
= 750 runs per model, 12,750 runs overall. Pass probabilities follow a logistic model of model
ability minus tier difficulty plus task/variant effects, so per-tier TCRs look like the paper's
(high on A0/A, falling through B, C, D to near zero on E). 0.5 % of runs are infra errors.

Measured: the full `aggregate` (TCR CIs for 17 x 7 cells, 96 (model, tier) + 16 overall paired
tests with TOST / non-inferiority / McNemar and Holm, pass@k, recipes, cost, Pareto, breakdowns)
at 10,000 resamples. Wall time is the best of several runs without tracing; peak memory is
measured in a separate traced run (tracemalloc, Python + numpy allocations) and as process RSS.

    python benchmarks/bench_aggregate.py [--repeat 5] [--n-boot 10000] [--interval-method guarded|paper]

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import resource
import os
import sys
import time
import tracemalloc
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))  # tests/test_benchmarks.py: seconds, in CI

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_agentfloor.stats import aggregate  # noqa: E402

TIERS = ("A0", "A", "B", "C", "D", "E")
TIER_DIFFICULTY = {"A0": -1.6, "A": -1.4, "B": -0.4, "C": 1.0, "D": 1.6, "E": 3.2}
FAILURE_MODES = ("F1", "F2", "F3", "F4", "F5", "F5b", "F6", "F7")
OBLIGATIONS = ("A", "S", "P", "Q", "E", "X", "G", "B", "C")
TERMINAL = ("truncation", "budget", "turn_limit", "infeasible", "wrong_conclusion", "other")
SLMS = (
    ("functiongemma:270m", 0.27, -4.0), ("qwen3:0.6b", 0.6, -0.6), ("qwen3:1.7b", 1.7, -0.3),
    ("qwen3.5:2b", 2.0, 0.0), ("granite4:3b", 3.0, 0.0), ("ministral-3:3b", 3.0, 0.3),
    ("gemma4:e4b", 4.0, 0.4), ("nemotron-3-nano:4b", 4.0, 0.5), ("ministral-3:8b", 8.0, 0.9),
    ("qwen3:8b", 8.0, 0.3), ("ministral-3:14b", 14.0, -0.8), ("qwen3:14b", 14.0, 0.8),
    ("gpt-oss:20b", 20.0, 0.4), ("mistral-small3.2:24b", 24.0, 0.5), ("gemma4:26b", 26.0, 1.2),
    ("qwen3:32b", 32.0, 0.9),
)
REFERENCE = ("gpt-5", None, 1.2)


def synth_corpus(seed: int = 0, n_variants: int = 5, n_runs: int = 5) -> tuple[list[dict], dict]:
    """Records and models_meta for the 17-model corpus described in the module docstring."""
    rng = np.random.default_rng(seed)
    tasks = [(f"{t}{i}", t) for t in TIERS for i in range(1, 6)]
    task_eff = rng.normal(0.0, 0.8, len(tasks))
    var_eff = rng.normal(0.0, 0.3, n_variants)
    records: list[dict] = []
    meta: dict[str, dict] = {}
    for name, params, ability in (*SLMS, REFERENCE):
        meta[name] = {"params_b": params, "pricing": {}}
        per_token = 1e-8 if params is not None else 5e-6
        for ti, (task, tier) in enumerate(tasks):
            for v in range(n_variants):
                logit = ability - TIER_DIFFICULTY[tier] + task_eff[ti] + var_eff[v]
                p = 1.0 / (1.0 + np.exp(-logit))
                for r in range(n_runs):
                    infra = bool(rng.random() < 0.005)
                    passed = bool(rng.random() < p) and not infra
                    failed = not passed and not infra
                    tin, tout = int(rng.integers(500, 4000)), int(rng.integers(50, 800))
                    wall = float(rng.gamma(2.0, 2.0))
                    records.append({
                        "model": name, "task": task, "tier": tier, "variant": f"v{v}", "instance": "i0", "run": r,
                        "passed": passed, "infra_error": infra,
                        "failure_mode": str(rng.choice(FAILURE_MODES)) if failed else None,
                        "first_unmet": str(rng.choice(OBLIGATIONS)) if failed else None,
                        "terminal_flag": str(rng.choice(TERMINAL)) if failed and rng.random() < 0.4 else None,
                        "tokens_in": tin, "tokens_out": tout, "latency_s": wall * 0.9, "wall_s": wall,
                        "cost_usd": (tin + 8 * tout) * per_token,
                    })
    return records, meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1 if SMOKE else 5)
    ap.add_argument("--n-boot", type=int, default=200 if SMOKE else 10_000)
    ap.add_argument("--interval-method", choices=("guarded", "paper"), default="guarded")
    args = ap.parse_args()

    records, meta = synth_corpus()
    kwargs = dict(reference=REFERENCE[0], margin_pp=10.0, n_boot=args.n_boot, seed=42,
                  interval_method=args.interval_method)
    summary = aggregate(records, meta, **kwargs)  # warm-up (imports, BLAS init)

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        summary = aggregate(records, meta, **kwargs)
        times.append(time.perf_counter() - t0)

    tracemalloc.start()
    aggregate(records, meta, **kwargs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux

    n_tier_tests = sum(1 for m in summary.paired.tests.values() for s, t in m.items() if s != "overall")
    n_over_tests = sum(1 for m in summary.paired.tests.values() if "overall" in m)
    print(f"corpus: {len(records)} runs, {len(meta)} models (incl. reference {REFERENCE[0]!r}), "
          f"{len(summary.scopes) - 1} tiers")
    print(f"paired tests: {n_tier_tests} (model, tier) + {n_over_tests} overall; n_boot={args.n_boot}; "
          f"intervals: {args.interval_method} (resampling {summary.config['resampling_unit']})")
    print(f"aggregate wall time: best {min(times):.3f} s, median {sorted(times)[len(times) // 2]:.3f} s "
          f"over {args.repeat} runs")
    print(f"peak traced memory: {peak / 2**20:.1f} MiB; process max RSS: {rss_mb:.1f} MiB")
    print(f"JSON size: {len(summary.dumps()) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
