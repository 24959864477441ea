"""The live progress line under --agentfloor-concurrency (issue 34): it counts finished episodes as they
finish (out of pytest's order), shows the requests in flight, and its ETA comes from the finished
episodes' times.

A real run on a pseudo-terminal against the loopback fake server, whose every reply waits a known,
random time (uniform in [DELAY_LO, DELAY_HI] s, seeded): 5 variants x RUNS runs of case A1, two turns
each, 64 episodes at once. The ETA drawn is compared with the time the run actually still took,
both read off this run's own clock (this process's): the arrival of each drawing on the terminal,
and the server's last reply. How close the ETA comes is a timing: benchmarks/bench_progress_eta.py
measures it on this same run; the tests here check what does not depend on the machine's speed."""

from __future__ import annotations

import random
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.progress import ModelProgress, progress_line, schedule_eta
from tests.fakeserver import FakeModelServer, Reply, reply
from tests.ptyterm import SGR, run_in_pty, terminal_env

REPO = Path(__file__).resolve().parents[1]
COLS = 200
RUNS = 128  # 5 variants x 128 runs = 640 episodes: ten pool-fulls (the first tenth sees the first finish)
CONCURRENCY = 64
DELAY_LO, DELAY_HI = 0.5, 1.5  # seconds a reply waits: an episode of two turns takes 2 s on average
#: a drawing of the live region: erase below, its lines, the cursor back up
DRAW = re.compile(rb"\x1b\[J((?:\r?\n\r[^\r\n\x1b]*(?:\x1b\[[0-9;]*m[^\r\n\x1b]*)*)+)\x1b\[(\d+)A")
LINE = re.compile(r"^fake +(?P<done>\d+)/(?P<total>\d+) \| (?P<flight>\d+) in flight \| (?P<passed>\d+) passed "
                  r"(?P<failed>\d+) failed (?P<errors>\d+) err \| ETA (?P<eta>\S+), \S+ elapsed \| (?:\$[\d.]+|cost unknown) \| "
                  r"(?P<rate>[\d.]+) req/s \| tokens \S+ in \S+ out$")


class TimedServer:
    """Answers A1 by its reference, each reply after a random wait; counts requests in flight."""

    def __init__(self) -> None:
        self.rng = random.Random(34)
        self.lock = threading.Lock()
        self.in_flight = self.peak = 0
        self.last_reply = 0.0  # time.monotonic() of the last reply: the run's last episode ends there
        self.server = FakeModelServer(self.respond)

    def respond(self, body: Any) -> Reply:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        with self.lock:
            delay = self.rng.uniform(DELAY_LO, DELAY_HI)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(delay)
        finally:
            with self.lock:
                self.in_flight -= 1
                self.last_reply = time.monotonic()
        if turn == 0:
            return reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"})])
        return reply(content="340")


def eta_seconds(text: str) -> float | None:
    m = re.fullmatch(r"(?:(\d+)h(\d+)m|(\d+)m(\d+)s)", text)
    if not m:
        return None
    if m[1] is not None:
        return int(m[1]) * 3600 + int(m[2]) * 60
    return int(m[3]) * 60 + int(m[4])


def timed_draws(chunks: list[tuple[float, bytes]]) -> list[tuple[float, list[str]]]:
    """Every drawing of the live region with the time its last byte reached the terminal."""
    raw = b"".join(data for _, data in chunks)
    ends, offset = [], 0
    for when, data in chunks:
        offset += len(data)
        ends.append((offset, when))
    out, k = [], 0
    for m in DRAW.finditer(raw):
        while ends[k][0] < m.end():
            k += 1
        lines = [SGR.sub("", ln) for ln in re.split(r"\r?\n\r", m.group(1).decode("utf-8", "replace"))[1:]]
        out.append((ends[k][1], lines))
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", tmp_path / "cases" / "tier_A")
    return tmp_path


def run_live(project: Path, runs: int = RUNS) -> tuple[TimedServer, list[tuple[float, Any]]]:
    """Run A1 x 5 variants x `runs` at CONCURRENCY on a pty; (the server, every drawing's arrival time
    and its parsed first line)."""
    srv = TimedServer()
    with srv.server:
        (project / "models.toml").write_text(
            f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = "{srv.server.openai_url}"\n'
            "retries = 0\ntimeout_s = 30\n")
        env = terminal_env(REPO)
        chunks: list[tuple[float, bytes]] = []
        status, raw = run_in_pty(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "cases", "--model", "fake",
             "--instances", "i0", "--agentfloor-runs", str(runs), "--no-probe", "--agentfloor-report", "none",
             "--agentfloor-concurrency", str(CONCURRENCY)], project, env, cols=COLS, timed=chunks)
    assert status == 0, raw[-3000:]
    draws = [(t, LINE.match(lines[0])) for t, lines in timed_draws(chunks) if lines]
    assert draws and all(m for _, m in draws), [lines for _, lines in timed_draws(chunks)][:3]
    return srv, draws


def test_progress_counts_finished_episodes_under_concurrency(project: Path) -> None:
    srv, draws = run_live(project)
    assert srv.peak > CONCURRENCY // 2, srv.peak  # the pool really kept many requests waiting
    total = 5 * RUNS
    assert {int(m["total"]) for _, m in draws} == {total}
    done = [int(m["done"]) for _, m in draws]
    assert done == sorted(done) and done[-1] >= 0.9 * total  # finished episodes only grow
    # episodes are counted as they finish, ahead of the items pytest reports in its order
    assert any(int(m["done"]) - int(m["passed"]) - int(m["failed"]) - int(m["errors"]) >= CONCURRENCY // 2
               for _, m in draws)
    assert max(int(m["flight"]) for _, m in draws) > CONCURRENCY // 2
    # How close the ETA comes is a timing, measured by benchmarks/bench_progress_eta.py, not asserted here.


def test_schedule_eta_plays_the_rest_on_paper() -> None:
    # 4 slots, episodes of 2 s: 2 running (1 s to go each), 10 pending -> slots free at 1,1,0,0
    eta = schedule_eta(["m"] * 10, [("m", 1.0), ("m", 1.0)], {"m": 2.0}, slots=4)
    assert eta["m"] == pytest.approx(6.0)  # 0,0,1,1 -> +2 each: 10 episodes end by 6 s
    # the even spread past `exact` agrees with the exact schedule to within one episode
    exact = schedule_eta(["m"] * 400, [], {"m": 2.0}, slots=8, exact=10_000)["m"]
    spread = schedule_eta(["m"] * 400, [], {"m": 2.0}, slots=8, exact=16)["m"]
    assert exact == pytest.approx(100.0) and abs(spread - exact) <= 2.0
    # a model with no finished episode yet takes the others' mean; none at all: no estimate
    assert schedule_eta(["a", "b"], [], {"a": 1.0, "b": None}, slots=1)["b"] == pytest.approx(2.0)
    assert schedule_eta(["a"], [], {"a": None}, slots=1) == {}


@pytest.mark.parametrize("width", [40, 80, 120, 200])
def test_final_line_fits_the_width(width: int) -> None:
    p = ModelProgress(total=12_750, done=12_000, passed=11_000, failed=900, errors=100, skipped=3,
                      tokens_in=12_345_678, tokens_out=2_345_678, requests=90_000, cost_usd=123.4567)
    text = progress_line("gpt-4o-mini-2024-07-18", p, elapsed=3600.0, eta_s=200.0, concurrent=True, width=width)
    lines = text.split("\n")
    assert all(len(ln) <= width for ln in lines), lines
    joined = " ".join(ln.strip() for ln in lines)
    for number in ("12003/12750 done", "11000 passed", "900 failed", "100 errors", "3 skipped", "ETA 3m20s"):
        assert number in joined, (number, lines)  # folded, never cut
    if width >= 80:
        assert lines[0].startswith("agentfloor progress gpt-4o-mini-2024-07-18: 12003/12750 done")
    assert len(lines) == 1 if width == 200 else 2 <= len(lines) <= 4, lines
    if width == 200:
        assert "tokens 12,345,678 in" in text and "12 in flight" not in text and "0 in flight" in text


def test_eta_waits_for_pytests_own_thread_when_it_is_the_bottleneck() -> None:
    """Episodes may finish faster than pytest's thread grades and reports them: then no model is done
    before its items are reported, at that thread's own pace (its waits for episodes left out)."""
    from types import SimpleNamespace

    from pytest_agentfloor.progress import Progress

    now = [0.0]
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: None),
                             option=SimpleNamespace(capture="fd"), get_verbosity=lambda: 0)
    progress = Progress(config, style="lines", interval=1.0, clock=lambda: now[0])  # type: ignore[arg-type]
    progress.models["m"] = ModelProgress(total=100)
    progress.order = [(f"A1[v0-i0-r{n}-m]", "m") for n in range(100)]
    progress.first_item = 0.0
    for n in range(100):  # the pool played every episode in 10 s (1 s each, 10 at once)
        progress.episode_started(f"A1[v0-i0-r{n}-m]", "m")
        progress.episode_finished(f"A1[v0-i0-r{n}-m]", "m", SimpleNamespace(turns=[]))
    progress.models["m"].durations = [1.0] * 100
    progress.peak = 10
    now[0] = 10.0
    progress.waited_for(2.0)  # of its 10 s, pytest's thread waited 2 s and reported 20 items: 0.4 s each
    progress.reported = {f"A1[v0-i0-r{n}-m]" for n in range(20)}
    assert progress.eta()["m"] == pytest.approx(80 * 0.4)
