"""Cost of --record / --replay per item, and of resuming a 1,000-item run killed half-way (issue 5).

Scripted oracle on the tier-A case A1, one process. Per-item figures are medians of pytest's
logstart->logfinish (the episode, grading, record writing and, here, the cassette work).

    python benchmarks/bench_corpus.py [--items 1000]

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))  # tests/test_benchmarks.py: seconds, in CI

REPO = Path(__file__).resolve().parents[1]
TIMING = '''
import json, os, signal, time
_t, _d = {}, []
def pytest_runtest_logstart(nodeid, location):
    _t[nodeid] = time.perf_counter()
def pytest_runtest_logfinish(nodeid, location):
    _d.append(time.perf_counter() - _t.pop(nodeid))
    kill = int(os.environ.get("AF_KILL_AFTER", "0"))
    if kill and len(_d) == kill:
        os.kill(os.getpid(), signal.SIGKILL)
def pytest_unconfigure(config):
    with open(os.environ["AF_BENCH_OUT"], "w") as fh:
        json.dump(_d, fh)
'''


def pytest(work: Path, items: int, *extra: str, kill_after: int = 0) -> tuple[float, list[float]]:
    out = work / "durations.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "AF_BENCH_OUT": str(out), "PYTHONPATH": os.pathsep.join([str(work), str(REPO)]),  # this checkout
           "AF_KILL_AFTER": str(kill_after)}
    cmd = [sys.executable, "-m", "pytest", "cases", "--model", "oracle", "--variants", "v0", "--instances", "i0",
           "--agentfloor-runs", str(items), "-q", "-p", "no:cacheprovider", "-p", "timing", "--agentfloor-report", "none",
           *extra]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return wall, (json.loads(out.read_text()) if out.exists() else [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=20 if SMOKE else 1000)
    args = ap.parse_args()
    n = args.items
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "timing.py").write_text(TIMING)
        (work / "cases" / "tier_A").mkdir(parents=True)
        shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", work / "cases" / "tier_A")
        plain_wall, plain = pytest(work, n)
        record_wall, record = pytest(work, n, "--agentfloor-record")
        replay_wall, replay = pytest(work, n, "--agentfloor-replay")
        med = {k: statistics.median(v) * 1e3 for k, v in (("plain", plain), ("record", record), ("replay", replay))}
        print(f"{n} items, median per item: plain {med['plain']:.3f} ms, --record {med['record']:.3f} ms "
              f"(x{med['record'] / med['plain']:.2f}), --replay {med['replay']:.3f} ms "
              f"(x{med['replay'] / med['plain']:.2f}); whole runs {plain_wall:.2f} / {record_wall:.2f} / "
              f"{replay_wall:.2f} s")
        shutil.rmtree(work / "reports")
        full_wall, _ = pytest(work, n)
        shutil.rmtree(work / "reports")
        pytest(work, n, kill_after=n // 2)
        kept = len((work / "reports" / "latest" / "runs.jsonl").read_text().splitlines())  # killed: not published
        resume_wall, resumed = pytest(work, n, "--agentfloor-resume")
        total = len((work / "reports" / "latest" / "runs.jsonl").read_text().splitlines())
        print(f"resume after SIGKILL at {kept}/{n} items: {resume_wall:.2f} s to finish the remaining "
              f"{len(resumed)} (an uninterrupted run takes {full_wall:.2f} s); runs.jsonl holds {total} records")


if __name__ == "__main__":
    main()
