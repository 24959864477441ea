"""A server that dies mid-sweep: how long do 20 remaining items take to end? (issue 27 point 11)

The server (tests/fakeserver.py, real HTTP on 127.0.0.1) answers every request with HTTP 502, as a
proxy in front of a dead model server does; the model has the default retries (2) and the items
run one at a time (the slowest case: with concurrency the items would overlap their retries).
Before the breaker each item spent its retries' back-off; now five failures in a row pause the
endpoint and the rest end at once as infrastructure errors naming it.

    python benchmarks/bench_dead_endpoint.py [--runs 4]   # 5 variants x runs items
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_dead_endpoint.py   # compare a version
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakeserver import FakeModelServer, status  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1 if os.environ.get("AGENTFLOOR_BENCH_SMOKE") else 4, help="runs per variant (5 variants of case A1)")
    args = parser.parse_args()
    code = os.environ.get("PYTHONPATH") or str(REPO)
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(lambda body: status(502, "bad gateway")) as server:
        work = Path(tmp)
        shutil.copytree(REPO / "cases" / "tier_A", work / "cases" / "tier_A")
        (work / "models.toml").write_text(f'[models.gone]\nprovider = "openai"\nmodel = "tiny"\n'
                                          f'base_url = "{server.openai_url}"\n')
        cmd = [sys.executable, "-m", "pytest", "cases/tier_A/A1.toml", "--model", "gone", "--instances", "i0",
               "--agentfloor-runs", str(args.runs), "--no-probe", "--agentfloor-concurrency", "1", "-q",
               "-p", "no:cacheprovider", "--durations=0", "--durations-min=0"]
        start = time.perf_counter()
        out = subprocess.run(cmd, cwd=work, env={**os.environ, "PYTHONPATH": code}, capture_output=True, text=True,
                             check=False).stdout
        took = time.perf_counter() - start
        items = sum(float(m.group(1)) for m in re.finditer(r"^([0-9.]+)s (?:setup|call|teardown) ", out, re.M))
        print(f"{5 * args.runs} items after the server died: {items:.1f} s in the items ({took:.1f} s wall with "
              f"pytest's start-up and reports), {len(server.requests)} requests sent  [code: {code}]")


if __name__ == "__main__":
    main()
