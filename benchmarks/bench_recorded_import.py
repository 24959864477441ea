"""Time grading recorded outputs (`python -m pytest_agentfloor import`) over the shipped call-site suite.

Outputs: every call-site case of cases/callsite answered by N recorded models (each case's
reference output, so every item passes), written as one JSONL. Measured: the wall time of one
`import` run (a whole pytest session: collection, one item per case and model, records, reports)
and of reading the JSONL alone, in a scratch copy of the project. No model is called.

    python benchmarks/bench_recorded_import.py [--models 9]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_agentfloor.kinds import load_file  # noqa: E402
from pytest_agentfloor.providers.recorded import read_outputs  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--models", type=int, default=1 if os.environ.get("AGENTFLOOR_BENCH_SMOKE") else 9)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "cases" / "callsite", root / "cases" / "callsite")
        (root / "pytest.ini").write_text("[pytest]\n")
        lines = []
        for path in sorted((root / "cases" / "callsite").glob("*.toml")):
            _, entries = load_file(path)
            for e in entries:
                case = e.resolve("v0", "i0")
                for m in range(args.models):
                    lines.append(json.dumps({"case_id": case.id, "model": f"model-{m}", "output": case.reference,
                                             "latency_s": 0.5, "input_tokens": 400, "output_tokens": 40}))
        out = root / "outputs.jsonl"
        out.write_text("\n".join(lines) + "\n")
        start = time.perf_counter()
        read_outputs(out)
        read_s = time.perf_counter() - start
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "import", "outputs.jsonl", "--", "-q",
                              "-p", "no:cacheprovider", "--agentfloor-report", "none"], cwd=root, env=env,
                             capture_output=True, text=True)
        wall = time.perf_counter() - start
        n = len(lines)
        print(f"{n} recorded outputs ({n // args.models} cases x {args.models} models), {out.stat().st_size / 1e6:.1f} MB")
        print(f"read_outputs: {read_s * 1000:.0f} ms; import (whole pytest session): {wall:.1f} s, "
              f"{1000 * wall / n:.1f} ms per item; exit {run.returncode}")
        if run.returncode not in (0,):
            print(run.stdout[-1500:], run.stderr[-1500:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
