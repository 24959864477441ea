"""Latency the capture proxy adds per forwarded request (issue 32: target under 2 ms at the median on 2 cores).

A fake OpenAI-compatible upstream on loopback (tests/fakeserver.py, a process of its own) answers a
small chat request; the same request goes to it directly and through a capture proxy (``python -m
pytest_agentfloor capture``, a process of its own as deployed, default fsync policy ``interval``,
captures in a temporary folder), interleaved one to one so that load on the machine hits both
alike. (In one process the three would share one GIL, and each hand-over can wait out Python's
5 ms switch interval: an in-process proxy measured +4 to +8 ms here, which is not what an agent sees.) Each side keeps one keep-alive client, as an
agent does. Prints the median of each side, the median of the paired differences (the figure),
for a plain and a streamed (SSE) reply of a small request and a plain reply of an actuator-sized one
(42 KB of registry in the system prompt), with the load average before and after.

    python benchmarks/bench_capture.py [--pairs 1000]

AGENTFLOOR_BENCH_SMOKE=1 runs 40 pairs (tests/test_benchmarks.py: every benchmark runs in CI).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

UPSTREAM = ("import sys; sys.path.insert(0, sys.argv[1]); from tests.fakeserver import FakeModelServer, reply; "
            "s = FakeModelServer(default=reply('actuate')).start(); print(s.url, flush=True); sys.stdin.read()")

SMOKE = bool(os.environ.get("AGENTFLOOR_BENCH_SMOKE"))
BODY = {"model": "gpt-x", "max_tokens": 10, "messages": [
    {"role": "system", "content": "You route each user turn: answer with one word. " * 20},
    {"role": "user", "content": "Turn on the porch light, please."}]}
#: an actuator-sized request: the system prompt carries a 42 KB entity registry (seed 001's grounded site)
LARGE = dict(BODY, messages=[{"role": "system", "content": "light.kitchen_ceiling: Kitchen ceiling light, on/off. " * 780},
                             BODY["messages"][1]])


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(pairs: int, stream: bool, direct_url: str, proxy_url: str, large: bool = False) -> tuple[float, float, float]:
    body = dict(LARGE if large else BODY, stream=stream)
    direct, proxied = httpx.Client(trust_env=False), httpx.Client(trust_env=False)
    d_times, p_times = [], []
    try:
        for i in range(pairs + 5):
            order = ((direct, direct_url, d_times), (proxied, proxy_url, p_times))
            for c, url, out in (order if i % 2 == 0 else order[::-1]):  # who goes first alternates
                t = time.perf_counter()
                r = c.post(url + "/v1/chat/completions", json=body)
                r.read()
                dt = time.perf_counter() - t
                assert r.status_code == 200, r.text
                if i >= 5:  # warm-up left out
                    out.append(dt)
    finally:
        direct.close()
        proxied.close()
    diffs = [p - d for p, d in zip(p_times, d_times)]
    return statistics.median(d_times) * 1e3, statistics.median(p_times) * 1e3, statistics.median(diffs) * 1e3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=40 if SMOKE else 1000)
    ns = p.parse_args()
    before = _load()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with tempfile.TemporaryDirectory() as tmp:
        up = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(REPO)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
        proxy = None
        try:
            up_url = (up.stdout.readline() if up.stdout else "").strip()
            proxy = subprocess.Popen([sys.executable, "-m", "pytest_agentfloor", "capture", "--upstream", up_url,
                                      "--listen", "127.0.0.1:0", "--out", tmp], stdout=subprocess.PIPE, text=True,
                                     env=env)
            line = proxy.stdout.readline() if proxy.stdout else ""
            url = line.split("listening on ", 1)[1].split(" ", 1)[0]
            rows = []
            for name, stream, large in (("plain", False, False), ("streamed", True, False),
                                        ("42 KB prompt", False, True)):
                cpu = _cpu_s(proxy.pid)
                rows.append((name, *measure(ns.pairs, stream, up_url, url, large),
                             (_cpu_s(proxy.pid) - cpu) / (ns.pairs + 5) * 1e3))
        finally:
            for proc in (proxy, up):
                if proc is not None:
                    proc.terminate()
                    proc.communicate(timeout=20)
        captured = sum(1 for f in Path(tmp).glob("*.jsonl") for _ in f.open())
    print(f"capture proxy, {ns.pairs} interleaved pairs per reply kind, fake upstream on loopback, "
          f"{os.cpu_count()} cores; load average before {before}, after {_load()}")
    for name, d, pr, diff, cpu in rows:
        print(f"{name:12} reply: direct median {d:.2f} ms, through the proxy {pr:.2f} ms; "
              f"added latency per forwarded request: median {diff:+.2f} ms; proxy CPU {cpu:.2f} ms per request")
    print(f"captured lines: {captured} (expected {len(rows) * (ns.pairs + 5)})")
    return 0 if captured == len(rows) * (ns.pairs + 5) else 1


if __name__ == "__main__":
    sys.exit(main())
