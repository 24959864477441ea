"""A generated paper-scale runs.jsonl for the viewer: 17 models x 30 cases x 5 variants x 5 runs =
12,750 runs (the shape of benchmarks/bench_aggregate.py's corpus), with transcripts.

Deterministic (seeded), and with a few planted facts the browser tests look for:

- ``NEEDLE`` occurs in one tool result only, of the run ``NEEDLE_RUN``;
- the runs ``DIVERGE`` (two models on one item) share turn 0 and differ from turn 1 on;
- the models in ``UNPRICED`` have no cost (``cost_usd`` null).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TIERS = ("A0", "A", "B", "C", "D", "E")
DIFFICULTY = {"A0": 0.1, "A": 0.2, "B": 0.4, "C": 0.6, "D": 0.75, "E": 0.9}
MODELS = tuple(f"m{n:02d}" for n in range(16)) + ("gpt-5",)
TASKS = tuple(f"{t}{k}" for t in TIERS for k in range(1, 6))
VARIANTS = tuple(f"v{k}" for k in range(5))
RUNS = 5
UNPRICED = ("m00", "m01", "m02")
NEEDLE = "needle-7q4z-quartz"
#: (model, task, variant, instance, run)
NEEDLE_RUN = ("m03", "B2", "v1", "i0", 2)
DIVERGE = (("m00", "A1", "v0", "i0", 0), ("m01", "A1", "v0", "i0", 0))
TOOLS = ["lookup_record", "get_attribute", "compare_records", "submit_decision"]
SYSTEM = ("You are an operations assistant working in a sandbox of synthetic business records. Use the provided "
          "tools to look up what you need; never guess record ids or values.")


def _turn(rng: random.Random, rid: str, n: int, last: bool) -> dict[str, Any]:
    if last:
        return {"content": f"The answer is {rid}.", "finish_reason": "stop", "tokens_in": 300 + 40 * n,
                "tokens_out": 12, "latency_s": round(rng.uniform(0.2, 3), 3), "calls": []}
    name = rng.choice(TOOLS[:3])
    args = {"record_id": rid, "attribute": rng.choice(["kwh_last_period", "owner", "status", "region"])}
    result = {"status": "ok", "data": {"record_id": rid, "value": rng.randint(1, 99999)}}
    return {"content": "", "finish_reason": "tool_calls", "tokens_in": 300 + 40 * n, "tokens_out": 40,
            "latency_s": round(rng.uniform(0.2, 3), 3),
            "calls": [{"name": name, "raw_arguments": json.dumps(args), "result": result}]}


def record(model: str, task: str, variant: str, run: int, rng: random.Random) -> dict[str, Any]:
    tier = task.rstrip("0123456789")
    skill = MODELS.index(model) / len(MODELS)
    passed = rng.random() > DIFFICULTY[tier] * (1.2 - skill)
    rid = f"BLD-{rng.randint(0, 36 ** 4):05X}"
    n_turns = rng.randint(1, 4)
    turns = [_turn(rng, rid, n, n == n_turns - 1) for n in range(n_turns)]
    key = (model, task, variant, "i0", run)
    if key == NEEDLE_RUN:
        turns[0] = _turn(rng, rid, 0, False)
        turns[0]["calls"][0]["result"]["data"]["note"] = f"the {NEEDLE} is here"
    if key in DIVERGE:  # the same first turn, then each model its own way
        turns = [{"content": "", "finish_reason": "tool_calls", "tokens_in": 300, "tokens_out": 40, "latency_s": 1.0,
                  "calls": [{"name": "lookup_record", "raw_arguments": '{"record_id": "BLD-00001"}',
                             "result": {"status": "ok", "data": {"record_id": "BLD-00001"}}}]},
                 _turn(rng, f"BLD-{MODELS.index(model):05d}", 1, model == "m00"),
                 _turn(rng, "BLD-00001", 2, True)]
        n_turns, passed = 3, model == "m01"
    tokens_in = sum(t["tokens_in"] for t in turns)
    tokens_out = sum(t["tokens_out"] for t in turns)
    verdicts = [{"code": c, "ok": passed or c != "Q", "expected": f"{rid}" if c == "Q" else None,
                 "observed": None if passed or c != "Q" else "BLD-00000"} for c in ("S", "Q", "C")]
    return {
        "schema": 1, "model": model, "task": task, "tier": tier, "variant": variant, "instance": "i0", "run": run,
        "nodeid": f"cases/tier_{tier}/{task}.toml::{task}[{variant}-i0-r{run}-{model}]",
        "passed": passed, "infra_error": False, "first_unmet": None if passed else "Q",
        "failure_mode": None if passed else rng.choice(["F1", "F2", "F3", "F4", "F7"]),
        "terminal_flag": None if passed else "other", "termination": "final_answer", "turns": n_turns,
        "calls": sum(len(t["calls"]) for t in turns), "tokens_in": tokens_in, "tokens_out": tokens_out,
        "latency_s": round(sum(t["latency_s"] for t in turns), 3),
        "cost_usd": None if model in UNPRICED else round((tokens_in + 4 * tokens_out) * 1e-7 * (1 + skill), 8),
        "case_hash": f"c{TASKS.index(task):011d}",
        "obligations": {v["code"]: v["ok"] for v in verdicts}, "verdicts": verdicts,
        "trajectory": {
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": f"Task {task} ({variant}): find the record the case asks for."}],
            "tools": TOOLS, "turns": turns, "final_answer": turns[-1]["content"], "termination": "final_answer",
            "turn_budget": 6, "call_limit": 8,
        },
    }


def records(models: tuple[str, ...] = MODELS, seed: int = 7) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    for model in models:
        for task in TASKS:
            for variant in VARIANTS:
                for run in range(RUNS):
                    yield record(model, task, variant, run, rng)


def write_runs(path: Path, models: tuple[str, ...] = MODELS) -> int:
    """Write the runs file; return how many runs it holds (12,750 with every model)."""
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for r in records(models):
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
            n += 1
    return n


def ref(key: tuple[str, str, str, str, int], session: str) -> str:
    """The viewer's name for a run in a link (viewer.js refOf)."""
    from urllib.parse import quote

    model, task, variant, instance, run = key
    return "/".join(quote(str(p), safe="") for p in (session, model, task, variant, instance, f"r{run}"))
