"""The viewer on a generated 12,750-run file in headless Chromium (Playwright), at 900 and 1,600 px:
side by side, permalinks (round trip through a regenerated file, a missing run, an old row-number
link), full-text search with highlighting, sorting, keys, and filters shown and removable.

Timings are not asserted here: benchmarks/bench_viewer.py measures load and first search."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from pytest_agentfloor.report.viewer import write_viewer
from tests.viewer import bigfile
from tests.viewer.bigfile import DIVERGE, NEEDLE, NEEDLE_RUN, ref
from tests.viewer.browser import launch, playwright_api

pytestmark = pytest.mark.slow
WIDTHS = [900, 1600]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("big") / "sweep"
    where.mkdir()
    assert bigfile.write_runs(where / "runs.jsonl") == 12_750
    n, problems = write_viewer([where / "runs.jsonl"], where / "viewer.html")
    assert n == 12_750 and not problems
    return where


@pytest.fixture(scope="module")
def browser():
    api = playwright_api()
    with api.sync_playwright() as p:
        b = launch(p)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def page(request: pytest.FixtureRequest, browser):  # noqa: ANN001, ANN201
    pg = browser.new_page(viewport={"width": request.param, "height": 900})
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.width = request.param
    yield pg
    pg.close()
    assert errors == []


def _open(page, big: Path, fragment: str = "") -> None:  # noqa: ANN001
    page.goto((big / "viewer.html").as_uri() + fragment)
    page.wait_for_selector("body[data-ready]")


def _expect():  # noqa: ANN202
    return playwright_api().expect


def _hash(page) -> dict[str, str]:  # noqa: ANN001
    out = {}
    for kv in page.url.split("#", 1)[1].split("&"):
        k, _, v = kv.partition("=")
        out[k] = v if k == "run" else unquote(v)
    return out


def test_side_by_side_aligns_turns_and_marks_the_first_divergence(page, big: Path) -> None:  # noqa: ANN001
    a, b = (ref(k, "sweep") for k in DIVERGE)
    _open(page, big, f"#run={a},{b}")
    table = page.locator("table.sbs")
    assert table.locator("thead th").count() == 3  # the row heads and one column per run
    assert "First divergence: turn 1" in page.inner_text("#detail")
    diverge = page.locator("table.sbs tr.diverge")
    assert diverge.count() == 1 and diverge.locator("th").inner_text().startswith("turn 1")
    assert page.locator("table.sbs tr[data-turn='0']").get_attribute("class") in ("", None)  # turn 0 is shared
    heads = table.locator("thead th").all_inner_texts()
    assert heads[1].startswith("m00") and heads[2].startswith("m01") and "FAIL" in heads[1] and "PASS" in heads[2]
    assert page.evaluate("document.documentElement.scrollWidth") <= page.width + 1  # wide: scrolls in its box
    page.screenshot(path=str(big / f"sbs-{page.width}.png"))
    # from a single run: 'same item elsewhere' puts another model beside it
    _open(page, big, f"#run={a}")
    page.locator("#detail a.beside", has_text="m01").click()
    _expect()(page.locator("table.sbs")).to_have_count(1)  # drawn on the hash change: waited for, not raced
    assert _hash(page)["run"] == f"{a},{b}"
    # picking rows in the list (click a box, or x on the cursor row) and asking for them side by side
    _open(page, big, "#item=A1/v0/i0/r0")
    page.locator("#list tbody tr").nth(0).locator("input").check()
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.locator("#chips button.sbs-go").click()
    _expect()(page.locator("table.sbs")).to_have_count(1)
    assert len(_hash(page)["run"].split(",")) == 2


def test_vs_filter_opens_each_run_beside_the_reference(page, big: Path) -> None:  # noqa: ANN001
    """report.html's paired table links here: model=M&tier=T&vs=REF (&differ=REF for the discordant pairs)."""
    _open(page, big, "#model=m05&tier=B&vs=gpt-5&differ=gpt-5")
    chips = page.locator("#chips .chip").all_inner_texts()
    assert any(c.startswith("model: m05") for c in chips) and any("side by side with: gpt-5" in c for c in chips)
    rows = page.locator("#list tbody tr")
    assert rows.count() > 0
    rows.first.click()
    run = _hash(page)["run"].split(",")
    assert len(run) == 2 and "/m05/" in run[0] and "/gpt-5/" in run[1] and run[0].split("/")[2:] == run[1].split("/")[2:]
    heads = page.locator("table.sbs thead th").all_inner_texts()
    assert ("PASS" in heads[1]) != ("PASS" in heads[2])  # discordant: one passed, the other failed


def test_filters_in_force_are_shown_and_removable(page, big: Path) -> None:  # noqa: ANN001
    _open(page, big, "#model=m02&item=A1%2Fv0%2Fi0%2Fr0&bogus=1")
    chips = page.locator("#chips .chip")
    texts = chips.all_inner_texts()
    assert any(t.startswith("item: A1/v0/i0/r0") for t in texts) and any("bogus" in t and "ignored" in t for t in texts)
    assert page.inner_text("#count").startswith("1 of 12750")
    chips.filter(has_text="item:").locator("button").click()
    assert "item" not in _hash(page) and page.inner_text("#count").startswith("750 of 12750")
    page.locator("#chips button.clear").click()
    assert page.inner_text("#count").startswith("12750 of 12750") and page.locator("#chips .chip").count() == 0


def test_permalink_round_trip_survives_regeneration_and_says_when_a_run_is_gone(page, big: Path,
                                                                                 tmp_path: Path) -> None:  # noqa: ANN001
    _open(page, big, "#tier=C&outcome=fail")
    row = page.locator("#list tbody tr").nth(3)
    want = row.inner_text().split("\t")
    row.click()
    link = page.url.split("#", 1)[1]
    run = _hash(page)["run"]
    assert not re.fullmatch(r"\d+", run) and run.startswith("sweep/") and run.count("/") == 5
    title = page.inner_text("#detail h2")
    assert want[1] in title and want[3] in title  # model and case
    # the same link, on a file regenerated from other runs in another order: the same run opens
    other = tmp_path / "sweep"
    other.mkdir()
    keep = tuple(reversed(bigfile.MODELS))
    with (other / "runs.jsonl").open("w") as f, (big / "runs.jsonl").open() as src:
        lines = src.readlines()
        for m in keep:
            f.writelines(ln for ln in lines if f'"model":"{m}"' in ln and '"tier":"C"' in ln)
    write_viewer([other / "runs.jsonl"], other / "viewer.html")
    page.goto((other / "viewer.html").as_uri() + "#" + link)
    page.wait_for_selector("body[data-ready]")
    assert page.inner_text("#detail h2") == title and page.locator("#detail p.missing").count() == 0
    # a run the regenerated file does not hold (tier A is gone) says so
    gone = ref(("m03", "A1", "v0", "i0", 0), "sweep")
    page.goto((other / "viewer.html").as_uri() + f"#run={gone}")
    page.wait_for_selector("body[data-ready]")
    missing = page.inner_text("#detail p.missing")
    assert "m03 · A1 [v0-i0-r0]" in missing and "is not in this file" in missing
    # an old row-number link is refused, and said why
    page.goto((other / "viewer.html").as_uri() + "#run=5")
    page.wait_for_selector("body[data-ready]")
    assert "row number" in page.inner_text("#detail p.missing") and page.locator("#detail h2").count() == 0


def test_full_text_search_finds_a_tool_result_and_highlights_it(page, big: Path) -> None:  # noqa: ANN001
    _open(page, big)
    page.fill("#f-q", NEEDLE.upper()[:12])  # case-insensitive, a part of it
    _expect()(page.locator("#count")).to_have_text(re.compile(r"^1 of 12750 runs"))
    assert _hash(page)["q"] == NEEDLE.upper()[:12]
    row = page.locator("#list tbody tr")
    model, task, variant, instance, run = NEEDLE_RUN
    assert row.count() == 1 and model in row.inner_text() and f"{variant}/{instance}/r{run}" in row.inner_text()
    row.click()
    marks = page.locator("#detail mark")
    assert marks.count() == 1 and marks.first.inner_text().lower() == NEEDLE[:12]
    assert "1 match of" in page.inner_text("#detail .found")
    # arguments, the grader's account, the user prompt are searched too
    for text in ("owner", "BLD-00000"):
        page.fill("#f-q", text)
        _expect()(page.locator("#count")).not_to_have_text(re.compile(r"^(0|1|12750) of"))
    page.fill("#f-q", "Task E3 (v4)")  # the user prompt: 17 models x 5 runs
    _expect()(page.locator("#count")).to_have_text(re.compile(r"^85 of 12750"))
    page.fill("#f-q", "no such text anywhere 123")
    _expect()(page.locator("#count")).to_have_text(re.compile(r"^0 of 12750"))
    assert "No run matches" in page.inner_text("#list")


def test_sort_by_a_column_both_ways(page, big: Path) -> None:  # noqa: ANN001
    _open(page, big, "#tier=D")

    def costs() -> list[str]:
        return [c for c in page.locator("#list tbody tr td:nth-child(10)").all_inner_texts()]

    assert page.locator("#list thead th").nth(9).inner_text().startswith("cost")
    page.locator("#list thead th", has_text="cost").click()
    assert _hash(page)["sort"] == "cost"
    up = costs()
    known = [float(c[1:]) for c in up if c != "unknown"]
    assert known == sorted(known) and known
    page.locator("#list thead th", has_text="cost").click()
    assert _hash(page)["sort"] == "-cost"
    down = [float(c[1:]) for c in costs() if c != "unknown"]
    assert down == sorted(down, reverse=True) and down[0] >= known[-1]
    page.locator("#list thead th", has_text="turns").click()
    turns = [int(t) for t in page.locator("#list tbody tr td:nth-child(8)").all_inner_texts()]
    assert turns == sorted(turns)


def test_keyboard_moves_opens_and_closes(page, big: Path) -> None:  # noqa: ANN001
    _open(page, big, "#model=m07")
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("k")
    cur = page.locator("#list tbody tr.cur")
    assert cur.count() == 1 and cur.get_attribute("data-n") == "1"  # -1, then 0, 1, 2, back to 1
    page.keyboard.press("Enter")
    assert _hash(page)["run"] == cur.get_attribute("data-ref") and page.locator("#detail h2").count() == 1
    page.keyboard.press("Escape")
    assert "run" not in _hash(page) and page.locator("#detail h2").count() == 0
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "f-q"
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    help_text = page.inner_text("#help")
    assert page.locator("#help").is_visible() and "Enter" in help_text and "Esc" in help_text and "j" in help_text


def test_layout_headline_column_and_unknown_cost(page, big: Path) -> None:  # noqa: ANN001
    _open(page, big, f"#outcome=fail&run={ref(('m00', 'A1', 'v0', 'i0', 0), 'sweep')}")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.width + 1
    head = page.evaluate("(() => { const r = document.querySelector('#list th.h').getBoundingClientRect();"
                         " const l = document.getElementById('list').getBoundingClientRect();"
                         " return [r.width, r.right - l.right]; })()")
    if page.width == 1600:
        assert head[0] >= 250 and head[1] <= 1, head  # wide and inside the pane, not squeezed or cut
    detail = page.inner_text("#detail")
    assert "cost unknown" in detail and "$null" not in detail and "null" not in detail.split("transcript")[0]
    page.screenshot(path=str(big / f"layout-{page.width}.png"))


def test_a_link_with_a_search_and_a_run_opens_both_and_the_list_grows_as_it_scrolls(page, big: Path) -> None:  # noqa: ANN001
    """The transcripts are inflated after the list is painted: a link that needs them at once (a search,
    an open run) waits for them; the list draws its first rows, then more as it is scrolled."""
    _open(page, big, f"#q={NEEDLE[:10]}&run={ref(NEEDLE_RUN, 'sweep')}")
    assert page.inner_text("#count").startswith("1 of 12750")
    assert page.locator("#detail mark").count() == 1 and "1 match of" in page.inner_text("#detail .found")
    _open(page, big)
    rows = page.locator("#list tbody tr")
    first = rows.count()
    assert 30 <= first < 12750 and "not shown" in page.inner_text("#list button.more")
    for _ in range(3):
        page.locator("#list").evaluate("e => e.scrollTop = e.scrollHeight")
        _expect()(rows).not_to_have_count(first)
        first = rows.count()
    page.locator("#list button.more").click()  # or asked for
    _expect()(rows).not_to_have_count(first)
    # the cursor walks past the drawn rows: they are drawn as it goes
    _open(page, big, "#model=m07")
    for _ in range(70):
        page.keyboard.press("j")
    assert page.locator("#list tbody tr.cur").get_attribute("data-n") == "69"
