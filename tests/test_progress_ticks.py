"""The live progress line of a serial run ticks on its own while an episode plays (issue 34).

Without --agentfloor-concurrency the items' episodes used to play in pytest's own thread, which draws
the line only at events: a long episode left it standing still. Now, while a live region is shown, the
episode plays in a thread of its own and pytest's thread waits for it, redrawing the time elapsed and the
ETA every second. A real run on a pseudo-terminal against the loopback fake server, whose every reply
waits REPLY_S: an episode of two turns takes at least 2 x REPLY_S, so at least two whole seconds of
elapsed time pass during it on any machine (a slow one only adds drawings). Nothing here bounds a
time from above."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeModelServer, Reply, reply
from tests.ptyterm import SGR, run_in_pty, screen, terminal_env
from tests.test_progress_concurrency import eta_seconds, timed_draws

REPO = Path(__file__).resolve().parents[1]
COLS = 200
REPLY_S = float(os.environ.get("REPLY_S", "1.2"))
LINE = re.compile(r"^fake +(?P<done>\d+)/(?P<total>\d+) \| (?:\d+ in flight \| )?(?P<passed>\d+) passed (?P<failed>\d+) failed (?P<errors>\d+) "
                  r"err \| ETA (?P<eta>\S+), (?P<elapsed>\S+) elapsed \| ")
#: the project's conftest notes the threads started during the session, and those alive when pytest
#: unconfigures (after its summary)
CONFTEST = '''
import threading

started = []
_start = threading.Thread.start

def _noted(self, *args, **kwargs):
    started.append(self.name)
    return _start(self, *args, **kwargs)

threading.Thread.start = _noted

def pytest_unconfigure(config):
    alive = sorted(t.name for t in threading.enumerate() if t.name.startswith("agentfloor-episode"))
    with open("threads.txt", "w") as f:
        f.write(",".join(sorted(set(started))) + "\\n" + ",".join(alive))
'''


def respond(body: Any) -> Reply:
    time.sleep(REPLY_S)
    if not any(m["role"] == "assistant" for m in body["messages"]):
        return reply(tool_calls=[("get_attribute", {"record_id": "INV-Q7P2K", "attribute": "on_hand"})])
    return reply(content="340")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", tmp_path / "cases" / "tier_A")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    return tmp_path


def run_serial(project: Path, *args: str) -> tuple[int, str, list[tuple[float, list[str]]]]:
    with FakeModelServer(respond) as server:
        (project / "models.toml").write_text(
            f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = "{server.openai_url}"\n'
            "retries = 0\ntimeout_s = 60\n")
        env = terminal_env(REPO)
        chunks: list[tuple[float, bytes]] = []
        status, raw = run_in_pty(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "cases", "--model", "fake",
             "--instances", "i0", "--variants", "v0,v1", "--no-probe", "--agentfloor-report", "none", *args],
            project, env, cols=COLS, timed=chunks)
    return status, raw, timed_draws(chunks)


def threads(project: Path) -> tuple[set[str], str]:
    """(names of the episode threads started in the session, those still alive after pytest's summary)."""
    started, alive = (project / "threads.txt").read_text().split("\n")
    return {name for name in started.split(",") if name.startswith("agentfloor-episode")}, alive


@pytest.mark.parametrize("concurrency", ["1", "64"])
def test_live_line_ticks_while_an_episode_plays(project: Path, concurrency: str) -> None:
    """Serial (1): the episode plays in a thread of its own; pooled (64, the default): in the pool's."""
    status, raw, draws = run_serial(project, "--agentfloor-concurrency", concurrency)
    assert status == 0, raw[-3000:]
    lines = [LINE.match(d[0]) for _, d in draws if d]
    assert lines and all(lines), [d for _, d in draws][:3]
    # while the first item waits for its episode nothing is reported, yet the line is redrawn: the time
    # elapsed moves on (the episode lasts at least 2 x REPLY_S); elapsed never goes back
    first = [m for m in lines if m["passed"] == "0"]
    elapsed = [eta_seconds(m["elapsed"]) for m in lines]
    assert len({m["elapsed"] for m in first}) >= 3 and elapsed == sorted(elapsed), [m.group(0) for m in lines]
    assert all(m["eta"] == "?" for m in first if m["done"] == "0")  # nothing finished yet: no estimate, said so
    if concurrency == "1":  # the second item's wait: an ETA from the first item's pace, redrawn as well
        second = [m for m in lines if m["done"] == "1"]
        assert len({m["elapsed"] for m in second}) >= 2 and all(eta_seconds(m["eta"]) is not None for m in second)
    # nothing is drawn after pytest's summary, and no episode thread is alive by then
    plain = SGR.sub("", raw)
    summary = plain.rindex("2 passed in ")
    assert "\x1b[J" not in plain[summary:] and "\x1b[1A" not in plain[summary:]
    shown = screen(raw, COLS)
    assert re.match(r"^=+ 2 passed in [\d.]+s", SGR.sub("", shown[-1])), shown[-3:]
    assert not any(LINE.match(SGR.sub("", ln)) for ln in shown)  # no live line left on the screen
    started, alive = threads(project)
    assert alive == "" and ("agentfloor-episode-now" in started) == (concurrency == "1"), started


def test_plain_lines_play_the_episode_in_pytests_thread(project: Path) -> None:
    """Without a live region (here: --agentfloor-progress lines) nothing ticks: the episode plays in
    pytest's own thread, as before."""
    status, raw, draws = run_serial(project, "--agentfloor-concurrency", "1", "--agentfloor-progress", "lines")
    assert status == 0, raw[-3000:]
    assert draws == [] and "\x1b[J" not in raw
    assert threads(project) == (set(), "")
