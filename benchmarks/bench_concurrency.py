"""Concurrency: against a server that answers every request after a fixed 200 ms, how close do
`-n 1`, `-n 4` and `-n 8` come to the ideal wall time items x turns x 0.2 s / workers? (issue 7)

The server (tests/fakeserver.py, real HTTP on 127.0.0.1) follows each case's reference solution,
so every item is a real two-turn OpenAI-wire episode of the tier-A case A1.

    python benchmarks/bench_concurrency.py [--items-per-worker 120] [--workers 1,4,8]

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))  # tests/test_benchmarks.py: seconds, in CI

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_agentfloor.suite.loader import load_case, resolve  # noqa: E402
from tests.fakeserver import FakeModelServer, reply, stall  # noqa: E402

DELAY_S = 0.2
CASE = REPO / "cases" / "tier_A" / "A1.toml"


def responder_for_a1():
    case, digest = load_case(CASE)
    # instances share prompt texts, so the benchmark runs i0 only and keys on the prompt
    by_prompt = {resolve(case, v, "i0", digest).prompt: resolve(case, v, "i0", digest) for v in case.prompts}

    def respond(body):
        msgs = body["messages"]
        ref = by_prompt[next(m["content"] for m in msgs if m["role"] == "user")].reference
        turn = sum(1 for m in msgs if m["role"] == "assistant")
        step = ref[turn]
        action = reply(tool_calls=[(c.tool, dict(c.args)) for c in step.calls]) if step.calls else reply(content=step.final)
        return stall(DELAY_S, then=action)

    return respond, len(case.prompts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items-per-worker", type=int, default=5 if SMOKE else 120)
    ap.add_argument("--workers", default="1,2" if SMOKE else "1,4,8")
    args = ap.parse_args()
    respond, per_run = responder_for_a1()
    turns = 2
    with FakeModelServer(respond) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "models.toml").write_text(
            f'[models.slow]\nprovider = "openai"\nmodel = "slow"\nbase_url = "{server.openai_url}"\n'
            'retries = 0\ntimeout_s = 10\n')
        (work / "cases" / "tier_A").mkdir(parents=True)
        (work / "cases" / "tier_A" / "A1.toml").write_bytes(CASE.read_bytes())
        for n in [int(x) for x in args.workers.split(",")]:
            runs = max(1, round(args.items_per_worker * n / per_run))
            items = runs * per_run
            ideal = items * turns * DELAY_S / n
            cmd = [sys.executable, "-m", "pytest", "cases", "--model", "slow", "--agentfloor-runs", str(runs), "--instances", "i0", "--no-probe", "-q",
                   "-p", "no:cacheprovider", "--agentfloor-report", "none", "-o", "addopts="]
            cmd += ["-n", str(n)] if n > 1 else ["-p", "no:xdist"]
            start = time.perf_counter()
            done = subprocess.run(cmd, cwd=work, env={**os.environ, "PYTHONPATH": str(REPO)},
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
            last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
            print(f"-n {n}: {items} items x {turns} turns x {DELAY_S}s / {n} = ideal {ideal:.1f} s; "
                  f"measured {wall:.1f} s ({100 * (wall / ideal - 1):+.1f}% over ideal) [{last}]")


if __name__ == "__main__":
    main()
