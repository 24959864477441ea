"""Time the transcript viewer on a paper-scale file: load, first full-text search, opening runs side by side.

File: tests/viewer/bigfile.py's generated sweep, 17 models x 30 cases x 5 variants x 5 runs = 12,750
runs with transcripts, written by `python -m pytest_agentfloor view`'s own write_viewer. Browser:
Debian's headless chromium driven by Playwright (executable_path; no browser download).

Figures (medians over --repeat fresh pages at each width, 900 and 1,600 px), each read from the
page's own clock:
- load: navigation start to the list painted (body[data-ready]), with where the time went: the
  index parsed, the list drawn (the performance measures af-index and af-draw);
- first search: the first keystroke to the matching list painted (data-search-ms; the 0.12 s typing
  pause included), of which the script's work (data-filter-ms); the transcripts' strings are
  inflated after the load (af-text), usually before the typing pause ends; Playwright's own wall
  time from typing to the count it sees is printed too (its polling adds to it);
- side by side: opening two runs of one item aligned turn by turn (data-open-ms).

    python benchmarks/bench_viewer.py [--repeat 5]

AGENTFLOOR_BENCH_SMOKE=1 runs it in a smoke size (3 models, 2,250 runs; tests/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_agentfloor.report.viewer import write_viewer  # noqa: E402
from tests.viewer import bigfile  # noqa: E402

WIDTHS = (900, 1600)


def measure(browser: Any, page_file: Path, width: int, pair: str, repeat: int, expect: Any) -> dict[str, Any]:
    """Each figure over `repeat` fresh pages `width` px wide."""
    out: dict[str, Any] = {"load": [], "search": [], "work": [], "wall": [], "sbs": [], "marks": {}}
    for _ in range(repeat):
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(page_file.as_uri())
        page.wait_for_selector("body[data-ready]")
        out["load"].append(float(page.get_attribute("body", "data-ready")) / 1000)
        t = time.perf_counter()
        page.fill("#f-q", bigfile.NEEDLE)
        expect(page.locator("#count")).to_have_text(re.compile(r"^1 of "))
        out["wall"].append(time.perf_counter() - t)
        page.wait_for_selector("body[data-search-ms]")
        out["search"].append(float(page.get_attribute("body", "data-search-ms")) / 1000)
        out["work"].append(float(page.get_attribute("body", "data-filter-ms")) / 1000)
        page.wait_for_function("performance.getEntriesByName('af-runs').length > 0")
        for name, ms in page.evaluate("performance.getEntriesByType('measure').map(m => [m.name, m.duration])"):
            out["marks"].setdefault(name, []).append(ms)
        page.goto(page_file.as_uri() + "#run=" + pair)
        page.wait_for_selector("table.sbs")
        out["sbs"].append(float(page.get_attribute("body", "data-open-ms")) / 1000)
        page.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2 if SMOKE else 5)
    args = ap.parse_args()
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        print("bench_viewer: playwright is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    chromium = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-headless-shell") if os.path.exists(p)), None)
    if chromium is None:
        print("bench_viewer: no /usr/bin/chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2
    models = ("m00", "m01", "m03") if SMOKE else bigfile.MODELS  # the smoke size keeps the planted runs
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "sweep"
        where.mkdir()
        n = bigfile.write_runs(where / "runs.jsonl", models)
        t = time.perf_counter()
        write_viewer([where / "runs.jsonl"], where / "viewer.html")
        write_s = time.perf_counter() - t
        size = (where / "viewer.html").stat().st_size
        pair = ",".join(bigfile.ref(k, "sweep") for k in bigfile.DIVERGE)
        before = os.getloadavg()[0]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            try:
                figures = {w: measure(browser, where / "viewer.html", w, pair, args.repeat, expect) for w in WIDTHS}
            finally:
                browser.close()
    load1, load5, _ = os.getloadavg()
    med = statistics.median
    print(f"viewer: {n:,} runs, {size / 1e6:.1f} MB viewer.html (written in {write_s:.1f} s); {args.repeat} page(s) "
          f"per width; load average {before:.2f} before, {load1:.2f} / {load5:.2f} after (1 / 5 min) on "
          f"{os.cpu_count()} cores")
    for width, f in figures.items():
        ms = {name: f"{med(v):.0f} ms" for name, v in sorted(f["marks"].items())}
        both = [a + b for a, b in zip(f["load"], f["search"])]
        print(f"at {width} px:")
        print(f"  viewer load: median {med(f['load']):.2f} s (range {min(f['load']):.2f}-{max(f['load']):.2f}); "
              f"index parsed in {ms.get('af-index')}, list drawn in {ms.get('af-draw')}")
        print(f"  first search: median {med(f['search']):.2f} s keystroke to list painted (incl. 0.12 s typing "
              f"pause; range {min(f['search']):.2f}-{max(f['search']):.2f}), {med(f['work']) * 1000:.0f} ms of it "
              f"script work; {med(f['wall']):.2f} s as Playwright sees it")
        print(f"  load + first search: median {med(both):.2f} s (range {min(both):.2f}-{max(both):.2f})")
        print(f"  after the load: strings inflated for search in {ms.get('af-text')}, transcripts in "
              f"{ms.get('af-runs')}; side by side (2 runs) drawn in {med(f['sbs']) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
