"""Per-item harness overhead with a model that answers instantly (issue 7).

Runs the scripted oracle on the 2-step tier-A case A1 (one tool call, one answer) N times in one
process, no xdist, and prints the median time per item from pytest's own logstart→logfinish
(setup, episode, grading, record, report) plus the amortised wall time per item including
collection and reporting, from two run sizes so start-up cancels out.

    python benchmarks/bench_overhead.py [--items 2000] [--profile]
    python benchmarks/bench_overhead.py --items 1000 --concurrency 1,16,64   # look-ahead on vs off

The median logstart->logfinish is the figure issue 18 quotes (about 0.45 ms per item): scripted
models play inline whatever --agentfloor-concurrency says, so with concurrency on it measures the
cost of the look-ahead itself.
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMING_PLUGIN = '''
import time, json, os
_t = {}
_d = []
def pytest_runtest_logstart(nodeid, location):
    _t[nodeid] = time.perf_counter()
def pytest_runtest_logfinish(nodeid, location):
    _d.append(time.perf_counter() - _t.pop(nodeid))
def pytest_unconfigure(config):
    with open(os.environ["AF_BENCH_OUT"], "w") as fh:
        json.dump(_d, fh)
'''


def run(items: int, workdir: Path, profile: Path | None = None, concurrency: int = 1) -> tuple[float, list[float]]:
    out = workdir / "durations.json"
    env = {**os.environ, "AF_BENCH_OUT": str(out), "PYTHONPATH": os.pathsep.join([str(workdir), str(REPO)])}  # this checkout, not an installed copy
    args = [sys.executable]
    if profile:
        args += ["-m", "cProfile", "-o", str(profile)]
    args += ["-m", "pytest", str(REPO / "cases" / "tier_A" / "A1.toml"), "--model", "oracle", "--variants", "v0",
             "--instances", "i0", "--agentfloor-runs", str(items), "-q", "-p", "no:cacheprovider", "-p", "timing_plugin",
             "--agentfloor-report-dir", str(workdir / "reports"), "--agentfloor-report", "none", "--rootdir", str(REPO),
             "-o", "addopts=", "-p", "no:benchmark", "-p", "no:hypothesis", "-p", "no:xdist",
             "--agentfloor-concurrency", str(concurrency)]
    start = time.perf_counter()
    subprocess.run(args, cwd=workdir, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    import json

    return wall, json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--growth", action="store_true", help="amortised per-item cost at 100, 1,000 and 10,000 items")
    ap.add_argument("--concurrency", default="1", help="comma-separated --agentfloor-concurrency values to measure")
    args = ap.parse_args()
    if args.growth:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "timing_plugin.py").write_text(TIMING_PLUGIN)
            for n in (100, 1000, 10000):
                wall, durations = run(n, work)
                print(f"items={n}: total {wall:.2f} s, median per item {statistics.median(durations) * 1e3:.3f} ms, "
                      f"last-10% median {statistics.median(durations[-n // 10:]) * 1e3:.3f} ms")
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "timing_plugin.py").write_text(TIMING_PLUGIN)
        for conc in [int(c) for c in args.concurrency.split(",")]:
            load = os.getloadavg()[0]
            small_wall, _ = run(100, work, concurrency=conc)
            wall, durations = run(args.items, work, concurrency=conc)
            median_ms = statistics.median(durations) * 1e3
            amortised_ms = (wall - small_wall) / (args.items - 100) * 1e3
            print(f"concurrency={conc} items={args.items} median per item (logstart->logfinish) = {median_ms:.3f} ms; "
                  f"amortised incl. collection+reporting = {amortised_ms:.3f} ms; total wall {wall:.2f} s; "
                  f"load {load:.1f}", flush=True)
        print(f"ratio vs inspect_ai's ~25 ms per mock sample: {25 / amortised_ms:.1f}x less overhead")
        if args.profile:
            prof = work / "prof.out"
            run(args.items, work, profile=prof)
            buf = io.StringIO()
            pstats.Stats(str(prof), stream=buf).sort_stats("tottime").print_stats(12)
            print(buf.getvalue())


if __name__ == "__main__":
    main()
