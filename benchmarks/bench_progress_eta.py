"""How close the live progress line's ETA comes under --agentfloor-concurrency (issue 34).

A real run on a pseudo-terminal against the loopback fake server of tests/test_progress_concurrency.py
(every reply waits a seeded random 0.5-1.5 s; A1 x 5 variants x RUNS runs, 64 episodes at once). Each
drawing's ETA is compared with the time the run really still took, read off this process's clock: the
drawing's arrival on the terminal and the server's last reply. The first tenth of the run (no episode
has finished yet) and its last 4 s (the whole-second ETA is itself coarse there) are left out.

    python benchmarks/bench_progress_eta.py               # 640 episodes, about 20 s
    python benchmarks/bench_progress_eta.py --runs 256    # longer

The figure depends on the machine's load (pytest's own thread competes with the server's): each line
carries the 1-minute load average before the run. AGENTFLOOR_BENCH_SMOKE=1 runs a smoke size.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.test_progress_concurrency import RUNS, eta_seconds, run_live  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=48 if SMOKE else RUNS, help="runs per variant (5 variants)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "cases" / "tier_A").mkdir(parents=True)
        (project / "cases" / "tier_A" / "A1.toml").write_bytes((REPO / "cases" / "tier_A" / "A1.toml").read_bytes())
        srv, draws = run_live(project, args.runs)
    start, end = draws[0][0], srv.last_reply
    errors, unknown = [], 0
    for t, m in draws:
        left = end - t
        if t - start < 0.1 * (end - start) or left < 4.0:
            continue
        eta = eta_seconds(m["eta"])
        if eta is None and m["done"] == "0":
            unknown += 1  # nothing finished yet (a loaded machine): "ETA ?" is the honest line
            continue
        if eta is None:
            raise SystemExit(f"a drawing past the first tenth has no ETA: {m.group(0)!r}")
        errors.append(abs(eta - left) / left)
    print(f"load average before {load:.2f}; {5 * args.runs} episodes at concurrency 64; run {end - start:.1f} s"
          + (f"; {unknown} drawing(s) before the first episode ended showed no ETA" if unknown else ""))
    if not errors:
        print("ETA error: no drawing in the measured window (the run was shorter than the window)")
        return
    print(f"ETA error over {len(errors)} drawings: max {max(errors):.1%}, mean {sum(errors) / len(errors):.1%}")


if __name__ == "__main__":
    main()
