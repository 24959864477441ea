"""Time the call-site graders (through their guard) and the ladder's answer checks on the hostile
outputs of issue 27, and the size of the record a 10,000-call reply leaves.

Each figure is the worst of `--repeat` runs (seconds); the point is that every one is bounded
(a verdict, never an exception) and small.

    python benchmarks/bench_hostile_grading.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_agentfloor.callsite.kind import grade_call  # noqa: E402
from pytest_agentfloor.grading.obligations import check_answer  # noqa: E402
from pytest_agentfloor.suite.schema import AnswerCheck  # noqa: E402
from pytest_agentfloor.trajectory import Trajectory, Turn  # noqa: E402
from tests.callsite.helpers import case  # noqa: E402

HOSTILE = {
    "codegen 1+ x4000": ("codegen", "1+" * 4000 + "1"),
    "codegen not x20000": ("codegen", "not " * 20000 + "x"),
    "codegen a.b.b x100000": ("codegen", "a" + ".b" * 100_000),
    "actuator JSON 100,000 deep": ("actuator", "[" * 100_000 + "]" * 100_000),
    "planner JSON 100,000 deep": ("planner", "[" * 100_000 + "]" * 100_000),
    "actuator 5,000-digit int": ("actuator", "[" + "7" * 5000 + "]"),
    "intent lone surrogate": ("intent", "\ud800"),
    "actuator 1 MB of spaces": ("actuator", "[" + " " * 1_000_000 + "]"),
}
CASES = {
    "intent": case("intent", labels=("a", "b"), label="a", reference="a"),
    "actuator": case("actuator", actions=[{"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}]),
    "planner": case("planner", plan={"types": ["scheduled"]}),
    "codegen": case("codegen", code={"functions": ["process"], "uses": []}),
}


def traj(output: str) -> Trajectory:
    return Trajectory(case_id="t", tier="callsite", variant="v0", instance="i0", run=0, model="m", tools=[],
                      turns=[Turn(index=0, content=output)], final_answer=output, termination="final_answer",
                      turn_budget=1, call_limit=0)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=1 if os.environ.get("AGENTFLOOR_BENCH_SMOKE") else 3)
    args = p.parse_args()
    print(f"{'hostile output':32} {'worst s':>8}  verdict")
    for name, (grader, output) in HOSTILE.items():
        worst, rule = 0.0, ""
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            g = grade_call(CASES[grader], traj(output))
            worst = max(worst, time.perf_counter() - t0)
            rule = g.first_unmet.code if g.first_unmet else "passed"
        print(f"{name:32} {worst:8.3f}  {rule}")
    check = AnswerCheck(kind="json_fields", fields={"total": 12.5})
    for name, text in {"answer 400-digit total": '{"total": ' + "9" * 400 + "}",
                       "answer JSON 100,000 deep": '{"total": ' + "[" * 100_000 + "}"}.items():
        t0 = time.perf_counter()
        ok, _, _ = check_answer(check, text)
        print(f"{name:32} {time.perf_counter() - t0:8.3f}  {'pass' if ok else 'fail'}")
    from pytest_agentfloor.config import ModelConfig
    from pytest_agentfloor.results import build_record
    from pytest_agentfloor.trajectory import MAX_CALLS_PER_TURN

    t = traj("")
    t.turns = [Turn(index=0, finish_reason="malformed", calls_rejected=10_000)]
    t.termination = "malformed_call"
    rec = build_record(CASES["codegen"], t, None, ModelConfig(name="m", provider="scripted", policy="oracle"), "n")
    print(f"record of a 10,000-call reply: {len(json.dumps(rec)):,} bytes (calls kept per turn: at most "
          f"{MAX_CALLS_PER_TURN})")


if __name__ == "__main__":
    main()
