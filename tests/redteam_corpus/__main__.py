"""Run the red-team corpus: `python -m tests.redteam_corpus [-k TEXT] [-j N] [--json OUT] [--list]`.

Each scenario prints RIGHT or WRONG with what it observed; the last line is the score. Takes
some minutes (every scenario is a real pytest run or command), so it is not in the default test
run; tests/test_redteam_corpus.py checks the corpus's shape and the regressions live in
tests/test_redteam_*.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import harness
from .scenarios import load_all


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.redteam_corpus")
    ap.add_argument("-k", action="append", default=[], help="run scenarios whose id, point or area holds TEXT")
    ap.add_argument("-j", type=int, default=1, help="scenarios at once (each is a pytest run)")
    ap.add_argument("--json", type=Path, help="write the verdicts as JSON")
    ap.add_argument("--list", action="store_true", help="list the scenarios, run none")
    ap.add_argument("--keep", action="store_true", help="keep the scratch projects")
    args = ap.parse_args(argv)
    load_all()
    chosen = [s for s in harness.SCENARIOS
              if not args.k or any(k in s.sid or k == s.point or k in s.area for k in args.k)]
    if args.list:
        for s in chosen:
            print(f"{s.sid:8} point {s.point:5} {s.area:10} {s.title}")
        print(f"{len(chosen)} scenario(s)")
        return 0

    def one(s: harness.Scenario) -> tuple[harness.Scenario, harness.Verdict, float]:
        t0 = time.monotonic()
        try:
            v = s.fn()
        except Exception as exc:  # the corpus's own failure: counted wrong, shown, so it is fixed
            v = harness.Verdict(False, f"CORPUS ERROR {type(exc).__name__}: {exc} "
                                       f"{traceback.format_exc(limit=-2).splitlines()[-3:]}")
        return s, v, time.monotonic() - t0

    results = []
    t_start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for s, v, dt in pool.map(one, chosen):
            results.append((s, v, dt))
            mark = "RIGHT" if v.right else "WRONG"
            print(f"{mark:5} {s.sid:8} [{s.point}] {s.title} ({dt:.1f}s): {v.observed[:600]}", flush=True)
    right = sum(1 for _, v, _ in results if v.right)
    print(f"\nscore: {right}/{len(results)} right ({100.0 * right / max(1, len(results)):.1f}%) "
          f"in {time.monotonic() - t_start:.0f}s")
    wrong = [s.sid for s, v, _ in results if not v.right]
    if wrong:
        print("wrong: " + ", ".join(wrong))
    if args.json:
        args.json.write_text(json.dumps([{"id": s.sid, "point": s.point, "area": s.area, "title": s.title,
                                           "how": s.how, "right_means": s.right, "right": v.right,
                                           "observed": v.observed, "seconds": round(dt, 1)}
                                          for s, v, dt in results], indent=1, ensure_ascii=True))
    if not args.keep and harness._ROOT is not None:
        shutil.rmtree(harness._ROOT, ignore_errors=True)
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
