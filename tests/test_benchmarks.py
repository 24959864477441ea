"""Every benchmark in benchmarks/ runs in a smoke size, so a broken one fails CI (issue 29).

Each runs as a script with AGENTFLOOR_BENCH_SMOKE=1 (its own small defaults: seconds) and must
exit 0 and print its figure. The figures themselves are not checked: timings belong in the
benchmarks, never in tests; the full-size runs and their numbers are in docs/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: benchmark -> what its output must contain (a figure with its unit)
FIGURES = {
    "bench_aggregate.py": r"aggregate wall time: best \d+\.\d+ s",
    "bench_capture.py": r"load average before [\d.]+(.|\n)*added latency per forwarded request: median [+-]\d+\.\d+ ms",
    "bench_collection.py": r"best wall of 1 .*: \d+\.\d+ s; peak RSS \d+ MB",
    "bench_concurrency.py": r"-n 2: .* measured \d+\.\d+ s",
    "bench_corpus.py": r"median per item: plain \d+\.\d+ ms, --record (.|\n)*resume after SIGKILL",
    "bench_dead_endpoint.py": r"items after the server died: \d+\.\d+ s in the items",
    "bench_hostile_grading.py": r"record of a 10,000-call reply: [\d,]+ bytes",
    "bench_recorded_import.py": r"read_outputs: \d+ ms; import \(whole pytest session\): \d+\.\d+ s",
    "bench_local_model.py": r"A0",
    "bench_local_slots.py": r"s1t1",
    "bench_progress_eta.py": r"episodes at concurrency 64; run \d+\.\d+ s\nETA error",
    "bench_overhead.py": r"agentfloor \d+\.\d+ ms vs bare pytest \d+\.\d+ ms = \d+\.\d+x",
    "bench_startup.py": r"difference [+-]\d+ ms .*\n.*first item starts after: benchmark run .* median \d+\.\d+ s",
    "bench_throughput.py": r"c4: wall +\d+\.\d+ s",
    "bench_viewer.py": r"at 900 px:\n  viewer load: median \d+\.\d+ s(.|\n)*at 1600 px:(.|\n)*load \+ first search: median \d+\.\d+ s",
}
#: these drive headless Chromium (Debian's, through Playwright)
BROWSER = {"bench_viewer.py"}
#: these start the embedded model's llama-server
REALMODEL = {"bench_local_model.py", "bench_local_slots.py"}


def test_every_benchmark_has_a_smoke_check() -> None:
    assert sorted(p.name for p in (REPO / "benchmarks").glob("bench_*.py")) == sorted(FIGURES)


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.realmodel] if n in REALMODEL else [])
                                  for n in sorted(FIGURES)])
def test_benchmark_runs_in_its_smoke_size_and_prints_its_figure(name: str) -> None:
    if name in BROWSER:  # skips without chromium or playwright, fails without them under AGENTFLOOR_REQUIRE_BROWSER=1
        from tests.viewer.browser import chromium, playwright_api

        chromium()
        playwright_api()
    env = {**os.environ, "AGENTFLOOR_BENCH_SMOKE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / name)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert re.search(FIGURES[name], done.stdout), done.stdout[-3000:]
