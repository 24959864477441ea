"""Cost of being installed, and the import cost of a benchmark run (issue 29).

1. `pytest --co -q` in a one-test project, with the plugin and with `-p no:agentfloor`, runs
   interleaved (A B A B ...) so that load drifting on a shared machine hits both alike; prints
   the median and the best of each side by side and their difference.
2. A benchmark run (`cases/tier_A/A1.toml --model oracle`, one item): the time from starting the
   pytest process to the first item's start (pytest_runtest_logstart), against the same for the
   one-test project without the plugin, so what the plugin's imports add is their difference.

    python benchmarks/bench_startup.py [--rounds 15]

AGENTFLOOR_BENCH_SMOKE=1 runs 2 rounds (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))
FIRST_ITEM = '''
import os, time
def pytest_runtest_logstart(nodeid, location):
    path = os.environ["AF_FIRST_ITEM"]
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(repr((time.time(), time.process_time())))
'''


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: with .pyc files
    env["PYTHONPATH"] = os.pathsep.join([str(work), str(REPO)])  # this checkout, not an installed copy
    return env


def wall(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one run; CPU is nan where os.wait4 is missing (Windows)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if hasattr(os, "wait4"):
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime
    else:  # pragma: no cover
        proc.wait()
        cpu = float("nan")
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return time.perf_counter() - start, cpu


def first_item(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from starting the process to the first item's logstart, and the process's CPU seconds by
    then (steadier than wall time on a loaded machine)."""
    marker = Path(env["AF_FIRST_ITEM"])
    marker.unlink(missing_ok=True)
    start = time.time()
    subprocess.run(cmd, cwd=cwd, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    at, cpu = ast.literal_eval(marker.read_text())
    return at - start, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2 if SMOKE else 15)
    args = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "proj").mkdir()
        (work / "proj" / "test_one.py").write_text("def test_one():\n    pass\n")
        (work / "first_item.py").write_text(FIRST_ITEM)
        env = {**_env(work), "AF_FIRST_ITEM": str(work / "first")}
        co = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
        wall(co, work / "proj", env)  # warm the file cache and write the .pyc files
        wall([*co, "-p", "no:agentfloor"], work / "proj", env)
        on_runs, off_runs = [], []
        for _ in range(args.rounds):
            on_runs.append(wall(co, work / "proj", env))
            off_runs.append(wall([*co, "-p", "no:agentfloor"], work / "proj", env))
        on, off = [r[0] for r in on_runs], [r[0] for r in off_runs]
        on_cpu, off_cpu = [r[1] for r in on_runs], [r[1] for r in off_runs]
        diff = statistics.median(on) - statistics.median(off)
        print(f"pytest --co -q, one-test project, {args.rounds} rounds interleaved: installed median "
              f"{statistics.median(on) * 1e3:.0f} ms (best {min(on) * 1e3:.0f}), -p no:agentfloor median "
              f"{statistics.median(off) * 1e3:.0f} ms (best {min(off) * 1e3:.0f}); difference "
              f"{diff * 1e3:+.0f} ms (median), {(min(on) - min(off)) * 1e3:+.0f} ms (best); load {load:.1f}; "
              f"CPU median {statistics.median(on_cpu) * 1e3:.0f} ms vs {statistics.median(off_cpu) * 1e3:.0f} ms, "
              f"difference {(statistics.median(on_cpu) - statistics.median(off_cpu)) * 1e3:+.0f} ms", flush=True)
        bench = [sys.executable, "-m", "pytest", str(REPO / "cases" / "tier_A" / "A1.toml"), "--model", "oracle",
                 "--variants", "v0", "--instances", "i0", "-q", "-p", "no:cacheprovider", "-p", "first_item",
                 "--agentfloor-report", "none", "--agentfloor-report-dir", str(work / "reports"),
                 "--rootdir", str(REPO), "-o", "addopts="]
        plain = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "first_item", "-p",
                 "no:agentfloor"]
        first_item(bench, work / "proj", env)
        runs: dict[str, list[tuple[float, float]]] = {"bench": [], "plain": []}
        for _ in range(args.rounds):
            runs["bench"].append(first_item(bench, work / "proj", env))
            runs["plain"].append(first_item(plain, work / "proj", env))
        (starts, cpus), (plains, plain_cpus) = ([[r[i] for r in runs[k]] for i in (0, 1)] for k in ("bench", "plain"))
        after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"first item starts after: benchmark run (A1, oracle) median {statistics.median(starts):.3f} s "
              f"(best {min(starts):.3f}); plain one-test run without the plugin median {statistics.median(plains):.3f} s "
              f"(best {min(plains):.3f}); the plugin's imports and set-up add "
              f"{statistics.median(starts) - statistics.median(plains):.3f} s (median); CPU by the first item: "
              f"median {statistics.median(cpus):.3f} s (best {min(cpus):.3f}) against {statistics.median(plain_cpus):.3f} s "
              f"(best {min(plain_cpus):.3f}); load {after:.1f} after", flush=True)


if __name__ == "__main__":
    main()
