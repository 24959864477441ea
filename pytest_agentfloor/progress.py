"""Live progress on the controller: one line per model, every few seconds, between pytest's own output.

Items done / total, passes, errors, tokens in/out, cost so far, requests per second and an ETA,
from the same reports the controller aggregates (so it works under xdist). Lines are written
through pytest's terminal reporter on a line of their own, so pytest's dots, -q and the final
summary stay intact: with a terminal they are coloured, otherwise (CI logs) plain. They are
periodic lines, not a region redrawn in place: pytest owns the cursor.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest

_MODEL = re.compile(r"\[v\d+-i\d+-r\d+-(?P<model>.+)\]$")


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


def progress_line(name: str, p: ModelProgress, elapsed: float) -> str:
    """One plain line for one model (no timing in it is ever asserted by tests)."""
    finished = p.done + p.skipped
    rate = p.requests / elapsed if elapsed > 0 else 0.0
    eta = (p.total - finished) * elapsed / p.done if p.done and p.total >= finished else None
    return (f"agentfloor progress {name}: {finished}/{p.total or '?'} done, {p.passed} passed, {p.failed} failed, "
            f"{p.errors} errors" + (f", {p.skipped} skipped" if p.skipped else "")
            + f" | tokens {p.tokens_in:,} in / {p.tokens_out:,} out | ${p.cost_usd:.4f} | {rate:.1f} req/s | "
            f"ETA {_eta(eta) if finished < (p.total or 0) else 'done'}")


class Progress:
    """Controller-only plugin: counts outcomes per model and writes the lines at most every `interval` s."""

    def __init__(self, config: pytest.Config, *, style: str, interval: float | None,
                 clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.style = style  # "auto", "color" or "plain"
        self.interval = interval  # None: 10 s on a terminal, 30 s otherwise
        self.clock = clock
        self.started = clock()
        self.last = self.started
        self.models: dict[str, ModelProgress] = {}
        self.printed = False
        self._totals_from_workers: dict[str, int] = {}

    def _model(self, name: str) -> ModelProgress:
        return self.models.setdefault(name, ModelProgress())

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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = model_of(report.nodeid)
        if name is None:
            return
        p = self._model(name)
        props = dict(report.user_properties) if report.when != "teardown" else {}
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
        else:
            return
        now = self.clock()
        if self.interval is None:
            self.interval = 10.0 if self._tty() else 30.0
        if now - self.last >= self.interval:
            self.last = now
            self.show()

    def lines(self) -> list[str]:
        elapsed = self.clock() - self.started
        return [progress_line(name, p, elapsed) for name, p in self.models.items()]

    def _tty(self) -> bool:
        tr = self.config.pluginmanager.getplugin("terminalreporter")
        return bool(tr is not None and getattr(tr, "isatty", False))

    def show(self) -> None:
        tr = self.config.pluginmanager.getplugin("terminalreporter")
        if tr is None or not self.models:
            return
        tr.ensure_newline()
        if getattr(tr._tw, "width_of_current_line", 0):  # pytest's dots of -q: finish their line first
            tr._tw.line()
        color = self.style == "color" or (self.style == "auto" and tr.hasmarkup)
        for name, line in zip(self.models, self.lines()):
            if color:
                p = self.models[name]
                colour = {"red": bool(p.errors)} if p.errors else {"yellow": bool(p.failed), "green": not p.failed}
                tr.write_line(line, bold=True, **colour)
            else:
                tr.write_line(line)
        tr.currentfspath = None  # pytest starts its next result on a fresh line, with its file name
        self.printed = True

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.printed:  # the last word on each model, once the run is over
            self.show()


def install(config: pytest.Config, mode: str, interval: float | None) -> Progress | None:
    """Register the progress plugin on the controller, per --agentfloor-progress (auto|color|plain|off)."""
    if mode == "off" or config.option.collectonly or config.get_verbosity() < -1:
        return None
    plugin = Progress(config, style=mode, interval=interval)
    config.pluginmanager.register(plugin, "agentfloor-progress")
    return plugin
