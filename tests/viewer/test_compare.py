"""`compare`: paired differences per model and tier, changed items, and the very gate verdict and
exit status a session run with --baseline gives on the same data."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.viewer.conftest import REPO, run_session


def compare(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_agentfloor", "compare", *args, "--n-boot", "2000"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300,
                          cwd=cwd)


def gate_lines(text: str) -> list[str]:
    keep = re.compile(r"^(gate tier |gate: |agentfloor gate: )")
    return [re.sub(r"^=+ | =+$", "", ln).strip() for ln in text.splitlines()
            if keep.match(re.sub(r"^=+ ", "", ln))]


#: every instance: 50 pairs in tiers A and B, above the 35 the guarded gate needs to certify a tier
PAIRS = ["--instances", "all"]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("compare")
    out = run_session(where, "--model", "oracle", "--agentfloor-report-dir", "base", *PAIRS)
    assert out.returncode == 0, out.stdout[-2000:]
    return where


@pytest.mark.parametrize("model, extra, status", [
    ("oracle", [], 0),
    ("fault-partial", [], 1),
    ("oracle", ["--gate-floor", "tier_A>=0.95", "--gate-tiers", "A"], 0),
    ("fault-wrong_tool", ["--gate-margin", "60"], None),  # whatever the session decides
    ("oracle", ["--noninferiority-bound", "one-sided", "--gate-min-pairs", "60"], 1),  # too few pairs: blocked
])
def test_compare_gives_the_session_gate_verdict(baseline: Path, model: str, extra: list[str],
                                                status: int | None) -> None:
    cand = f"cand-{model}-{len(extra)}"
    session = run_session(baseline, "--model", model, "--agentfloor-report-dir", cand, "--agentfloor-baseline", "base/runs.jsonl",
                          "-q", *PAIRS, *extra)
    stored = compare(str(baseline / "base" / "runs.jsonl"), str(baseline / cand / "runs.jsonl"), *extra)
    assert stored.returncode == session.returncode, (session.stdout[-1500:], stored.stdout, stored.stderr)
    if status is not None:
        assert stored.returncode == status
    got, want = gate_lines(stored.stdout), gate_lines(session.stdout)
    assert got and got == want


def test_same_model_from_two_sessions_kept_apart(baseline: Path, tmp_path: Path) -> None:
    again = run_session(baseline, "--model", "oracle,fault-resign", "--agentfloor-report-dir", "again", *PAIRS)
    assert (baseline / "again" / "runs.jsonl").is_file(), again.stdout[-2000:]
    viewer = tmp_path / "both.html"
    out = compare(str(baseline / "base" / "runs.jsonl"), str(baseline / "again" / "runs.jsonl"),
                  "--viewer", str(viewer), "--changed", "2")
    sessions = sorted(p.name for p in (baseline / "base" / "sessions").iterdir()) + \
        sorted(p.name for p in (baseline / "again" / "sessions").iterdir())
    assert f"oracle @ {sessions[1]}  vs  oracle @ {sessions[0]}" in out.stdout  # same name, two sessions
    # a model the baseline lacks is compared with the baseline's only model
    assert f"fault-resign @ {sessions[1]}  vs  oracle @ {sessions[0]}" in out.stdout
    assert "outcome changed on 0 item(s)" in out.stdout  # oracle against itself
    assert "the gate compares one candidate model" in out.stdout and out.returncode == 1  # as the session gate
    page = viewer.read_text()
    assert page.count(sessions[0]) >= 1 and page.count(sessions[1]) >= 1


def test_paired_rows_and_changed_items(baseline: Path) -> None:
    run_session(baseline, "--model", "fault-exhaust", "--agentfloor-report-dir", "worse", *PAIRS)
    out = compare(str(baseline / "base" / "runs.jsonl"), str(baseline / "worse" / "runs.jsonl"), "--viewer",
                  "v.html", cwd=baseline)
    assert (baseline / "v.html").is_file()
    rows = {m.group(1): m for m in re.finditer(
        r"^  (A|B|overall)\s+(\d+)\s+([\d.]+)%\s+([\d.]+)%\s+([-+\d.]+)\s+\[([-+\d.]+), ([-+\d.]+)\]\s+(\d+)/(\d+)",
        out.stdout, re.M)}
    assert set(rows) == {"A", "B", "overall"}, out.stdout
    base = [ln for ln in (baseline / "base" / "runs.jsonl").read_text().splitlines()]
    n_a = sum('"tier":"A"' in ln for ln in base)
    a = rows["A"]
    assert int(a.group(2)) == n_a and float(a.group(4)) == 100.0
    # Δ is the candidate's TCR minus the baseline's over the pairs, b/c the discordant pairs
    assert float(a.group(5)) == pytest.approx(float(a.group(3)) - 100.0, abs=0.1)
    assert int(a.group(8)) == 0 and int(a.group(9)) == round(n_a * (100 - float(a.group(3))) / 100)
    changed = int(re.search(r"outcome changed on (\d+) item", out.stdout).group(1))
    assert changed == int(rows["overall"].group(9))
    # the link lists the item and opens the candidate's run beside the baseline's, both named (not row numbers)
    link = re.search(r"broke (A\d)\[(v\d)-i0-r0\]  v\.html#item=A\d%2Fv\d%2Fi0%2Fr0&run=([^,\s]+)/fault-exhaust/"
                     r"(A\d)/(v\d)/i0/r0,([^,\s]+)/oracle/A\d/v\d/i0/r0$", out.stdout, re.M)
    assert link and link.group(1) == link.group(4) and link.group(2) == link.group(5), out.stdout


def test_compare_usage_errors(tmp_path: Path) -> None:
    out = compare(str(tmp_path / "a.jsonl"))
    assert out.returncode == 2 and "at least two" in out.stderr
    out = compare(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert out.returncode == 2 and "no such file" in out.stderr
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "b.jsonl").write_text("{}\n")
    out = compare(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert out.returncode == 2 and "no complete run records" in out.stderr and "no 'model' field" in out.stderr
    out = compare(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--gate-floor", "B=0.9")
    assert out.returncode == 2 and "expected TIER>=VALUE" in out.stderr


@pytest.mark.slow
def test_changed_item_link_opens_both_runs_side_by_side(baseline: Path) -> None:
    """compare's link, followed in the browser: the item listed (a removable filter) and the candidate's run
    beside the baseline's."""
    from tests.viewer.browser import launch, playwright_api

    sync_api = playwright_api()
    if not (baseline / "worse" / "runs.jsonl").is_file():
        run_session(baseline, "--model", "fault-exhaust", "--agentfloor-report-dir", "worse", *PAIRS)
    out = compare(str(baseline / "base" / "runs.jsonl"), str(baseline / "worse" / "runs.jsonl"), "--viewer",
                  "v.html", cwd=baseline)
    fragment = re.search(r"broke \S+  v\.html(#\S+)", out.stdout).group(1)
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.goto((baseline / "v.html").as_uri() + fragment)
            page.wait_for_selector("body[data-ready]")
            assert page.locator("#chips .chip", has_text="item:").count() == 1
            assert page.locator("#list tbody tr").count() == 2  # the item's two runs, one per session
            heads = page.locator("table.sbs thead th").all_inner_texts()
            assert len(heads) == 3 and heads[1].startswith("fault-exhaust") and heads[2].startswith("oracle")
            assert "FAIL" in heads[1] and "PASS" in heads[2] and page.locator("#detail p.missing").count() == 0
        finally:
            browser.close()


def test_call_site_runs_are_compared_and_the_ladder_gate_says_it_has_nothing_to_gate(tmp_path: Path) -> None:
    """compare on call-site records: the paired row, then no gate (exit 0); a session that asks for the
    gate on them fails with a message that says why, not 'has none'."""
    where = tmp_path / "cs"
    (where / "cases").mkdir(parents=True)
    shutil.copytree(REPO / "cases" / "callsite", where / "cases" / "callsite")
    shutil.copy(REPO / "models.toml", where / "models.toml")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    base = ["-m", "pytest", "cases/callsite/intent.toml", "-p", "no:cacheprovider", "-q", "--no-probe"]
    for model, out in (("oracle", "base"), ("fault-over_actuate", "cand")):
        subprocess.run([sys.executable, *base, "--model", model, "--agentfloor-report-dir", out], cwd=where,
                       env=env, capture_output=True, text=True, timeout=300)
    got = compare(str(where / "base" / "runs.jsonl"), str(where / "cand" / "runs.jsonl"))
    assert got.returncode == 0, got.stdout + got.stderr
    assert "callsite " in got.stdout
    assert "agentfloor gate: none: it certifies ladder tiers (A0, A, B, C, D, E); these runs hold callsite records" \
        in got.stdout
    gated = subprocess.run([sys.executable, *base, "--model", "oracle", "--agentfloor-report-dir", "again",
                            "--agentfloor-baseline", "base/runs.jsonl"], cwd=where, env=env, capture_output=True,
                           text=True, timeout=300)
    assert gated.returncode == 1
    assert "it certifies ladder tiers (A0, A, B, C, D, E) and this run holds none (24 call-site or pressure" \
        in gated.stdout
