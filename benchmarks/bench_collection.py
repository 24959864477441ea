"""Collection at paper scale (issue 7): `pytest cases/ --co -q` over all ladder tasks x 5 variants
x 5 runs x 17 model names (instance i0), timing the whole command and its peak resident memory.

    python benchmarks/bench_collection.py

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import os
import sys
import tempfile
import time
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))  # tests/test_benchmarks.py: seconds, in CI

REPO = Path(__file__).resolve().parents[1]
MODELS = [f"m{i:02d}" for i in range(2 if SMOKE else 17)]
RUNS = 1 if SMOKE else 5


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "cases", work / "cases")
        (work / "models.toml").write_text("".join(f'[models.{m}]\nprovider = "scripted"\npolicy = "oracle"\n\n'
                                                  for m in MODELS))
        cmd = [sys.executable, "-m", "pytest", "cases", "--co", "-q", "-p", "no:cacheprovider", "--model",
               ",".join(MODELS), "--agentfloor-runs", str(RUNS), "--instances", "i0"]
        best = None
        for _ in range(1 if SMOKE else 3):
            start = time.perf_counter()
            out = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=True).stdout
            wall = time.perf_counter() - start
            best = wall if best is None else min(best, wall)
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"{out.strip().splitlines()[-1]}; best wall of {1 if SMOKE else 3} (whole command, incl. interpreter start-up "
              f"and printing every id): {best:.2f} s; peak RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
