"""Live progress on the controller: one line per model, redrawn in place on a terminal.

Items done / total, passes, errors, tokens in/out, cost so far, requests per second and an ETA,
from the same reports the controller aggregates (so it works under xdist).

With --agentfloor-concurrency and no xdist the episodes play in this process's look-ahead pool
(prefetch.py), which tells this plugin as each starts and finishes (`episode_watch_key`): the count is
then of finished episodes, out of pytest's order, the requests in flight are shown, tokens and
requests are counted as episodes finish, and the ETA plays the rest on paper (`schedule_eta`) at
the finished episodes' mean time (`episode_mean`). Passes and failures still come from the
reports, in pytest's order. Under xdist the workers' pools have no watcher: the controller counts
reports, as without concurrency.

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
- No drawing thread: the region is drawn from the controller's own hooks (an item starting or reporting),
  on the thread pytest writes from, while pytest is not capturing (a thread would draw into a
  test's captured output, and race pytest's writes). Content changes are redrawn at most every
  `interval` seconds (0.25 s by default); a change held back by the interval is kept pending, not
  dropped. A region erased by pytest's own output is put back at the next event, so it is visible
  while an item runs. While the main thread waits for an episode (prefetch.wait_for) it ticks
  every 0.1 s, with pytest's capture suspended as for live logging: it draws what is pending,
  and every second the clock's figures (time elapsed, ETA). Without a pool, an item's episode
  plays in a thread of its own while a live region is shown (prefetch.play_now), so that
  pytest's thread waits and ticks the same way: that thread only plays, pytest's thread draws,
  and the region is erased for good before pytest's summary (`finish`, at sessionfinish).
- Lines are cut to the terminal's width minus one cell (rich's cell widths) with an ellipsis, so they
  never wrap and the cursor movements stay exact; colours follow pytest's own markup decision
  (NO_COLOR, --color). Nothing else is needed from rich: its Live would want all output to go
  through its console.
Output that bypasses pytest's reporter (a test's prints under `-s`, a debugger) would tear the
region, which is why `auto` chooses the plain lines there.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

_MODEL = re.compile(r"\[v\d+-i\d+-r\d+-(?P<model>.+)\]$")
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
MODES = ("auto", "live", "lines", "off", "color", "plain")
LIVE_INTERVAL = 0.25  # seconds between redraws of changed content: "a few times per second"
TICK_S = 1.0  # while the main thread waits for an episode, the clock's figures (elapsed, ETA) are redrawn this often
#: who hears of each episode of the look-ahead pool (prefetch.py) as it starts and finishes: the
#: controller's Progress (without xdist the pool's episodes are the controller's own; under xdist
#: workers have none, and the controller counts reports as before)
episode_watch_key = pytest.StashKey[Any]()


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
    cost_usd: float = 0.0  # summed over the reports whose cost is known
    costed: int = 0  # reports with a known cost
    uncosted: int = 0  # reports whose cost is unknown (no pricing, or usage the server got wrong)
    priced: bool | None = None  # models.toml gives a price (None: not known here, e.g. under xdist)
    ahead: int = 0  # episodes finished in the look-ahead pool whose items have not reported yet
    in_flight: int = 0  # episodes playing now (past any gate): each waits on its request or runs a tool
    episode_s: float = 0.0  # summed time of the finished look-ahead episodes
    timed: int = 0  # how many episodes episode_s sums
    durations: list[float] = field(default_factory=list)  # each finished look-ahead episode's time, for the ETA


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


def _numbers(p: ModelProgress, elapsed: float, eta_s: float | None = None) -> tuple[int, float, str]:
    """(episodes finished, requests per second, ETA text) of one model.

    `eta_s` is the look-ahead pool's estimate (:func:`schedule_eta`); without one (items played in
    pytest's order, or under xdist) the ETA is the items left at the pace of the items done."""
    finished = p.done + p.skipped + p.ahead
    rate = p.requests / elapsed if elapsed > 0 else 0.0
    if eta_s is None and p.done and p.total >= finished and not p.ahead:
        eta_s = (p.total - finished) * elapsed / p.done
    return finished, rate, _eta(eta_s) if finished < (p.total or 0) else "done"


def episode_mean(durations: list[float], ages: list[float]) -> float | None:
    """The mean episode time from the finished episodes' `durations` and the running ones' `ages`.

    The plain mean of the finished ones is biased low while many play: the first to finish are the
    quick ones (all 64 of a pool's first wave start together). So this is the Kaplan-Meier mean,
    the running episodes counting as lasting at least their age; while episodes older than every
    finished one still run, the survival curve is carried on with the slope it had so far (from the
    first finish to the oldest age) down to zero. None before any episode finished."""
    if not durations:
        return None
    events = sorted([(d, 1) for d in durations] + [(a, 0) for a in ages])
    at_risk, survive, last, area = len(events), 1.0, 0.0, 0.0
    first = None
    for t, finished in events:
        area += survive * (t - last)
        last = t
        if finished:
            first = t if first is None else first
            survive *= 1 - 1 / at_risk
        at_risk -= 1
    if survive > 1e-9 and first is not None and last > first:
        slope = (1 - survive) / (last - first)
        area += survive * survive / (2 * slope) if slope > 0 else 0.0
    return area


def schedule_eta(pending: list[str], running: list[tuple[str, float]], means: dict[str, float | None],
                 slots: int, exact: int = 512) -> dict[str, float]:
    """Seconds until each model's last episode finishes, by playing the rest of the run on paper.

    `pending`: the models of the episodes not started yet, in pytest's order (the pool starts them
    in that order); `running`: (model, seconds it has played) of the episodes in flight; `means`:
    each model's mean episode time (None: not known yet, the mean of the others is used); `slots`:
    episodes the pool plays at once. Each pending episode takes the slot that frees first (list
    scheduling, as the pool does); past the first `exact` episodes the rest is spread evenly over
    the slots (the same to within one episode's time, in constant time per episode). Models with
    no estimate at all are left out."""
    import heapq

    known = [m for m in means.values() if m is not None]
    fallback = sum(known) / len(known) if known else None
    slots = max(1, slots)
    free = sorted(max(0.0, (means.get(m) or fallback or 0.0) - age) for m, age in running)
    out: dict[str, float] = {}
    for m, age in running:
        mean = means.get(m) or fallback
        if mean is not None:
            out[m] = max(out.get(m, 0.0), mean - age if mean > age else 0.0)
    heap = (free + [0.0] * slots)[:max(slots, len(free))]
    heapq.heapify(heap)
    tail_start = tail = 0.0
    for n, m in enumerate(pending):
        mean = means.get(m) if means.get(m) is not None else fallback
        if mean is None:
            continue
        if n < exact:
            end = heapq.heappop(heap) + mean
            heapq.heappush(heap, end)
        else:
            if n == exact:
                tail_start = sum(heap) / len(heap)  # when the slots are free again, on average
            end = tail_start + tail + mean
            tail += mean / len(heap)
        out[m] = max(out.get(m, 0.0), end)
    return out


def cost_text(p: ModelProgress) -> str:
    """The cost so far: the known part (left out, as the reports leave it out, where unknown), or the
    reports' "unknown" for a model none of whose runs has a cost; $0 only for a priced model that spent 0."""
    from .report.format import UNKNOWN

    if not p.costed and (p.uncosted or p.priced is False):
        return f"cost {UNKNOWN}"
    return f"${p.cost_usd:.4f}"


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e4 else str(n)


def progress_groups(name: str, p: ModelProgress, elapsed: float, eta_s: float | None = None,
                    concurrent: bool = False) -> list[tuple[int, list[tuple[str, str]]]]:
    """The periodic line for one model as (priority, pieces) groups: a narrow terminal drops the
    lowest priorities first (the time elapsed, tokens, then req/s, cost, requests in flight), never
    the counts or the ETA."""
    finished, rate, eta = _numbers(p, elapsed, eta_s)
    return [
        (99, [("agentfloor progress ", "dim"), (name, "bold"), (":", "")]),
        (99, [(" ", ""), (f"{finished}/{p.total or '?'} done", "bold")]),
        (99, [(", ", ""), (f"{p.passed} passed", "green")]),
        (99, [(", ", ""), (f"{p.failed} failed", "red" if p.failed else "")]),
        (99, [(", ", ""), (f"{p.errors} errors", "bold red" if p.errors else "")]),
        (99, [(f", {p.skipped} skipped" if p.skipped else "", "yellow")]),
        (4, [(f", {p.in_flight} in flight" if concurrent else "", "")]),
        (1, [(f" | tokens {p.tokens_in:,} in / {p.tokens_out:,} out", "")]),
        (3, [(" | ", ""), (cost_text(p), "cyan")]),
        (2, [(f" | {rate:.1f} req/s", "")]),
        (90, [(" | ", ""), (f"ETA {eta}", "bold")]),
        (0, [(f", {_eta(elapsed)} elapsed", "")]),  # pytest's summary says it too
    ]


def _text(parts: list[tuple[str, str]]) -> str:
    return "".join(t for t, _ in parts)


def fit_groups(groups: list[tuple[int, list[tuple[str, str]]]], width: int | None) -> list[str]:
    """The groups as lines of at most `width` cells: whole groups are dropped, lowest priority first
    (never those of priority 5 or more); what still does not fit is folded onto indented lines at the
    groups' boundaries, so no number is ever cut (only a name wider than the terminal is)."""
    from rich.cells import cell_len

    kept = [g for g in groups if _text(g[1])]
    if width is None:
        return [_text([pc for _, parts in kept for pc in parts])]
    width = max(8, width)

    def size(gs: list[tuple[int, list[tuple[str, str]]]]) -> int:
        return sum(cell_len(_text(parts)) for _, parts in gs)

    while size(kept) > width and min(g[0] for g in kept) < 5:
        kept.remove(min(kept, key=lambda g: g[0]))
    lines: list[str] = []
    line = ""
    for _, parts in kept:
        text = _text(parts)
        if line and cell_len(line) + cell_len(text) > width:
            lines.append(line)
            line = "  " + text.lstrip(",| ")
        else:
            line += text
    lines.append(line)
    return [render_live([(ln, "")], width, False) for ln in lines]


def progress_parts(name: str, p: ModelProgress, elapsed: float, eta_s: float | None = None,
                   concurrent: bool = False) -> list[tuple[str, str]]:
    """The periodic line for one model as (text, rich style) pieces; joined they are `progress_line`."""
    return [pc for _, parts in progress_groups(name, p, elapsed, eta_s, concurrent) for pc in parts]


def live_parts(name: str, p: ModelProgress, elapsed: float, name_width: int = 0, eta_s: float | None = None,
               concurrent: bool = False) -> list[tuple[str, str]]:
    """The live line for one model: shorter than the periodic one, most telling first, since a narrow
    terminal cuts it from the right (tokens go first, then req/s, cost, the time elapsed, ETA). The
    time elapsed is what changes while an item runs: the line ticks. With episodes in flight
    (--agentfloor-concurrency) the count is of finished episodes, out of pytest's order, and the
    requests in flight follow it."""
    from rich.cells import cell_len

    finished, rate, eta = _numbers(p, elapsed, eta_s)
    total = str(p.total or "?")
    return [
        (name + " " * max(0, name_width - cell_len(name)), "bold"), (" ", ""),
        (f"{finished:>{len(total)}}/{total}", "bold"),
        *([(" | ", "dim"), (f"{p.in_flight} in flight", "")] if concurrent else []), (" | ", "dim"),
        (f"{p.passed} passed", "green"), (" ", ""),
        (f"{p.failed} failed", "red" if p.failed else ""), (" ", ""),
        (f"{p.errors} err", "bold red" if p.errors else ""),
        (f" {p.skipped} skipped" if p.skipped else "", "yellow"), (" | ", "dim"),
        (f"ETA {eta}", "bold"), (f", {_eta(elapsed)} elapsed", ""), (" | ", "dim"),
        (cost_text(p), "cyan"), (" | ", "dim"),
        (f"{rate:.1f} req/s", ""), (" | ", "dim"),
        (f"tokens {_count(p.tokens_in)} in {_count(p.tokens_out)} out", ""),
    ]


def progress_line(name: str, p: ModelProgress, elapsed: float, eta_s: float | None = None,
                  concurrent: bool = False, width: int | None = None) -> str:
    """One plain line for one model, fitted to `width` cells: folded onto more lines (joined by
    newlines) only when even its counts do not fit (no timing in it is ever asserted by tests)."""
    return "\n".join(fit_groups(progress_groups(name, p, elapsed, eta_s, concurrent), width))


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
        # episodes of the look-ahead pool (prefetch.py), reported from its threads as they start and finish
        self.lock = threading.Lock()
        self.concurrent = False  # a pool plays this process's episodes: counts are of finished episodes
        self.order: list[tuple[str, str]] = []  # (node id, model) of the case items, in pytest's order
        self._cursor = 0  # order[:_cursor] have all started or finished
        self.running: dict[str, tuple[str, float]] = {}  # node id -> (model, when it started)
        self.played: set[str] = set()  # node ids whose episode finished in the pool
        self.reported: set[str] = set()  # node ids counted from their reports
        self.inline: set[str] = set()  # models whose items play in pytest's own thread (not timed)
        self.peak = 0  # most episodes in flight at once: the pool's real width, gates included
        self.pending = False  # content changed while redraws were held back by the interval
        self.first_item: float | None = None  # when the first case item started
        self.waited = 0.0  # seconds the main thread spent waiting for the pool's episodes
        self.ticked = self.started  # when a tick last redrew for the clock's sake

    def _model(self, name: str) -> ModelProgress:
        found = self.models.get(name)  # not setdefault: it would build a ModelProgress per report
        if found is None:
            found = self.models[name] = ModelProgress()
        return found

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
                p = self._model(name)
                p.total += 1
                pricing = getattr(getattr(item, "model", None), "pricing", None)
                if pricing is not None:
                    p.priced = any(getattr(pricing, k, None) is not None
                                   for k in ("hourly_usd", "input_per_mtok", "output_per_mtok"))
                self.order.append((item.nodeid, name))

    # --- episodes of the look-ahead pool (called from its threads) -----------------------------

    def episode_started(self, nodeid: str, model: str) -> None:
        with self.lock:
            self.concurrent = True
            self.running[nodeid] = (model, self.clock())
            self._model(model).in_flight += 1
            self.peak = max(self.peak, len(self.running))
            self.pending = True

    def episode_finished(self, nodeid: str, model: str, trajectory: Any) -> None:
        with self.lock:
            now = self.clock()
            _, began = self.running.pop(nodeid, (model, now))
            p = self._model(model)
            p.in_flight = max(0, p.in_flight - 1)
            if trajectory is None:  # stopped (-x, --max-cost) before it played: never counted
                return
            p.episode_s += now - began
            p.timed += 1
            p.durations.append(now - began)
            turns = getattr(trajectory, "turns", None) or []
            p.requests += len(turns)
            p.tokens_in += sum(int(getattr(t, "tokens_in", 0) or 0) for t in turns)
            p.tokens_out += sum(int(getattr(t, "tokens_out", 0) or 0) for t in turns)
            self.played.add(nodeid)
            if nodeid not in self.reported:
                p.ahead += 1
            self.pending = True

    def eta(self) -> dict[str, float]:
        """Each model's seconds to go, from the finished episodes' times (empty without a pool)."""
        if not self.concurrent:
            return {}
        with self.lock:
            now = self.clock()
            busy = set(self.running) | self.played | self.reported
            while self._cursor < len(self.order) and self.order[self._cursor][0] in busy:
                self._cursor += 1
            pending = [m for nodeid, m in self.order[self._cursor:] if nodeid not in busy]
            running = [(m, now - began) for m, began in self.running.values()]
            means = {name: (episode_mean(p.durations, [age for m, age in running if m == name]) if p.timed
                            else 0.0 if name in self.inline else None) for name, p in self.models.items()}
            slots = max(self.peak, 1)
        if not any(v for v in means.values()):
            return {}  # no episode has finished yet: no estimate
        etas = schedule_eta(pending, running, means, slots)
        self._main_thread_bound(etas, now)
        for name, left in etas.items():
            # the model is done when the slowest of its last episodes is: not at their mean time but
            # near the quantile 1 - 1/(k+1) of k episodes at once (its finished episodes' times)
            p = self.models[name]
            k = min(slots, sum(1 for m in pending if m == name) + sum(1 for m, _ in running if m == name))
            mean = means.get(name)
            if k > 1 and mean and len(p.durations) > 1:
                times = sorted(p.durations)
                etas[name] = left + max(0.0, times[min(len(times) - 1, int(len(times) * k / (k + 1)))] - mean)
        return etas

    def waited_for(self, seconds: float) -> None:
        """The main thread waited `seconds` for an episode (not time it spent grading and reporting)."""
        with self.lock:
            self.waited += seconds

    def _main_thread_bound(self, etas: dict[str, float], now: float) -> None:
        """No model is done before pytest's thread has graded and reported its items: where that
        thread, not the pool, is the bottleneck (fast endpoints, heavy grading), each ETA is at
        least its model's unreported items (up to its last one) at that thread's own pace per item,
        its waits for episodes left out."""
        with self.lock:
            reported = len(self.reported)
            if self.first_item is None or reported < 8:
                return
            per_item = max(0.0, now - self.first_item - self.waited) / reported
            unreported = [m for nodeid, m in self.order if nodeid not in self.reported]
        last: dict[str, int] = {}
        for n, m in enumerate(unreported):
            last[m] = n + 1
        for name, n in last.items():
            etas[name] = max(etas.get(name, 0.0), n * per_item)

    def ticks(self) -> bool:
        """Whether an episode played in pytest's own turn should play in a thread of its own, pytest's
        thread waiting for it and ticking this display (a live region: its clock figures then move
        while a long episode plays, as they do with the look-ahead pool)."""
        return self.display == "live" and not self.finished

    def tick(self) -> None:
        """The main thread is waiting for an episode: draw what changed since the last redraw, and at
        least every TICK_S the clock's figures (time elapsed, ETA), so a long episode does not leave
        the line standing still (pytest's capture is suspended for it, as for live logging)."""
        if self.finished or self.display is None:
            return
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if self.display == "live":
            now = self.clock()
            if not self.pending and now - max(self.last, self.ticked) < TICK_S:
                return
            self.ticked = now
            with capman.global_and_fixture_disabled() if capman is not None else _nothing():
                self.refresh()
        elif self.clock() - self.last >= (self.interval or 0.0):
            with capman.global_and_fixture_disabled() if capman is not None else _nothing():
                self.last = self.clock()
                self.show()

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
        if self.first_item is None and model_of(nodeid) is not None:
            self.first_item = self.clock()
        if self.display == "live" and model_of(nodeid) is not None:
            self.refresh()  # visible while the item runs, after pytest wrote its name

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if (report.when != "call" and report.passed and self.display != "live"
                and not getattr(report, "agentfloor_records", None)):
            return  # a passed setup or teardown without records changes no count and draws nothing
        name = model_of(report.nodeid)
        if name is None:
            return
        with self.lock:
            if not self._count(name, report):
                return
        self._decide()
        if self.display == "live":
            self.refresh()
            return
        now = self.clock()
        if now - self.last >= (self.interval or 0.0):
            self.last = now
            self.show()

    def _count(self, name: str, report: pytest.TestReport) -> bool:
        """Count one report (under the lock); False when there is nothing to show for it."""
        p = self._model(name)
        played = report.nodeid in self.played  # its tokens and requests were counted as it finished
        # this phase's records (plugin.pytest_runtest_makereport; results.compact), with or without JUnit
        # properties (xunit2 has none)
        for props in (getattr(report, "agentfloor_records", None) or ()) if report.when != "teardown" else ():
            if not played:
                p.tokens_in += int(props.get("tokens_in") or 0)
                p.tokens_out += int(props.get("tokens_out") or 0)
                p.requests += int(props.get("turns") or 0)
            cost = _cost(props.get("cost_usd"))
            if cost is None:
                p.uncosted += 1  # unknown (an empty property): never added as $0
            else:
                p.cost_usd += cost
                p.costed += 1
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
        else:
            self.pending = True
            return self.display == "live"
        if report.nodeid not in self.reported:
            self.reported.add(report.nodeid)
            if played:
                p.ahead = max(0, p.ahead - 1)
            elif self.concurrent and report.nodeid not in self.running:
                self.inline.add(name)  # played in pytest's thread, never in the pool: no time to wait for
        self.pending = True
        return True

    def lines(self, width: int | None = None) -> list[str]:
        elapsed = self.clock() - self.started
        etas = self.eta()
        return [progress_line(name, p, elapsed, etas.get(name), self.concurrent, width)
                for name, p in list(self.models.items())]

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
        etas = self.eta()
        out = [render_live(live_parts(n, self.models[n], elapsed, pad, etas.get(n), self.concurrent), width - 1,
                           self.color) for n in shown]
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
            self.pending = True  # drawn by the next event or tick past the interval, never dropped
            return
        self.pending = False
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
        width = getattr(tr._tw, "fullwidth", None)
        for name, text in zip(list(self.models), self.lines(width - 1 if width else None)):
            for line in text.split("\n"):
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


def _cost(value: object) -> float | None:
    """A record's cost_usd (a number; None, or empty text in JUnit form: unknown) as dollars, None if unknown."""
    if isinstance(value, bool) or value is None or value == "":
        return None
    try:
        usd = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return usd if math.isfinite(usd) and usd >= 0 else None


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def install(config: pytest.Config, mode: str, interval: float | None) -> Progress | None:
    """Register the progress plugin on the controller, per --agentfloor-progress (auto|live|lines|off)."""
    if mode == "off" or config.option.collectonly or config.get_verbosity() < -1:
        return None
    plugin = Progress(config, style=mode, interval=interval)
    config.pluginmanager.register(plugin, "agentfloor-progress")
    config.stash[episode_watch_key] = plugin  # this process's look-ahead pool tells it of each episode
    return plugin
