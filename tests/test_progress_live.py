"""The live progress display on a real terminal: pytest runs with a pseudo-terminal as its output,
and what it wrote is replayed on a screen model to see what a user is left with.

Each run uses `--agentfloor-progress-interval 0`, so the region is redrawn at every event and what
is drawn does not depend on timing; no assertion is on time."""

from __future__ import annotations

import io
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from _pytest._io import TerminalWriter

from pytest_agentfloor.progress import (LiveFile, ModelProgress, Progress, choose_display, live_parts, render_live,
                                        visible_width)
from tests.ptyterm import SGR, run_in_pty, screen, terminal_env

REPO = Path(__file__).resolve().parents[1]
COLS = 200  # wide enough that no line of pytest's or ours wraps: screens compare line by line
#: one drawn line of the live region (colours stripped)
LIVE = re.compile(r"^(?P<model>\S+) +(?P<done>\d+)/(?P<total>\d+) \| (?P<passed>\d+) passed (?P<failed>\d+) failed "
                  r"(?P<errors>\d+) err \| ETA (?P<eta>\S+), (?P<elapsed>\S+) elapsed \| (?:\$|cost )(?P<cost>[\d.]+|unknown) \| (?P<rate>[\d.]+) req/s \| "
                  r"tokens (?P<tin>[\d.]+k?) in (?P<tout>[\d.]+k?) out$")
#: one draw: erase below, the lines, the cursor back up to pytest's line
DRAW = re.compile(r"\x1b\[J((?:\r?\n\r[^\r\n\x1b]*(?:\x1b\[[0-9;]*m[^\r\n\x1b]*)*)+)\x1b\[(\d+)A")
USER_TEST = '''
import warnings

def test_user_code():
    print("hello from the user's test")
    warnings.warn(UserWarning("careful: a user warning"))
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("progress-live")
    for case in ("A1", "A2"):
        (where / "cases" / "tier_A").mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "cases" / "tier_A" / f"{case}.toml", where / "cases" / "tier_A")
    shutil.copy(REPO / "models.toml", where / "models.toml")
    (where / "test_user.py").write_text(USER_TEST)
    return where


def run(where: Path, *args: str, cols: int = COLS, **env: str) -> tuple[int, str]:
    clean = terminal_env(REPO, **env)
    return run_in_pty([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                      where, clean, cols=cols)


def bench(where: Path, *args: str, cols: int = COLS, **env: str) -> tuple[int, str]:
    return run(where, "cases", "test_user.py", "--model", "oracle,fault-exhaust", "--instances", "i0", "--no-probe",
               "--agentfloor-report", "none", "--tb=no", "--agentfloor-progress-interval", "0", *args, cols=cols, **env)


def draws(raw: str) -> list[list[str]]:
    """Every drawing of the live region, as its lines without colours."""
    return [[SGR.sub("", ln) for ln in re.split(r"\r?\n\r", m.group(1))[1:]] for m in DRAW.finditer(raw)]


def normalised(lines: list[str]) -> list[str]:
    """The screen without what differs between two sessions: ids, timings and the progress record."""
    out = []
    for ln in lines:
        if ln.startswith("agentfloor progress "):
            continue
        ln = re.sub(r"\d{8}-\d{6}\.\d{3}-[0-9a-f]+", "SESSION", ln)
        out.append(re.sub(r" in [\d.]+s( \(.*\))?( =+)?$", " in Ts", ln).rstrip("= "))
    return out


def last_drawn(raw: str) -> dict[str, re.Match[str]]:
    last: dict[str, re.Match[str]] = {}
    for lines in draws(raw):
        assert len(lines) == 2, lines
        for ln in lines:
            m = LIVE.match(ln)
            assert m, ln
            last[m["model"]] = m
    return last


SUMMARY = re.compile(r"^=+ 10 failed, 11 passed, 1 warning in [\d.]+s( \(.*\))? =+$")


def test_live_lines_redrawn_below_pytest_output_which_stays_intact(project: Path) -> None:
    status, raw = bench(project)
    assert status == 1, raw[-2000:]
    assert len(draws(raw)) >= 20  # at least once per item
    last = last_drawn(raw)
    assert set(last) == {"oracle", "fault-exhaust"}
    oracle, fault = last["oracle"], last["fault-exhaust"]
    assert (oracle["done"], oracle["total"], oracle["passed"], oracle["failed"], oracle["errors"]) == \
        ("10", "10", "10", "0", "0")
    assert (fault["done"], fault["passed"], fault["failed"]) == ("10", "0", "10")
    assert oracle["eta"] == "done" and float(oracle["tin"].rstrip("k")) > 0 and int(oracle["tout"]) > 0
    assert float(oracle["rate"]) > 0 and oracle["cost"] == "unknown"  # no pricing: unknown, as the reports say, never $0
    first = draws(raw)[0]
    assert LIVE.match(first[0])["eta"] == "?"  # nothing done yet: no estimate
    shown = screen(raw, COLS)
    assert SUMMARY.match(shown[-1]), shown[-5:]  # pytest's summary line, intact and last
    assert not any(LIVE.match(ln) for ln in shown)  # no live line left behind
    records = [ln for ln in shown if ln.startswith("agentfloor progress ")]
    assert any("oracle: 10/10 done, 10 passed" in ln for ln in records)  # the last word, in the scrollback
    assert any(re.match(r"cases/tier_A/A1\.toml \.{5}F{5} +\[ *\d+%\]$", ln) for ln in shown)  # dots + percentage
    assert "careful: a user warning" in "\n".join(shown)  # the warnings summary

    _, plain = bench(project, "--agentfloor-progress", "off")
    assert normalised(shown) == normalised(screen(plain, COLS))  # pytest's output, line for line


def test_quiet_output_is_unchanged_by_the_live_lines(project: Path) -> None:
    _, raw = bench(project, "-q")
    assert draws(raw) and set(last_drawn(raw)) == {"oracle", "fault-exhaust"}
    _, plain = bench(project, "-q", "--agentfloor-progress", "off")
    shown = screen(raw, COLS)
    assert re.match(r"^10 failed, 11 passed, 1 warning in [\d.]+s", shown[-1]), shown[-3:]
    assert normalised(shown) == normalised(screen(plain, COLS))  # -q leaves no record behind either
    _, qq = bench(project, "-qq")
    assert "\x1b[J" not in qq and "agentfloor progress" not in qq


def test_live_lines_under_xdist(project: Path) -> None:
    status, raw = bench(project, "-n", "2")
    assert status == 1, raw[-2000:]
    last = last_drawn(raw)
    assert last["oracle"]["done"] == last["oracle"]["total"] == last["oracle"]["passed"] == "10"
    assert last["fault-exhaust"]["done"] == last["fault-exhaust"]["failed"] == "10"
    shown = screen(raw, COLS)
    assert SUMMARY.match(shown[-1]), shown[-5:]
    assert not any(LIVE.match(ln) for ln in shown)
    dots = [ln for ln in shown if re.fullmatch(r"[.F]+ +\[ *\d+%\]", ln)]
    assert sum(ln.count(".") + ln.count("F") for ln in dots) == 21  # every result, none torn


def test_narrow_terminal_without_colour_truncates_and_never_wraps(project: Path) -> None:
    cols = 44
    _, raw = bench(project, cols=cols, NO_COLOR="1")
    drawn = draws(raw)
    assert drawn
    for lines in drawn:
        for ln in lines:
            assert visible_width(ln) <= cols - 1 and ln.endswith("…"), ln
    assert not SGR.search("".join(m.group(1) for m in DRAW.finditer(raw)))  # NO_COLOR: no colours drawn
    assert drawn[-1][0].startswith("oracle" + " " * 8 + "10/10 | 10 passed")
    shown = screen(raw, cols)
    assert "10 failed, 11 passed, 1 warning" in "".join(shown[-2:])  # wrapped by pytest at 44 columns


@pytest.mark.parametrize("how", ["TERM=dumb", "-s", "lines"])
def test_plain_lines_where_a_live_region_would_tear(project: Path, how: str) -> None:
    if how == "TERM=dumb":
        _, raw = bench(project, TERM="dumb")
    elif how == "-s":
        _, raw = bench(project, "-s")
    else:  # through the ini setting
        _, raw = bench(project, "-o", "agentfloor_progress=lines")
    assert "\x1b[J" not in raw and not draws(raw)
    shown = screen(raw, COLS)
    assert any(ln.startswith("agentfloor progress oracle: ") for ln in shown)
    if how == "-s":
        assert any(ln.endswith("hello from the user's test") for ln in shown)


def test_inert_without_benchmark_items(project: Path) -> None:
    _, raw = run(project, "test_user.py")
    assert "\x1b[J" not in raw and "agentfloor progress" not in raw
    assert re.match(r"^=+ 1 passed, 1 warning in", screen(raw, COLS)[-1])


# --- the parts, without a terminal ---------------------------------------------------------------

def test_choose_display() -> None:
    tty = dict(isatty=True, hasmarkup=True, term="xterm", capture="fd", debugger=False)
    assert choose_display("auto", **tty) == ("live", True)
    assert choose_display("auto", **{**tty, "hasmarkup": False}) == ("live", False)  # NO_COLOR: live, no colour
    assert choose_display("auto", **{**tty, "isatty": False, "hasmarkup": False}) == ("lines", False)
    assert choose_display("auto", **{**tty, "term": "dumb", "hasmarkup": False}) == ("lines", False)
    assert choose_display("auto", **{**tty, "capture": "no"}) == ("lines", True)
    assert choose_display("auto", **{**tty, "debugger": True}) == ("lines", True)
    assert choose_display("live", **{**tty, "capture": "no"}) == ("live", True)
    assert choose_display("live", **{**tty, "isatty": False}) == ("lines", True)
    assert choose_display("lines", **tty) == ("lines", True)
    assert choose_display("plain", **tty) == ("lines", False)
    assert choose_display("color", **{**tty, "isatty": False}) == ("lines", True)


def test_live_file_keeps_pytest_text_and_puts_the_cursor_back() -> None:
    out = io.StringIO()
    live = LiveFile(out, lambda: 30)

    def shown() -> list[str]:
        return screen(out.getvalue().replace("\n", "\r\n"), 30)  # as the terminal's line discipline does

    live.write("path.toml ")
    assert live.draw(["model one", "model two"])
    live.write("..")  # pytest's dots continue on their line, the region stays
    assert live.drawn == 2
    assert shown() == ["path.toml ..", "model one", "model two"]
    live.write("F\n")  # a newline would run into the region: it goes first
    assert live.drawn == 0
    live.write("next")
    assert shown() == ["path.toml ..F", "next"]
    live.draw(["model"])
    live.write("\rrewritten")  # pytest's rewrite: back to column 0 of its own line
    assert live.column == len("rewritten") and shown() == ["path.toml ..F", "rewritten"]
    live.draw(["m"])
    live.write("x" * 25)  # reaching the edge would wrap into the region
    assert live.drawn == 0
    assert not live.draw(["m"])  # no room left on this line: not drawn
    assert shown() == ["path.toml ..F", "rewritten" + "x" * 21, "x" * 4]  # wrapped, not torn


def test_redraws_at_most_every_interval_and_after_pytest_pushed_the_region_away() -> None:
    now = [0.0]
    file = io.StringIO()
    tw = TerminalWriter(file)
    tw.fullwidth = 120
    tr = SimpleNamespace(_tw=tw, isatty=True, hasmarkup=False)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: tr),
                             option=SimpleNamespace(capture="fd"), get_verbosity=lambda: 0)
    progress = Progress(config, style="live", interval=0.25, clock=lambda: now[0])  # type: ignore[arg-type]
    progress._decide()
    assert progress.display == "live"
    progress.models["m"] = ModelProgress(total=4)
    tw.write("cases/A1.toml ")
    progress.refresh()
    assert len(draws(file.getvalue())) == 1
    progress.models["m"].done = 1
    now[0] = 0.1
    progress.refresh()  # changed, but within the interval
    assert len(draws(file.getvalue())) == 1
    now[0] = 0.3
    progress.refresh()
    assert len(draws(file.getvalue())) == 2
    now[0] = 0.6
    progress.refresh()  # nothing changed but the clock: same text except the rate and ETA
    n = len(draws(file.getvalue()))
    tw.line(".")  # pytest's newline erases the region
    now[0] = 0.61
    progress.refresh()  # put back at once, interval or not
    assert len(draws(file.getvalue())) == n + 1
    progress.finish()
    tw.write("== summary ==")
    assert screen(file.getvalue(), 120)[-1] == "== summary ==" and not LIVE.match(screen(file.getvalue(), 120)[-2])


def test_live_line_fields_and_truncation() -> None:
    p = ModelProgress(total=10, done=4, passed=3, failed=1, errors=0, tokens_in=12_345, tokens_out=30, requests=8,
                      cost_usd=0.5)
    text = "".join(t for t, _ in live_parts("m", p, elapsed=4.0, name_width=3))
    assert text == "m    4/10 | 3 passed 1 failed 0 err | ETA 0m06s, 0m04s elapsed | $0.5000 | 2.0 req/s | tokens 12.3k in 30 out"
    assert LIVE.match(text)
    coloured = render_live(live_parts("m", p, 4.0), 200, color=True)
    assert SGR.search(coloured) and SGR.sub("", coloured) == text.replace("m  ", "m", 1)
    cut = render_live(live_parts("m", p, 4.0), 20, color=False)
    assert cut.startswith("m  4/10 | 3 passed") and cut.endswith("…") and visible_width(cut) == 20
