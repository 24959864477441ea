"""Per-item harness overhead with a model that answers instantly, against bare pytest (issues 7, 29).

Runs the scripted oracle on the 2-step tier-A case A1 (one tool call, one answer) N times in one
process, no xdist, and, side by side in the same run, bare pytest (`-p no:agentfloor`) on a
trivial parametrized test of N cases. Prints for each the median time per item from pytest's own
logstart→logfinish (setup, episode, grading, record, report), wall and CPU (the process's CPU time:
steadier than wall time on a loaded machine, where a process waits for a core), and the amortised
wall time per item including collection and reporting (two run sizes, so start-up cancels out), then
their ratios.

    python benchmarks/bench_overhead.py [--items 2000] [--profile]
    python benchmarks/bench_overhead.py --items 1000 --concurrency 1,16,64   # look-ahead on vs off
    python benchmarks/bench_overhead.py --instructions   # instructions per item (valgrind's callgrind)

--instructions counts the instructions of whole pytest processes under callgrind at 20 and 120
items, for both sides: the difference per item is steady on a loaded machine, where times move by
a third between runs (it needs valgrind; about two minutes).

N items are --agentfloor-runs up to 1000 (its maximum) times as many prompt variants as needed.
Scripted models play inline whatever --agentfloor-concurrency says, so with concurrency on it
measures the cost of the look-ahead itself. AGENTFLOOR_BENCH_SMOKE=1 runs 150 items
(tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
TIMING_PLUGIN = '''
import time, json, os
_t = {}
_d = []
_c = []
def pytest_runtest_logstart(nodeid, location):
    _t[nodeid] = (time.perf_counter(), time.process_time())
def pytest_runtest_logfinish(nodeid, location):
    wall, cpu = _t.pop(nodeid)
    _d.append(time.perf_counter() - wall)
    _c.append(time.process_time() - cpu)
def pytest_unconfigure(config):
    with open(os.environ["AF_BENCH_OUT"], "w") as fh:
        json.dump({"wall": _d, "cpu": _c}, fh)
'''


SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))
MAX_RUNS = 1000  # options.MAX_RUNS
BARE_TEST = """
import pytest

@pytest.mark.parametrize("i", range(int(__import__("os").environ["AF_BARE_N"])))
def test_trivial(i):
    assert i >= 0
"""

#: the floor: a hand-written item doing in plain Python what a benchmark item must do for the oracle on
#: A1 (a two-turn episode with one tool call, nine checks, a record of the same fields and size as ours
#: appended as one line under flock, 40 JUnit properties), with no generality, validation or hooks: what
#: pytest's protocol plus that work costs, so the figure for agentfloor has a reachable reference
FLOOR_PLUGIN = r'''
import json, os, pytest
try:
    import fcntl
except ImportError:  # Windows: no lock, the write alone
    fcntl = None
SYSTEM = ("You are an operations assistant working in a sandbox of synthetic business records. Use the provided "
          "tools to look up what you need; never guess record ids or values. When the task asks for a decision, "
          "record it with submit_decision exactly once. When you have the answer, reply with it in plain text and "
          "stop calling tools.")
TABLE = {"INV-Q7P2K": {"on_hand": 340}}
CONFIG = {k: None for k in ("base_url", "api_key_env", "seed", "think", "reasoning_effort", "context_window",
                            "context_window_max", "max_connections", "rpm", "slots", "threads", "threads_batch",
                            "params_b")}
CONFIG.update(name="oracle", provider="scripted", model="", temperature=0.0, max_tokens=1024, timeout_s=60.0,
              retries=2, system_prompt="default", policy="oracle",
              pricing={"hourly_usd": None, "input_per_mtok": None, "output_per_mtok": None})
PROTOCOL = {"name": "agentfloor", "turn_limit": "tier", "call_limit": False, "token_budget": None,
            "completion_cap": None, "truncation_stop": False, "malformed_stop": False, "infeasibility_stop": False,
            "infra_as_failure": False, "step_budget_scale": 1.0, "repeat_rule": "declared",
            "submission_feedback": "expected", "extended_steps": {"D": 20, "E": 20}}
TURN_NULLS = dict.fromkeys(("busy_s", "reasoning_tokens", "cost_usd", "refusal", "menu_size", "endpoint"))


class Call:
    __slots__ = ("turn", "id", "name", "raw_arguments", "arguments", "result", "hallucinated", "malformed",
                 "repeated", "distractor")

    def __init__(self, turn, id, name, raw):
        self.turn, self.id, self.name, self.raw_arguments = turn, id, name, raw
        self.arguments, self.result = None, {}
        self.hallucinated = self.malformed = self.repeated = self.distractor = False


def model(messages):
    if len(messages) == 2:
        return None, [("call_0_0", "get_attribute", json.dumps({"record_id": "INV-Q7P2K", "attribute": "on_hand"}))]
    return "340", []


def episode():
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "How many units of inventory "
                "item INV-Q7P2K are on hand? Answer with the number."}]
    turns, answer = [], None
    for index in range(2):
        content, calls = model(messages)
        turn = {"index": index, "content": content, "finish_reason": "tool_calls" if calls else "stop", "calls": [],
                "tokens_in": sum(len(m.get("content") or "") for m in messages) // 4, "tokens_out": 20,
                "latency_s": 0.0, **TURN_NULLS, "leaked_call": False, "calls_rejected": 0, "controller": False,
                "usage_invalid": []}
        turns.append(turn)
        if not calls:
            messages.append({"role": "assistant", "content": content})
            answer = content
            break
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]})
        for call_id, name, raw in calls:
            call = Call(index, call_id, name, raw)
            turn["calls"].append(call)
            args = call.arguments = json.loads(raw)
            call.result = {"status": "ok", "data": {**args, "value": TABLE[args["record_id"]][args["attribute"]]}}
            messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                             "content": json.dumps(call.result, sort_keys=True)})
    return messages, turns, answer


def grade(turns, answer):
    calls = [c for t in turns for c in t["calls"]]
    return {"A": True, "S": all(c.name == "get_attribute" for c in calls), "P": any(c.arguments for c in calls),
            "Q": "340" in (answer or ""), "E": all(c.result["status"] == "ok" for c in calls),
            "X": not any(c.hallucinated for c in calls), "G": True, "B": len(turns) <= 2, "C": answer is not None}


class FloorItem(pytest.Item):
    def setup(self):
        self.messages, self.turns, self.answer = episode()
        self.verdicts = grade(self.turns, self.answer)

    def runtest(self):
        verdicts, turns = self.verdicts, self.turns
        for t in turns:
            t["calls"] = [{k: getattr(c, k) for k in Call.__slots__} for c in t["calls"]]
        passed = all(verdicts.values())
        record = {"schema": 1, "plugin_version": "0", "nodeid": self.nodeid, "model": "oracle",
                  "protocol": "agentfloor", "protocol_params": PROTOCOL, "task": "A1", "tier": "A", "variant": "v0",
                  "instance": "i0", "run": 0, "passed": passed, "infra_error": False, "first_unmet": None,
                  "failure_mode": None, "terminal_flag": None, "termination": "final_answer", "turns": len(turns),
                  "calls": sum(len(t["calls"]) for t in turns), "tokens_in": sum(t["tokens_in"] for t in turns),
                  "tokens_out": sum(t["tokens_out"] for t in turns), "reasoning_tokens": None, "latency_s": 0.0,
                  "wall_s": 0.0, "busy_s": 0.0, "endpoint": None, "endpoint_wait_s": 0.0, "queue_s": 0.0,
                  "cost_usd": None, "calls_malformed": 0, "calls_rejected": 0, "calls_hallucinated": 0,
                  "calls_repeated": 0, "turns_leaked": 0, "usage_invalid": [], "error": None, "case_hash": "0" * 16,
                  "config": CONFIG, "obligations": verdicts, "kind": "episode", "facets": None,
                  "verdicts": [{"code": k, "ok": ok} for k, ok in verdicts.items()],
                  "trajectory": {"case_id": "A1", "tier": "A", "variant": "v0", "instance": "i0", "run": 0,
                                 "model": "oracle", "tools": ["get_attribute"], "messages": self.messages,
                                 "turns": turns, "submissions": [], "final_answer": self.answer,
                                 "termination": "final_answer", "error": None, "wall_s": 0.0,
                                 "protocol": "agentfloor", "turn_budget": 2, "call_limit": None,
                                 "token_budget": None, "context_window": None, "distractors": [], "lane": None,
                                 "repairs": [], "router": None, "cap_scale": None, "controller_stops": [],
                                 "endpoint_wait_s": 0.0, "queue_s": 0.0}}
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        self.user_properties.extend((k, "" if v is None else str(v)) for k, v in list(record.items())[:40])
        if fcntl is not None:
            fcntl.flock(FD, fcntl.LOCK_EX)
        os.write(FD, line)
        if fcntl is not None:
            fcntl.flock(FD, fcntl.LOCK_UN)
        self.messages = self.turns = self.verdicts = None
        assert passed


class FloorFile(pytest.File):
    def collect(self):
        for i in range(int(os.environ["AF_BARE_N"])):
            yield FloorItem.from_parent(self, name=f"A1[v0-i0-r{i}-oracle]")


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".floor":
        return FloorFile.from_parent(parent, path=file_path)


FD = os.open(os.environ["AF_FLOOR_RUNS"], os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o644)
'''


def _runs_and_variants(items: int) -> tuple[int, str]:
    """--agentfloor-runs and --variants giving `items` items of A1 (it has five prompt variants)."""
    variants = -(-items // MAX_RUNS)
    if variants > 5 or items % variants:
        raise SystemExit(f"--items: {items} is not runs x variants with runs <= {MAX_RUNS} and at most 5 variants")
    return items // variants, ",".join(f"v{i}" for i in range(variants))


def _env(workdir: Path, out: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(AF_BENCH_OUT=str(out), PYTHONPATH=os.pathsep.join([str(workdir), str(REPO)]))  # this checkout
    return env


Timings = tuple[float, dict[str, Any]]


def run(items: int, workdir: Path, profile: Path | None = None, concurrency: int = 1) -> Timings:
    out = workdir / "durations.json"
    args = _args(items, workdir, concurrency)
    if profile:
        args[1:1] = ["-m", "cProfile", "-o", str(profile)]
    return _timed(args, workdir, _env(workdir, out), out)


def _args(items: int, workdir: Path, concurrency: int = 1) -> list[str]:
    runs, variants = _runs_and_variants(items)
    return [sys.executable, "-m", "pytest", str(REPO / "cases" / "tier_A" / "A1.toml"), "--model", "oracle", "--variants", variants,
             "--instances", "i0", "--agentfloor-runs", str(runs), "-q", "-p", "no:cacheprovider", "-p", "timing_plugin",
             "--agentfloor-report-dir", str(workdir / "reports"), "--agentfloor-report", "none", "--rootdir", str(REPO),
             "-o", "addopts=", "-p", "no:benchmark", "-p", "no:hypothesis", "-p", "no:xdist",
             "--agentfloor-concurrency", str(concurrency)]


def run_bare(items: int, workdir: Path) -> Timings:
    """Bare pytest, the plugin disabled, on a trivial test parametrized `items` times."""
    out = workdir / "durations.json"
    return _timed(_bare_args(workdir), workdir, {**_env(workdir, out), "AF_BARE_N": str(items)}, out)


def _bare_args(workdir: Path) -> list[str]:
    bare = workdir / "bare"
    bare.mkdir(exist_ok=True)
    (bare / "test_bare.py").write_text(BARE_TEST)
    return [sys.executable, "-m", "pytest", str(bare / "test_bare.py"), "-q", "-p", "no:cacheprovider", "-p",
            "timing_plugin", "--rootdir", str(bare), "-p", "no:agentfloor", "-p", "no:benchmark", "-p", "no:hypothesis",
            "-p", "no:xdist"]


def run_floor(items: int, workdir: Path) -> Timings:
    """The floor (FLOOR_PLUGIN): hand-written items doing an A1 item's work in plain Python."""
    out = workdir / "durations.json"
    floor = workdir / "floor"
    floor.mkdir(exist_ok=True)
    (floor / "A1.floor").write_text("")
    (workdir / "floor_plugin.py").write_text(FLOOR_PLUGIN)
    args = [sys.executable, "-m", "pytest", str(floor / "A1.floor"), "-q", "-p", "no:cacheprovider", "-p",
            "timing_plugin", "-p", "floor_plugin", "--rootdir", str(floor), "-p", "no:agentfloor", "-p", "no:benchmark",
            "-p", "no:hypothesis", "-p", "no:xdist"]
    return _timed(args, workdir, {**_env(workdir, out), "AF_BARE_N": str(items),
                                  "AF_FLOOR_RUNS": str(floor / "runs.jsonl")}, out)


def _timed(args: list[str], workdir: Path, env: dict[str, str], out: Path) -> Timings:
    """Run pytest; its wall time, and its CPU time (user+sys of the child) in the timings as "process_cpu"."""
    before = _children_cpu()
    start = time.perf_counter()
    subprocess.run(args, cwd=workdir, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    timings = json.loads(out.read_text())
    timings["process_cpu"] = _children_cpu() - before
    return wall, timings


def _children_cpu() -> float:
    try:
        import resource
    except ImportError:  # Windows: no CPU figure for the whole process, the per-item ones still hold
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def instructions(argv: list[str], workdir: Path, env: dict[str, str]) -> int:
    """Instructions executed by a pytest process, under valgrind's callgrind."""
    import re
    import shutil

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions: valgrind is not installed (Debian: apt-get install valgrind)")
    done = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], cwd=workdir,
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"--instructions: callgrind printed no count:\n{done.stderr[-400:]}")
    return int(found.group(1))


def instructions_per_item(workdir: Path, small: int = 20, big: int = 120) -> None:
    out = workdir / "durations.json"
    env = _env(workdir, out)
    ours = [instructions(_args(n, workdir), workdir, env) for n in (small, big)]
    bare = [instructions(_bare_args(workdir), workdir, {**env, "AF_BARE_N": str(n)}) for n in (small, big)]
    o, b = ((x[1] - x[0]) / (big - small) for x in (ours, bare))
    print(f"instructions per item ({small} vs {big} items, callgrind): agentfloor {o / 1e6:.2f} M vs bare pytest "
          f"{b / 1e6:.2f} M = {o / b:.2f}x", flush=True)


def per_item(fn: Callable[..., Timings], items: int, small: int, **kw: Any) -> tuple[float, float, float, float]:
    """(median logstart->logfinish wall ms, the same in CPU ms, amortised wall ms per item, amortised CPU
    ms per item). The amortised figures are the difference of two run sizes, so start-up cancels out
    and everything a user waits for per item counts: collection, the item, reporting, garbage
    collection (bare pytest's grows with the reports it keeps; the median leaves it out)."""
    small_wall, small_t = fn(small, **kw)
    wall, durations = fn(items, **kw)
    return (statistics.median(durations["wall"]) * 1e3, statistics.median(durations["cpu"]) * 1e3,
            (wall - small_wall) / (items - small) * 1e3,
            (durations["process_cpu"] - small_t["process_cpu"]) / (items - small) * 1e3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=150 if SMOKE else 2000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--instructions", action="store_true", help="instructions per item under callgrind instead")
    ap.add_argument("--growth", action="store_true", help="amortised per-item cost at 100, 1,000 and 10,000 items")
    ap.add_argument("--concurrency", default="1", help="comma-separated --agentfloor-concurrency values to measure")
    ap.add_argument("--best-of", type=int, default=1 if SMOKE else 3, help="repeat each measurement (interleaved); prints the best and the median")
    args = ap.parse_args()
    small = max(10, min(100, args.items // 2))
    if args.instructions:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "timing_plugin.py").write_text(TIMING_PLUGIN)
            instructions_per_item(Path(tmp))
        return
    if args.growth:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "timing_plugin.py").write_text(TIMING_PLUGIN)
            for n in (100, 1000, 5000):
                wall, timings = run(n, work)
                durations = timings["wall"]
                print(f"items={n}: total {wall:.2f} s, median per item {statistics.median(durations) * 1e3:.3f} ms, "
                      f"last-10% median {statistics.median(durations[-n // 10:]) * 1e3:.3f} ms")
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "timing_plugin.py").write_text(TIMING_PLUGIN)
        for conc in [int(c) for c in args.concurrency.split(",")]:
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            ours, bare, floor = [], [], []
            run(small, work, concurrency=conc)  # warm-up: the first run pays for compiling and caching
            run_bare(small, work)
            run_floor(small, work)
            for _ in range(args.best_of):  # interleaved, so that drifting load hits all alike
                ours.append(per_item(run, args.items, small, workdir=work, concurrency=conc))
                bare.append(per_item(run_bare, args.items, small, workdir=work))
                floor.append(per_item(run_floor, args.items, small, workdir=work))
            after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            (o_med, o_cpu, o_am, o_ac), (b_med, b_cpu, b_am, b_ac) = ([min(x[i] for x in side) for i in range(4)]
                                                                      for side in (ours, bare))
            # the median over the repeats as well as the best: on a loaded machine the best alone flatters
            (o_mm, o_mc), (b_mm, b_mc) = ([statistics.median(x[i] for x in side) for i in range(2)]
                                          for side in (ours, bare))
            print(f"concurrency={conc} items={args.items} (best of {args.best_of}, load {load:.1f} before, "
                  f"{after:.1f} after): median per item (logstart->logfinish) agentfloor {o_med:.3f} ms vs bare pytest "
                  f"{b_med:.3f} ms = {o_med / b_med:.2f}x; in CPU time agentfloor {o_cpu:.3f} ms vs bare {b_cpu:.3f} ms "
                  f"= {o_cpu / b_cpu:.2f}x; amortised incl. collection+reporting agentfloor {o_am:.3f} ms vs bare "
                  f"{b_am:.3f} ms = {o_am / b_am:.2f}x, in process CPU {o_ac:.3f} ms vs {b_ac:.3f} ms = "
                  f"{o_ac / b_ac:.2f}x; median of the {args.best_of} repeats: per item agentfloor "
                  f"{o_mm:.3f} ms vs bare {b_mm:.3f} ms = {o_mm / b_mm:.2f}x, CPU {o_mc:.3f} ms vs {b_mc:.3f} ms = "
                  f"{o_mc / b_mc:.2f}x", flush=True)
            f_med = min(x[0] for x in floor)
            print(f"floor (the same work hand-written in plain Python, benchmarks/bench_overhead.py FLOOR_PLUGIN): "
                  f"median per item {f_med:.3f} ms = {f_med / b_med:.2f}x bare pytest; agentfloor's own work per "
                  f"item {o_med - b_med:.3f} ms vs the floor's {f_med - b_med:.3f} ms", flush=True)
        if args.profile:
            prof = work / "prof.out"
            run(args.items, work, profile=prof)
            buf = io.StringIO()
            pstats.Stats(str(prof), stream=buf).sort_stats("tottime").print_stats(25)
            print(buf.getvalue())


if __name__ == "__main__":
    main()
