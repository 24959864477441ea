"""A killed proxy loses no acknowledged capture: each pair is in its file before the agent has its reply."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.capture.helpers import client, records
from tests.fakeserver import FakeModelServer, reply

REPO = Path(__file__).resolve().parents[2]


def _start(upstream: str, out: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "pytest_agentfloor", "capture", "--upstream", upstream,
                             "--listen", "127.0.0.1:0", "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline() if proc.stdout else ""
    assert "listening on http://" in line, line + (proc.stderr.read() if proc.stderr else "")
    return proc, line.split("listening on ", 1)[1].split(" ", 1)[0]


@pytest.mark.parametrize("fsync", ["never", "always"])
def test_sigkill_after_n_acknowledged_replies_leaves_n_lines(tmp_path: Path, fsync: str) -> None:
    n = 7
    with FakeModelServer(default=reply("ok")) as up:
        proc, url = _start(up.url, tmp_path, "--fsync", fsync)
        try:
            with client() as c:
                for i in range(n):
                    stream = i % 2 == 1
                    path = "/api/chat" if i % 3 == 0 else "/v1/chat/completions"
                    r = c.post(url + path, json={"model": "m", "stream": stream,
                                                 "messages": [{"role": "user", "content": str(i)}]})
                    assert r.status_code == 200
                    r.read()
            proc.send_signal(signal.SIGKILL)  # at once: no shutdown, no flush of anything
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
    got = records(tmp_path)
    assert len(got) == n and sorted(r["request"]["messages"][0]["content"] for r in got) == [str(i) for i in range(n)]


def test_sigterm_stops_the_proxy_and_says_how_many_were_captured(tmp_path: Path) -> None:
    with FakeModelServer(default=reply("ok")) as up:
        proc, url = _start(up.url, tmp_path)
        with client() as c:
            c.post(url + "/v1/chat/completions", json={"model": "m", "messages": []})
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "1 call(s) captured" in out, err
