"""The transcript viewer: what viewer.html holds, the view command, report.html's links, and the
page itself in headless Chromium (open, filter, open a transcript, hostile text stays text)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.grading.headline import record_headline
from pytest_agentfloor.report.viewer import build_data, render_viewer
from pytest_agentfloor.results import read_records

from tests.viewer.bigfile import ref
from tests.viewer.browser import dump_dom, launch, playwright_api, screenshot
from tests.viewer.conftest import REPO

HOSTILE = '</script><script>document.title="owned"</script><img src=x onerror="document.title=\'owned\'">'


def _records(stored: Path) -> list[dict]:
    return read_records(stored / "reports" / "runs.jsonl")[0]


def _session(reports: Path) -> str:
    """The session label the session's own viewer.html gives its runs (the one session under reports/)."""
    from pytest_agentfloor.report.viewer import source_labels

    return source_labels([next((reports / "sessions").glob("*/runs.jsonl"))])[0]


def _view(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_agentfloor", "view", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_session_writes_and_publishes_the_viewer(stored: Path) -> None:
    reports = stored / "reports"
    assert (reports / "viewer.html").is_file() and (reports / "latest" / "viewer.html").is_file()
    assert "agentfloor transcripts: " in (stored / "stdout.txt").read_text()
    page = (reports / "report.html").read_text()
    assert 'href="viewer.html#model=fault-exhaust&amp;tier=A"' in page  # a heatmap cell
    assert 'href="viewer.html#model=fault-hallucinate&amp;outcome=fail&amp;fm=F1"' in page  # a failure-mode bar


def test_viewer_is_self_contained_and_holds_the_grader_account(stored: Path) -> None:
    page = (stored / "reports" / "viewer.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "default-src 'none'" in page  # the page may not fetch anything, even if text tried to
    index, runs = build_data([("s", _records(stored))])
    rows = [dict(zip(index["columns"], r)) for r in index["rows"]]
    assert {r["model"] for r in rows} == {"oracle", "fault-exhaust", "fault-hallucinate", "fault-malformed",
                                          "fault-partial"}
    i = next(n for n, r in enumerate(rows) if r["model"] == "fault-exhaust" and r["tier"] == "A")
    assert rows[i]["headline"].startswith("turn budget exhausted") and "(F4) — unmet: Q" in rows[i]["headline"]
    unmet = [v for v in runs["runs"][i]["v"] if not v["ok"]]
    assert unmet and unmet[0]["c"] == "Q" and runs["strings"][unmet[0]["e"]]  # expected vs observed are kept


def test_view_command_errors_and_output(stored: Path, tmp_path: Path) -> None:
    out = _view(str(tmp_path / "missing.jsonl"))
    assert out.returncode == 2 and "no such file" in out.stderr
    (tmp_path / "empty.jsonl").write_text("not json\n")
    out = _view(str(tmp_path / "empty.jsonl"), "--out", str(tmp_path / "v.html"))
    assert out.returncode == 2 and "no complete run records" in out.stderr and ":1: not a JSON record" in out.stderr
    out = _view(str(stored / "reports" / "runs.jsonl"), "--out", str(tmp_path))
    assert out.returncode == 0 and (tmp_path / "viewer.html").is_file(), out.stderr


def test_cause_first_summary_lines_differ_at_80_columns(stored: Path) -> None:
    lines = [ln for ln in (stored / "stdout.txt").read_text().splitlines() if ln.startswith("FAILED ")]
    assert lines and all(len(ln) <= 80 for ln in lines)
    first = {}
    for ln in lines:
        model = re.search(r"-(fault-[a-z_]+)\]", ln).group(1)
        first.setdefault(model, ln.split(" - ", 1)[1])
    assert first["fault-exhaust"].startswith("turn budget")
    assert first["fault-hallucinate"].startswith("hallucinated")
    assert first["fault-malformed"].startswith("malformed")
    assert len(set(first.values())) == len(first)


def test_failure_message_shows_failed_calls_and_cuts_arguments(stored: Path) -> None:
    rec = next(r for r in _records(stored) if r["model"] == "fault-hallucinate" and r["tier"] == "B")
    assert record_headline(rec).startswith("hallucinated tool fetch_all_records (F1)")
    long = dict(rec, termination="final_answer")
    call = long["trajectory"]["turns"][0]["calls"][0]
    call["raw_arguments"] = json.dumps({"q": "x" * 500})
    call["malformed"], long["failure_mode"] = True, "F2"
    head = record_headline(long)
    assert "…" in head and len(head) < 160


def _hostile_file(stored: Path, tmp_path: Path) -> Path:
    lines = (stored / "reports" / "runs.jsonl").read_text().splitlines()
    rec = json.loads(next(ln for ln in lines if '"model":"fault-partial"' in ln))
    rec["trajectory"]["turns"][-1]["content"] = HOSTILE
    rec["trajectory"]["final_answer"] = HOSTILE
    rec["task"] = "A1"
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines + [json.dumps(rec)]) + "\n")
    return path


def test_model_text_cannot_break_out_of_the_data_block(stored: Path, tmp_path: Path) -> None:
    page = render_viewer([("s", read_records(_hostile_file(stored, tmp_path))[0])])
    index = page.split('<script type="application/json" id="af-index">', 1)[1].split("</script>", 1)[0]
    assert "<" not in index  # JSON with every < as \u003c
    blocks = re.findall(r'<script type="application/gzip" id="(af-[a-z]+)">([^<]*)</script>', page)
    assert [name for name, _ in blocks] == ["af-text", "af-post", "af-runs"]
    assert all(re.fullmatch(r"[A-Za-z0-9+/=]+", body) for _, body in blocks)  # base64: no <, &, quote or space
    text = gzip.decompress(base64.b64decode(blocks[0][1])).decode()
    assert HOSTILE in text.split("\0")  # the model's text itself, stored once, shown through textContent


@pytest.mark.slow
def test_viewer_in_headless_chromium(stored: Path, tmp_path: Path) -> None:
    """Open with a filter preset and a run open (as report.html links do); hostile text stays text."""
    path = _hostile_file(stored, tmp_path)
    out = _view(str(path), "--out", str(tmp_path / "viewer.html"))
    assert out.returncode == 0, out.stderr
    n = sum(1 for _ in path.open()) - 1  # the hostile run is the last row
    hostile = read_records(path)[0][-1]
    run = ref((hostile["model"], hostile["task"], hostile["variant"], hostile["instance"], hostile["run"]), tmp_path.name)
    url = f"{(tmp_path / 'viewer.html').as_uri()}#model=fault-partial&tier=A&outcome=fail&run={run}"
    dom = dump_dom(url)
    (tmp_path / "dom.html").write_text(dom)
    assert re.search(r'<body[^>]* data-ready="\d+"', dom), dom[:2000]
    count = re.search(r'<span id="count">([^<]*)</span>', dom).group(1)
    expected = sum(1 for r in read_records(path)[0] if r["model"] == "fault-partial" and r["tier"] == "A"
                   and not r["passed"])
    assert count.startswith(f"{expected} of {n + 1} runs")
    detail = dom.split('id="detail"', 1)[1].split('<script', 1)[0]
    assert "grader's account" in detail and "system prompt" in detail and "user prompt" in detail
    assert "partial completion (F7)" in detail or "unmet" in detail
    assert "&lt;/script&gt;&lt;script&gt;document.title" in detail  # shown as text
    assert not re.search(r"<img\b", dom) and "<title>agentfloor runs</title>" in dom  # nothing ran, no element made
    shot = screenshot(url, tmp_path / "viewer.png")
    assert shot.stat().st_size > 10_000


@pytest.mark.slow
def test_viewer_clicks_with_playwright(stored: Path, tmp_path: Path) -> None:
    """Real clicks: pick a filter, open a run from the list, read its transcript, go back via the hash."""
    sync_api = playwright_api()
    page_file = stored / "reports" / "viewer.html"
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 900, "height": 900})
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready]")
            page.select_option("#f-model", "fault-malformed")
            page.select_option("#f-tier", "B")
            assert "fault-malformed" in page.url and "tier=B" in page.url
            rows = page.locator("#list tbody tr")
            assert rows.count() > 0
            assert all("fault-malformed" in t for t in rows.all_inner_texts())
            rows.first.click()
            text = page.inner_text("#detail")
            assert "malformed call" in text and "(F2)" in text and "arguments" in text and "result" in text
            assert "turn 0" in text and "tokens in" in text
            page.screenshot(path=str(tmp_path / "viewer-900.png"), full_page=False)
            # no horizontal page overflow at 900 px: wide tables scroll inside their pane
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
            assert all(u.startswith("file://") for u in requests)
        finally:
            browser.close()


@pytest.mark.slow
def test_call_site_run_in_the_viewer(tmp_path: Path) -> None:
    """A call-site item is one request: its one turn, the site's rule verdicts and its facets show."""
    import shutil

    from tests.viewer.conftest import run_session

    (tmp_path / "cases").mkdir()
    shutil.copytree(REPO / "cases" / "callsite", tmp_path / "cases" / "callsite")
    out = run_session(tmp_path, "--model", "fault-hallucinate", "-k", "action_label")
    runs = tmp_path / "reports" / "runs.jsonl"
    assert runs.is_file(), out.stdout[-2000:]
    records = read_records(runs)[0]
    n = next(i for i, r in enumerate(records) if not r["passed"])
    r = records[n]
    session = _session(tmp_path / "reports")
    dom = dump_dom(f"{(tmp_path / 'reports' / 'viewer.html').as_uri()}#run="
                   f"{ref((r['model'], r['task'], r['variant'], r['instance'], r['run']), session)}")
    detail = dom.split('id="detail"', 1)[1].split('<script', 1)[0]
    assert "tier callsite" in detail and "1 turn(s)" in detail and "turn 0 · " in detail and "turn 1 · " not in detail
    assert "action_label.valid_label" in detail and "unmet" in detail and '"kind": "callsite"' in detail
    assert "user prompt" in detail and records[n]["trajectory"]["turns"][0]["content"].split()[0] in detail


@pytest.mark.slow
@pytest.mark.parametrize("width", [900, 1600])
def test_report_and_viewer_fit_900_and_1600_px(stored: Path, tmp_path: Path, width: int) -> None:
    """No page-wide horizontal scroll; a chart or table wider than the page scrolls inside its own box."""
    sync_api = playwright_api()
    first = _records(stored)[0]
    session = _session(stored / "reports")
    run = ref((first["model"], first["task"], first["variant"], first["instance"], first["run"]), session)
    unboxed = """() => { const out = []; document.querySelectorAll('table, svg').forEach(e => {
        const r = e.getBoundingClientRect(); let p = e.parentElement, boxed = false;
        while (p) { const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') { boxed = true; break; }
                    p = p.parentElement; }
        if (r.right > window.innerWidth + 1 && !boxed) out.push(e.tagName); }); return out; }"""
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            for name in ("report.html", f"viewer.html#outcome=fail&run={run}"):
                page.goto((stored / "reports").as_uri() + "/" + name)
                assert page.evaluate("document.documentElement.scrollWidth") <= width + 1, name
                assert page.evaluate(unboxed) == [], name
                page.screenshot(path=str(tmp_path / f"{name[:6]}-{width}.png"))
        finally:
            browser.close()


def test_report_html_contents_no_empty_cost_chart_and_paired_links(stored: Path, tmp_path: Path) -> None:
    """A table of contents naming every section; no cost chart when no model has a cost; each paired row
    links to its pairs side by side in the viewer (all of them, and the discordant ones)."""
    page = (stored / "reports" / "report.html").read_text()
    toc = re.search(r'<nav class="toc".*?</nav>', page, re.S).group(0)
    sections = re.findall(r'<section id="([^"]+)">', page)
    assert sections and re.findall(r'<a href="#([^"]+)">', toc) == sections and 'href="viewer.html"' in toc
    assert page.index("<nav") < page.index('<section id="')
    assert 'class="scatter"' not in page and "No cost chart: no model has a known cost" in page
    out = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "report", str(stored / "reports" / "runs.jsonl"),
                          "--reference", "oracle", "--n-boot", "200", "--out", str(tmp_path)], capture_output=True,
                         text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.returncode == 0, out.stderr
    paired = (tmp_path / "report.html").read_text().split('<section id="paired">', 1)[1].split("</section>", 1)[0]
    assert "<th class=\"l\">runs</th>" in paired
    assert 'href="viewer.html#model=fault-exhaust&amp;tier=A&amp;vs=oracle">side by side</a>' in paired
    assert 'href="viewer.html#model=fault-exhaust&amp;tier=A&amp;vs=oracle&amp;differ=oracle">discordant</a>' in paired
    assert 'href="viewer.html#model=fault-exhaust&amp;vs=oracle">side by side</a>' in paired  # the overall row


@pytest.mark.slow
def test_paired_link_opens_pairs_side_by_side(stored: Path, tmp_path: Path) -> None:
    """report.html's 'discordant' link, followed in the browser: fault-exhaust's failures, each opened beside
    the oracle's pass on the same item."""
    sync_api = playwright_api()
    subprocess.run([sys.executable, "-m", "pytest_agentfloor", "report", str(stored / "reports" / "runs.jsonl"),
                    "--reference", "oracle", "--n-boot", "200", "--out", str(tmp_path)], check=True,
                   capture_output=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=300)
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.goto((tmp_path / "report.html").as_uri())
            page.locator('#paired a:text-is("discordant")').first.click()
            page.wait_for_selector("body[data-ready]")
            assert "vs=oracle" in page.url and "differ=oracle" in page.url
            rows = page.locator("#list tbody tr")
            assert rows.count() > 0 and all("fail" in t for t in rows.all_inner_texts())
            rows.first.click()
            heads = page.locator("table.sbs thead th").all_inner_texts()
            assert len(heads) == 3 and heads[1].startswith("fault-exhaust") and heads[2].startswith("oracle")
            assert "FAIL" in heads[1] and "PASS" in heads[2]
            assert "First divergence" in page.inner_text("#detail") or "prompts differ" in page.inner_text("#detail")
        finally:
            browser.close()


def test_packed_blocks_round_trip() -> None:
    """What viewer.js reads back: the index's text columns as positions in their value lists, the strings
    NUL-separated (a NUL inside one shown as U+2400), each run's string ids, one JSON line per run."""
    from array import array

    from pytest_agentfloor.report.viewer import pack_index, strings_of, transcript_blocks
    from tests.viewer import bigfile

    records = list(bigfile.records(("m00",)))[:40]
    records[3]["trajectory"]["turns"][0]["content"] = "a\0b <é> \ud800"  # a NUL and a lone surrogate
    index, transcripts = build_data([("s", records)])
    packed = pack_index(index)
    columns = index["columns"]
    for row, coded in zip(index["rows"], packed["rows"]):
        assert [packed["dicts"][c][v] if c in packed["dicts"] and v is not None else v
                for c, v in zip(columns, coded)] == row
    assert "run" not in packed["dicts"] and "model" in packed["dicts"] and packed["nstrings"] == len(transcripts["strings"])
    blocks = {k: gzip.decompress(base64.b64decode(v)) for k, v in transcript_blocks(transcripts).items()}
    text = blocks["af-text"].decode("utf-8", "replace").split("\0")
    assert len(text) == len(transcripts["strings"]) and "a\u2400b <é> \ufffd\ufffd\ufffd" in text
    post = array("I", blocks["af-post"])
    if sys.byteorder == "big":
        post.byteswap()
    off, ids = post[:len(records) + 1], post[len(records) + 1:]
    runs = blocks["af-runs"].decode("ascii").split("\n")
    assert len(runs) == len(records) and off[-1] == len(ids)
    for n, line in enumerate(runs):
        detail = json.loads(line)
        assert detail == transcripts["runs"][n] and list(ids[off[n]:off[n + 1]]) == strings_of(detail)
    assert render_viewer([("s", records)]) == render_viewer([("s", records)])  # no timestamp in the gzip
