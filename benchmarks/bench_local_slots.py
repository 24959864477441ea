"""Wall time of the README main job against the embedded model, per server setting, interleaved.

Runs `pytest cases/ -m ladder --model local --variants v0 --instances i0 -p no:cacheprovider`
(or the cases given with --cases) once per setting per round, settings interleaved within each
round (A B C, A B C, ...) so that load drifting on a shared machine hits every setting alike.
Each setting is a models.toml `[models.local]` with `slots`, `threads`, `threads_batch` and an
`--agentfloor-concurrency`; `old` is the behaviour before slots existed (one slot, one thread,
every episode played inline). Prints per run the wall time and the load average before and after,
then per setting the median and the spread, and whether every item had the same outcome under
every setting and round (temperature 0: any difference is the server's nondeterminism).

    python benchmarks/bench_local_slots.py                                   # old vs s1t1 vs s2t1
    python benchmarks/bench_local_slots.py --cases cases/tier_A0 cases/tier_A --rounds 2 \\
        --settings old,s1t1,s2t1,s4t1,s1t2,s2t2,s4t2
    python benchmarks/bench_local_slots.py --settings old,s2t1 --rounds 2 --json out.json

A setting name is `old` or `s<slots>t<threads>` with optional `b<threads_batch>` and `c<concurrency>`
(default 16), e.g. `s2t1b2c16`, and optional llama-server flags that have no models.toml field,
each after a `+`: `+fa` / `+nofa` (flash attention on / off), `+poll0` (threads sleep instead of
spin-waiting for work), `+mlock`, `+ub256` (physical batch size); these go through a wrapper
script given as $AGENTFLOOR_LLAMA_SERVER. Needs the `local` extra.

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))  # tests/test_benchmarks.py: seconds, in CI

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SETTING = re.compile(r"s(?P<slots>\d+)t(?P<threads>\d+)(?:b(?P<batch>\d+))?(?:c(?P<conc>\d+))?")
EXTRA = {"fa": ["--flash-attn", "on"], "nofa": ["--flash-attn", "off"], "poll0": ["--poll", "0"],
         "mlock": ["--mlock"]}
MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"


def parse_setting(name: str) -> dict:
    """{'slots', 'threads', 'threads_batch', 'concurrency'} of a setting name (see the module doc)."""
    base, *extras = name.split("+")
    flags: list[str] = []
    for extra in extras:
        if extra in EXTRA:
            flags += EXTRA[extra]
        elif re.fullmatch(r"ub\d+", extra):
            flags += ["--ubatch-size", extra[2:]]
        else:
            raise SystemExit(f"--settings: unknown extra {extra!r} in {name!r} (known: {', '.join(EXTRA)}, ub<N>)")
    if base == "old":
        return {"slots": 1, "threads": 1, "threads_batch": None, "concurrency": 1, "flags": flags}
    m = SETTING.fullmatch(base)
    if not m:
        raise SystemExit(f"--settings: {name!r} is not 'old' or s<slots>t<threads>[b<batch threads>][c<concurrency>]")
    return {"slots": int(m["slots"]), "threads": int(m["threads"]), "flags": flags,
            "threads_batch": int(m["batch"]) if m["batch"] else None, "concurrency": int(m["conc"] or 16)}


def models_toml(s: dict) -> str:
    lines = ["[models.local]", 'provider = "local"', f'model = "{MODEL}"', "params_b = 0.5", "max_tokens = 512",
             "timeout_s = 120", f"slots = {s['slots']}", f"threads = {s['threads']}"]
    if s["threads_batch"]:
        lines.append(f"threads_batch = {s['threads_batch']}")
    return "\n".join(lines) + "\n"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_once(name: str, cases: list[str], work: Path, label: str) -> dict:
    s = parse_setting(name)
    models = work / f"models-{name}.toml"
    models.write_text(models_toml(s))
    report = work / f"reports-{label}"
    cmd = [sys.executable, "-m", "pytest", *cases, "-m", "ladder", "--model", "local", "--variants", "v0",
           "--instances", "i0", "-p", "no:cacheprovider", "-q", "--models-file", str(models),
           "--agentfloor-report-dir", str(report), "--agentfloor-concurrency", str(s["concurrency"])]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if s["flags"]:
        from pytest_agentfloor.local.server import find_binary

        wrapper = work / f"llama-server-{label}"
        wrapper.write_text(f'#!/bin/sh\nexec "{find_binary()}" "$@" {" ".join(s["flags"])}\n')
        wrapper.chmod(0o755)
        env["AGENTFLOOR_LLAMA_SERVER"] = str(wrapper)
    before = loadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = loadavg()
    outcomes = {}
    for runs in report.glob("sessions/*/runs.jsonl"):
        for line in runs.read_text().splitlines():
            r = json.loads(line)
            # pass/fail, how the episode ended, and the tokens it generated: equal only if the model said the same
            outcomes[f"{r['task']}[{r['variant']}-{r['instance']}]"] = (
                f"{'pass' if r.get('passed') else 'fail'}/{r.get('termination')}/{r.get('tokens_out')}")
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    return {"setting": name, "label": label, "wall_s": round(wall, 1), "load_before": before, "load_after": after,
            "exit": proc.returncode, "summary": summary, "outcomes": outcomes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", default="s1t1" if SMOKE else "old,s1t1,s2t1")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--cases", nargs="+", default=["cases/tier_A0"] if SMOKE else ["cases/"])
    ap.add_argument("--json", type=Path, default=None, help="also write every run here")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.settings.split(",") if n.strip()]
    for n in names:
        parse_setting(n)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="agentfloor-slots-") as tmp:
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]  # A B C, C B A: drift hits every setting alike
            for name in order:
                res = run_once(name, args.cases, Path(tmp), f"{name}-r{r}")
                runs.append(res)
                print(f"round {r} {name:10} {res['wall_s']:7.1f} s  load {res['load_before']} -> {res['load_after']}"
                      f"  exit {res['exit']}  {res['summary']}", flush=True)
    print(f"\n{'setting':10} {'runs':>4} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name in names:
        walls = [x["wall_s"] for x in runs if x["setting"] == name]
        print(f"{name:10} {len(walls):>4} {statistics.median(walls):>9.1f} {min(walls):>7.1f} {max(walls):>7.1f}")
    items = sorted({k for x in runs for k in x["outcomes"]})
    verdict = {k: {str(x["outcomes"].get(k)).split("/")[0] for x in runs} for k in items}
    differ = [k for k in items if len({x["outcomes"].get(k) for x in runs}) > 1]
    passed = {x["label"]: sum(v.startswith("pass") for v in x["outcomes"].values()) for x in runs}
    print(f"\nitems {len(items)}; passed per run {passed}")
    print(f"pass/fail the same in every run for {sum(len(v) == 1 for v in verdict.values())}/{len(items)} items; "
          f"termination and tokens generated the same for {len(items) - len(differ)}/{len(items)}")
    for k in differ:
        print(f"  {k}: " + ", ".join(f"{x['label']}={x['outcomes'].get(k)}" for x in runs))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
