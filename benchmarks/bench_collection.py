"""Collection at paper scale (issue 7): `pytest cases/ --co -q` over all ladder tasks x 5 variants
x 5 runs x 17 model names (instance i0), timing the whole command and its peak resident memory.

    python benchmarks/bench_collection.py
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = [f"m{i:02d}" for i in range(17)]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "cases", work / "cases")
        (work / "models.toml").write_text("".join(f'[models.{m}]\nprovider = "scripted"\npolicy = "oracle"\n\n'
                                                  for m in MODELS))
        cmd = [sys.executable, "-m", "pytest", "cases", "--co", "-q", "-p", "no:cacheprovider", "--model",
               ",".join(MODELS), "--agentfloor-runs", "5", "--instances", "i0"]
        best = None
        for _ in range(3):
            start = time.perf_counter()
            out = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=True).stdout
            wall = time.perf_counter() - start
            best = wall if best is None else min(best, wall)
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"{out.strip().splitlines()[-1]}; best wall of 3 (whole command, incl. interpreter start-up "
              f"and printing every id): {best:.2f} s; peak RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
