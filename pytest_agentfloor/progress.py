"""Live progress on the controller: one line per model, redrawn in place on a terminal.

Items done / total, passes, errors, tokens in/out, cost so far, requests per second and an ETA,
from the same reports the controller aggregates (so it works under xdist).

Two displays. On a terminal (`auto`/`live`): a live region of one line per model, drawn *below*
the line pytest is writing, with the cursor put back where pytest left it. Without a terminal
(CI logs), with TERM=dumb, `-s` or `--pdb` (`auto`), or with `lines`: plain periodic lines on a
line of their own between pytest's results.

Why this design for the live region, rather than replacing the terminal reporter (pytest-sugar,
pytest-rich) or running rich's `Live`:
- pytest keeps its reporter: dots, percentages, `-v`, `-q`, warnings, the summary and every other
  plugin's output are pytest's own, unchanged. Only the reporter's file is wrapped: a write that
  would move the cursor off its line (a newline, a carriage return, a write reaching the edge)
  first erases the region (ESC[J from the cursor, so pytest's text on the line is kept), and the
  region is drawn again at the next event. Nothing half-drawn reaches the scrollback, and the
  region is erased before pytest writes its summary.
- No thread: the region is drawn from the controller's own hooks (an item starting or reporting),
  on the thread pytest writes from, while pytest is not capturing (a thread would draw into a
  test's captured output, and race pytest's writes). Content changes are redrawn at most every
  `interval` seconds (0.25 s by default); a region erased by pytest's own output is put back at the
  next event, so it is visible while an item runs. Between events the line does not tick.
- Lines are cut to the terminal's width minus one cell (rich's cell widths) with an ellipsis, so they
  never wrap and the cursor movements stay exact; colours follow pytest's own markup decision
  (NO_COLOR, --color). Nothing else is needed from rich: its Live would want all output to go
  through its console.
Output that bypasses pytest's reporter (a test's prints under `-s`, a debugger) would tear the
region, which is why `auto` chooses the plain lines there.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest

_MODEL = re.compile(r"\[v\d+-i\d+-r\d+-(?P<model>.+)\]$")
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
MODES = ("auto", "live", "lines", "off", "color", "plain")
LIVE_INTERVAL = 0.25  # seconds between redraws of changed content: "a few times per second"


@dataclass
class ModelProgress:
    total: int = 0
    done: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    requests: int = 0
    cost_usd: float = 0.0


def model_of(nodeid: str) -> str | None:
    """The model of a case item's node id (`cases/tier_A/A1.toml::A1[v0-i0-r0-MODEL]`)."""
    if ".toml::" not in nodeid:
        return None
    m = _MODEL.search(nodeid)
    return m["model"] if m else None


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}h{rest // 60:02d}m" if h else f"{rest // 60}m{rest % 60:02d}s"


def _numbers(p: ModelProgress, elapsed: float) -> tuple[int, float, str]:
    """(items finished, requests per second, ETA text) of one model."""
    finished = p.done + p.skipped
    rate = p.requests / elapsed if elapsed > 0 else 0.0
    eta = (p.total - finished) * elapsed / p.done if p.done and p.total >= finished else None
    return finished, rate, _eta(eta) if finished < (p.total or 0) else "done"


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e4 else str(n)


def progress_parts(name: str, p: ModelProgress, elapsed: float) -> list[tuple[str, str]]:
    """The periodic line for one model as (text, rich style) pieces; joined they are `progress_line`."""
    finished, rate, eta = _numbers(p, elapsed)
    return [
        ("agentfloor progress ", "dim"), (name, "bold"), (": ", ""),
        (f"{finished}/{p.total or '?'} done", "bold"), (", ", ""),
        (f"{p.passed} passed", "green"), (", ", ""),
        (f"{p.failed} failed", "red" if p.failed else ""), (", ", ""),
        (f"{p.errors} errors", "bold red" if p.errors else ""),
        (f", {p.skipped} skipped" if p.skipped else "", "yellow"),
        (f" | tokens {p.tokens_in:,} in / {p.tokens_out:,} out | ", ""),
        (f"${p.cost_usd:.4f}", "cyan"), (f" | {rate:.1f} req/s | ", ""),
        (f"ETA {eta}", "bold"),
    ]


def live_parts(name: str, p: ModelProgress, elapsed: float, name_width: int = 0) -> list[tuple[str, str]]:
    """The live line for one model: shorter than the periodic one, most telling first, since a narrow
    terminal cuts it from the right (tokens go first, then req/s, cost, ETA)."""
    from rich.cells import cell_len

    finished, rate, eta = _numbers(p, elapsed)
    total = str(p.total or "?")
    return [
        (name + " " * max(0, name_width - cell_len(name)), "bold"), (" ", ""),
        (f"{finished:>{len(total)}}/{total}", "bold"), (" | ", "dim"),
        (f"{p.passed} passed", "green"), (" ", ""),
        (f"{p.failed} failed", "red" if p.failed else ""), (" ", ""),
        (f"{p.errors} err", "bold red" if p.errors else ""),
        (f" {p.skipped} skipped" if p.skipped else "", "yellow"), (" | ", "dim"),
        (f"ETA {eta}", "bold"), (" | ", "dim"),
        (f"${p.cost_usd:.4f}", "cyan"), (" | ", "dim"),
        (f"{rate:.1f} req/s", ""), (" | ", "dim"),
        (f"tokens {_count(p.tokens_in)} in {_count(p.tokens_out)} out", ""),
    ]


def progress_line(name: str, p: ModelProgress, elapsed: float) -> str:
    """One plain line for one model (no timing in it is ever asserted by tests)."""
    return "".join(text for text, _ in progress_parts(name, p, elapsed))


_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def render_live(parts: list[tuple[str, str]], width: int, color: bool) -> str:
    """One live line: styled with ANSI codes when `color`, cut with an ellipsis to fit `width` cells.

    Widths are terminal cells (rich's table), so wide characters in a model name cannot wrap it."""
    from rich.cells import cell_len

    width = max(1, width)
    cut = cell_len("".join(t for t, _ in parts)) > width
    room = width - 1 if cut else width  # the ellipsis takes the last cell
    out = []
    for text, style in parts:
        if not text or room <= 0:
            continue
        if cell_len(text) > room:
            while text and cell_len(text) > room:
                text = text[:-1]
        room -= cell_len(text)
        codes = ";".join(_SGR[word] for word in style.split()) if color else ""
        out.append(f"\x1b[{codes}m{text}\x1b[0m" if codes and text else text)
    return "".join(out) + ("…" if cut else "")


def visible_width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(_ESCAPE.sub("", text))


def choose_display(mode: str, *, isatty: bool, hasmarkup: bool, term: str | None, capture: str,
                   debugger: bool) -> tuple[str, bool]:
    """('live' | 'lines', coloured) for --agentfloor-progress MODE in this terminal."""
    if mode == "plain":
        return "lines", False
    if mode == "color":
        return "lines", True
    if mode in ("auto", "live") and isatty and term != "dumb":
        # output that bypasses pytest's reporter would tear a live region: auto prints lines then
        if mode == "live" or (capture not in ("no", "tee-sys") and not debugger):
            return "live", hasmarkup
    return "lines", hasmarkup


class LiveFile:
    """The terminal reporter's file, wrapped: pytest's writes that would leave the cursor's line
    erase the live region below it first; the region is drawn at the cursor pytest left.

    Tracks the column of the cursor from what actually reached the terminal (escapes stripped),
    so the cursor is always put back exactly where pytest's next character belongs."""

    ERASE = "\x1b[J"

    def __init__(self, real: Any, width: Callable[[], int]):
        self.real = real
        self.width = width
        self.column = 0
        self.drawn = 0  # lines of the live region on the screen below the cursor
        self.lock = threading.RLock()

    def write(self, s: str) -> int:
        with self.lock:
            plain = _ESCAPE.sub("", s)
            tail = plain.rsplit("\n", 1)[-1]
            breaks = "\n" in plain or "\r" in plain
            if "\r" in tail:
                column = visible_width(tail.rsplit("\r", 1)[-1])
            else:
                column = visible_width(tail) + (0 if "\n" in plain else self.column)
            if self.drawn and (breaks or column >= self.width()):
                self.real.write(self.ERASE)
                self.drawn = 0
            written = self.real.write(s)  # pytest retries what the file cannot encode: count it once
            self.column = column
            return written

    def draw(self, lines: list[str]) -> bool:
        """Draw `lines` below the cursor's line and put the cursor back; False if it cannot."""
        with self.lock:
            if not lines or self.column >= self.width():
                return False
            back = f"\r\x1b[{self.column}C" if self.column else "\r"
            payload = self.ERASE + "".join("\n\r" + ln for ln in lines) + f"\x1b[{len(lines)}A" + back
            encoding = getattr(self.real, "encoding", None) or "utf-8"
            try:
                payload.encode(encoding)
            except (UnicodeEncodeError, LookupError):  # a terminal that cannot show the ellipsis
                payload = payload.encode("ascii", "replace").decode("ascii")
            self.real.write(payload)
            self.real.flush()
            self.drawn = len(lines)
            return True

    def erase(self) -> None:
        with self.lock:
            if self.drawn:
                self.real.write(self.ERASE)
                self.real.flush()
                self.drawn = 0

    def flush(self) -> None:
        self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class Progress:
    """Controller-only plugin: counts outcomes per model; shows them live or as periodic lines."""

    def __init__(self, config: pytest.Config, *, style: str, interval: float | None,
                 clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.style = style  # --agentfloor-progress: auto, live, lines, color or plain
        self.interval = interval  # None: 0.25 s live; lines every 10 s on a terminal, 30 s otherwise
        self.clock = clock
        self.started = clock()
        self.last = self.started
        self.models: dict[str, ModelProgress] = {}
        self.printed = False
        self.display: str | None = None  # "live" or "lines", decided once the terminal reporter exists
        self.color = False
        self.live: LiveFile | None = None
        self.shown: list[str] = []  # the live lines on the screen now
        self.finished = False
        self._totals_from_workers: dict[str, int] = {}

    def _model(self, name: str) -> ModelProgress:
        return self.models.setdefault(name, ModelProgress())

    def _tr(self) -> Any:
        return self.config.pluginmanager.getplugin("terminalreporter")

    def _decide(self) -> None:
        if self.display is not None:
            return
        tr = self._tr()
        opt = self.config.option
        self.display, self.color = choose_display(
            self.style, isatty=bool(tr is not None and getattr(tr, "isatty", False)),
            hasmarkup=bool(tr is not None and tr.hasmarkup), term=os.environ.get("TERM"),
            capture=str(getattr(opt, "capture", "no")),  # -p no:capture: tests print straight through
            debugger=bool(getattr(opt, "usepdb", False) or getattr(opt, "trace", False)))
        if self.display == "live" and not hasattr(getattr(tr, "_tw", None), "_file"):
            self.display = "lines"  # another plugin replaced pytest's terminal writer
        if self.interval is None:
            tty = bool(tr is not None and getattr(tr, "isatty", False))
            self.interval = LIVE_INTERVAL if self.display == "live" else 10.0 if tty else 30.0

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._decide()

    # totals: from the controller's own collection, or (under xdist) from the first worker's
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            name = getattr(getattr(item, "model", None), "name", None)
            if name is not None and ".toml::" in item.nodeid:
                self._model(name).total += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self._totals_from_workers:
            return  # every worker collects the same items
        for nodeid in ids:
            name = model_of(nodeid)
            if name is not None:
                self._totals_from_workers[name] = self._totals_from_workers.get(name, 0) + 1
        for name, n in self._totals_from_workers.items():
            self._model(name).total = n

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.display == "live" and model_of(nodeid) is not None:
            self.refresh()  # visible while the item runs, after pytest wrote its name

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = model_of(report.nodeid)
        if name is None:
            return
        p = self._model(name)
        props: dict[str, Any] = dict(report.user_properties) if report.when != "teardown" else {}
        if "tokens_in" in props:
            p.tokens_in += int(props.get("tokens_in") or 0)
            p.tokens_out += int(props.get("tokens_out") or 0)
            p.requests += int(props.get("turns") or 0)
            p.cost_usd += float(props.get("cost_usd") or 0.0)
        if report.when == "setup" and report.skipped:
            p.skipped += 1
        elif report.when == "setup" and report.failed:
            p.done += 1
            p.errors += 1
        elif report.when == "call":
            p.done += 1
            if report.passed:
                p.passed += 1
            else:
                p.failed += 1
        elif self.display != "live":
            return
        self._decide()
        if self.display == "live":
            self.refresh()
            return
        now = self.clock()
        if now - self.last >= (self.interval or 0.0):
            self.last = now
            self.show()

    def lines(self) -> list[str]:
        elapsed = self.clock() - self.started
        return [progress_line(name, p, elapsed) for name, p in self.models.items()]

    # --- the live region ---------------------------------------------------------------------

    def _wrap(self) -> LiveFile | None:
        if self.live is None:
            tr = self._tr()
            tw = getattr(tr, "_tw", None)
            if tw is None or not hasattr(tw, "_file"):
                return None
            self.live = LiveFile(tw._file, lambda: tw.fullwidth)
            current = getattr(tw, "_current_line", None)  # pytest's text since its last newline
            self.live.column = (visible_width(current.rsplit("\r", 1)[-1]) if isinstance(current, str)
                                else tw.width_of_current_line)
            tw._file = self.live
        return self.live

    def live_lines(self, width: int) -> list[str]:
        elapsed = self.clock() - self.started
        names = list(self.models)
        room = max(1, shutil.get_terminal_size().lines - 2)
        shown = names if len(names) <= room else names[:room - 1]
        pad = max(map(visible_width, shown))
        out = [render_live(live_parts(n, self.models[n], elapsed, pad), width - 1, self.color) for n in shown]
        if len(shown) < len(names):
            out.append(render_live([(f"agentfloor progress: {len(names) - len(shown)} more model(s)", "dim")],
                                   width - 1, self.color))
        return out

    def refresh(self) -> None:
        """Draw the region if pytest's output pushed it away, else redraw changed content at most every interval."""
        if self.finished or not self.models or self.display != "live":
            return
        live = self._wrap()
        if live is None:
            return
        now = self.clock()
        visible = bool(live.drawn)
        if visible and now - self.last < (self.interval or 0.0):
            return
        lines = self.live_lines(self._tr()._tw.fullwidth)
        if visible and lines == self.shown:
            return
        if live.draw(lines):
            self.shown = lines
            self.last = now
            self.printed = True

    def finish(self) -> None:
        """Erase the region for good: pytest's summary and the plugin's tables follow."""
        self.finished = True
        if self.live is not None:
            self.live.erase()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.finish()

    def pytest_keyboard_interrupt(self) -> None:
        self.finish()

    def pytest_internalerror(self) -> None:
        self.finish()

    def pytest_unconfigure(self) -> None:
        self.finish()
        tw = getattr(self._tr(), "_tw", None)
        if self.live is not None and tw is not None and tw._file is self.live:
            tw._file = self.live.real

    # --- periodic lines ----------------------------------------------------------------------

    def show(self) -> None:
        tr = self._tr()
        if tr is None or not self.models:
            return
        tr.ensure_newline()
        if getattr(tr._tw, "width_of_current_line", 0):  # pytest's dots of -q: finish their line first
            tr._tw.line()
        for name, line in zip(self.models, self.lines()):
            if self.color:
                p = self.models[name]
                colour = {"red": bool(p.errors)} if p.errors else {"yellow": bool(p.failed), "green": not p.failed}
                tr.write_line(line, bold=True, **colour)
            else:
                tr.write_line(line)
        tr.currentfspath = None  # pytest starts its next result on a fresh line, with its file name
        self.printed = True

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        # the last word on each model, once the run is over (-q keeps a live display's screen quiet)
        if self.printed and (self.display != "live" or self.config.get_verbosity() >= 0):
            self.show()


def install(config: pytest.Config, mode: str, interval: float | None) -> Progress | None:
    """Register the progress plugin on the controller, per --agentfloor-progress (auto|live|lines|off)."""
    if mode == "off" or config.option.collectonly or config.get_verbosity() < -1:
        return None
    plugin = Progress(config, style=mode, interval=interval)
    config.pluginmanager.register(plugin, "agentfloor-progress")
    return plugin
