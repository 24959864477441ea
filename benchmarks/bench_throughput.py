"""Throughput: N two-turn episodes against a server answering every request after a fixed delay,
with episodes in flight per process (`--agentfloor-concurrency`) and/or xdist workers (issue 18).

The server (tests/fakeserver.py, real HTTP on 127.0.0.1) runs in this process and follows the
reference solution of tier-A case A1, so every item is a real two-turn OpenAI-wire episode; pytest
runs in a subprocess, whose wall time, CPU time (user+sys of the pytest process tree) and peak
memory (max RSS of one process) are reported.

    python benchmarks/bench_throughput.py --episodes 400 --delay 0.2 --settings c1,c16,c64,n8,n16
    python benchmarks/bench_throughput.py --episodes 1000 --delay 2 --settings c1000
    python benchmarks/bench_throughput.py --episodes 400 --oracle --settings c1,c16   # harness overhead
    python benchmarks/bench_throughput.py --episodes 400 --settings c64 --repeat 3     # best and median of 3

A setting is cN (one process, --agentfloor-concurrency N), nW (xdist -n W, --agentfloor-concurrency 1) or nWcN (both).
Each figure carries the 1-minute load average before it ran: the machine is shared, so compare
figures taken at similar load, and prefer the best of a few repeats.

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
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

CASE = REPO / "cases" / "tier_A" / "A1.toml"
TURNS = 2


def responder_for_a1(delay_s: float):
    case, digest = load_case(CASE)
    by_prompt = {resolve(case, v, "i0", digest).prompt: resolve(case, v, "i0", digest) for v in case.prompts}

    def respond(body):
        msgs = body["messages"]
        ref = by_prompt[next(m["content"] for m in msgs if m["role"] == "user")].reference
        step = ref[sum(1 for m in msgs if m["role"] == "assistant")]
        action = reply(tool_calls=[(c.tool, dict(c.args)) for c in step.calls]) if step.calls else reply(content=step.final)
        return stall(delay_s, then=action) if delay_s else action

    return respond, len(case.prompts)


def parse_setting(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(?:n(\d+))?(?:c(\d+))?", text)
    if not m or not text:
        raise SystemExit(f"--settings: {text!r} is not cN, nW or nWcN")
    return int(m.group(1) or 0), int(m.group(2) or 1)


def run(work: Path, model: str, runs: int, workers: int, conc: int) -> tuple[float, float, float, float, str]:
    cmd = [sys.executable, "-m", "pytest", "cases", "--model", model, "--agentfloor-runs", str(runs), "--instances", "i0",
           "--no-probe", "-q", "-p", "no:cacheprovider", "--agentfloor-report", "none", "-o", "addopts=",
           "--agentfloor-concurrency", str(conc)]
    cmd += ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_after = resource.getrusage(resource.RUSAGE_SELF)  # the fake server's threads live in this process
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    server_cpu = (server_after.ru_utime - server_before.ru_utime) + (server_after.ru_stime - server_before.ru_stime)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    return wall, cpu, server_cpu, after.ru_maxrss / 1024, last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=10 if SMOKE else 400)
    ap.add_argument("--delay", type=float, default=0.05 if SMOKE else 0.2, help="seconds the server waits before every answer")
    ap.add_argument("--settings", default="c1,c4" if SMOKE else "c1,c16,c64,n8,n16")
    ap.add_argument("--oracle", action="store_true", help="the in-process oracle instead of the server: harness cost")
    ap.add_argument("--repeat", type=int, default=1, help="runs per setting; prints each, then the best and the median")
    args = ap.parse_args()
    respond, per_run = responder_for_a1(args.delay)
    runs = max(1, round(args.episodes / per_run))
    episodes = runs * per_run
    with FakeModelServer(respond) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "models.toml").write_text(
            f'[models.slow]\nprovider = "openai"\nmodel = "slow"\nbase_url = "{server.openai_url}"\n'
            f'retries = 0\ntimeout_s = {max(30, 10 * args.delay)}\n')
        (work / "cases" / "tier_A").mkdir(parents=True)
        (work / "cases" / "tier_A" / "A1.toml").write_bytes(CASE.read_bytes())
        model = "oracle" if args.oracle else "slow"
        print(f"{episodes} episodes x {TURNS} turns, server delay {0 if args.oracle else args.delay:g} s, "
              f"{os.cpu_count()} cores")
        for text in args.settings.split(","):
            workers, conc = parse_setting(text)
            inflight = max(1, workers) * conc
            walls = []
            for _ in range(max(1, args.repeat)):
                load = os.getloadavg()[0]
                wall, cpu, server_cpu, rss, last = run(work, model, runs, workers, conc)
                walls.append(wall)
                if args.oracle:
                    head = f"wall {wall:6.2f} s  {1000 * wall / episodes:.3f} ms/item"
                else:
                    head = f"wall {wall:6.2f} s (ideal {episodes * TURNS * args.delay / inflight:5.2f} s)"
                print(f"{text:>8}: {head}  cpu {cpu:6.2f} s  peak rss {rss:5.0f} MB  server cpu {server_cpu:5.2f} s  "
                      f"load {load:4.1f}  [{last}]", flush=True)
            if len(walls) > 1:
                print(f"{text:>8}: best {min(walls):6.2f} s  median {statistics.median(walls):6.2f} s "
                      f"of {len(walls)}", flush=True)

if __name__ == "__main__":
    main()
