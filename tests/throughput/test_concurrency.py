"""--agentfloor-concurrency (issue 18): episodes of upcoming items play in threads, items report in order.

Real pytest runs against the loopback fake server, which follows case A1's reference solution
(variant v1 answers wrongly, so runs mix passes and failures) and answers after a short delay that
differs by prompt, so episodes finish out of order. Each concurrent run must give the same
outcomes, in the same order, the same records and the same JUnit as a run with --agentfloor-concurrency 1.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, Reply, reply

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "cases" / "tier_A" / "A1.toml"
A1 = ("cases/tier_A/A1.toml", "--instances", "i0", "--agentfloor-runs", "3", "--no-probe", "-p", "no:cacheprovider")
#: what may differ between two runs of the same items: timing and the session's identity
#: and the fake server numbers tool-call ids in the order requests arrive, so they follow the timing
VOLATILE = {"id", "tool_call_id", "call_id", "latency_s", "busy_s", "session", "started", "finished", "timestamp", "wall_s", "time"}


class A1Server:
    """Answers A1 by its reference (v1 wrongly), counting the requests in flight at once."""

    def __init__(self, delay_s: float = 0.02):
        case, digest = load_case(CASE)
        self.by_prompt = {}
        for n, v in enumerate(case.prompts):
            rc = resolve(case, v, "i0", digest)
            self.by_prompt[rc.prompt] = (v, rc.reference, delay_s * (1 + (n * 7) % 5))
        self.lock = threading.Lock()
        self.in_flight = self.peak = self.started = 0
        self.server = FakeModelServer(self.respond)

    def respond(self, body: Any) -> Reply:
        msgs = body["messages"]
        variant, ref, delay = self.by_prompt[next(m["content"] for m in msgs if m["role"] == "user")]
        turn = sum(1 for m in msgs if m["role"] == "assistant")
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.started += turn == 0
        try:
            time.sleep(delay)
        finally:
            with self.lock:
                self.in_flight -= 1
        if variant == "v1":
            return reply(content="I cannot tell.")
        step = ref[turn]
        return reply(tool_calls=[(c.tool, dict(c.args)) for c in step.calls]) if step.calls else reply(content=step.final)

    def __enter__(self) -> "A1Server":
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


@pytest.fixture
def a1():
    with A1Server() as srv:
        yield srv


@pytest.fixture
def bench(pytester: pytest.Pytester, a1: A1Server) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A", dirs_exist_ok=True)
    pytester.path.joinpath("models.toml").write_text(
        f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = "{a1.server.openai_url}"\n'
        "retries = 0\ntimeout_s = 10\n")
    return pytester


def records(pytester: pytest.Pytester, report_dir: str = "reports") -> list[dict[str, Any]]:
    """Every record of every session in `report_dir`, sessions in the order they ran."""
    files = sorted(pytester.path.glob(f"{report_dir}/sessions/*/runs.jsonl"))
    assert files, "no runs.jsonl written"
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def comparable(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in VOLATILE}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return [strip(r) for r in recs]


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two JSON values differ (readable failures instead of a truncated dict diff)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for n, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{n}]")]
    return [] if a == b else [f"{path}: {str(a)[:60]!r} != {str(b)[:60]!r}"]


def junit(path: Path) -> list[tuple[str, str]]:
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        props = {k: v for k, v in props.items() if k not in VOLATILE}
        out.append((case.get("name"), kind, json.dumps(props, sort_keys=True)))
    return out


def outcome_lines(result: pytest.RunResult) -> list[str]:
    return [ln.split(" ", 1)[0] + " " + ln.rsplit(" ", 1)[-1] for ln in result.outlines
            if ln.startswith("cases/") and (" PASSED" in ln or " FAILED" in ln or " ERROR" in ln)]


def test_same_outcomes_records_and_junit_in_order(bench: pytest.Pytester, a1: A1Server) -> None:
    serial = bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "1", "-v", "--junitxml=serial.xml",
                             "--agentfloor-report-dir", "serial")
    assert a1.peak == 1
    serial_recs = comparable(records(bench, "serial"))
    a1.peak = 0
    conc = bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "8", "-v", "--junitxml=conc.xml",
                           "--agentfloor-report-dir", "conc")
    assert 1 < a1.peak <= 8, a1.peak  # episodes overlapped, never more than asked
    counts = serial.parseoutcomes()
    assert counts["passed"] > 0 and counts["failed"] > 0
    assert conc.parseoutcomes() == counts
    assert outcome_lines(conc) == outcome_lines(serial) and outcome_lines(serial)
    assert differences(comparable(records(bench, "conc")), serial_recs) == []
    assert junit(bench.path / "conc.xml") == junit(bench.path / "serial.xml")


def test_maxfail_starts_no_episode_after_the_stop(bench: pytest.Pytester, a1: A1Server) -> None:
    # v1 fails: the stop comes after the first three v0 items and the first v1 item
    result = bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "2", "-x")
    counts = result.parseoutcomes()
    assert counts.get("failed") == 1 and counts.get("passed") == 3
    started_at_stop = a1.started
    # the window is 2 x concurrency: at most that many episodes beyond the item that failed
    assert started_at_stop <= 4 + 2 * 2, started_at_stop
    recs = records(bench)
    assert len(recs) == 4  # only the items that ran are recorded
    time.sleep(0.3)
    assert a1.started == started_at_stop  # nothing started after the session ended


def test_resume_after_a_stopped_concurrent_run(bench: pytest.Pytester, a1: A1Server) -> None:
    bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "4", "-x")
    full = bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "4", "--agentfloor-resume")
    total = len(load_case(CASE)[0].prompts) * 3
    counts = full.parseoutcomes()
    assert counts.get("passed", 0) + counts.get("failed", 0) == total - 4
    sessions = sorted(bench.path.glob("reports/sessions/*/runs.jsonl"))
    assert len(sessions) == 2
    per = [[(r["task"], r["variant"], r["run"]) for r in map(json.loads, f.read_text().splitlines())] for f in sessions]
    assert len(per[0]) == 4
    played = per[1][-(total - 4):]  # the resumed session may carry the earlier records first
    assert not set(played) & set(per[0]) and len(set(per[0]) | set(played)) == total


def test_replay_under_concurrency_matches_the_recording(bench: pytest.Pytester, a1: A1Server) -> None:
    recorded = bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "1", "--agentfloor-record", "-v")
    a1.server.stop()  # replay must not need the server
    replayed = bench.runpytest(*A1, "--model", "fake", "--agentfloor-concurrency", "8", "--agentfloor-replay", "-v")
    assert replayed.parseoutcomes() == recorded.parseoutcomes()
    assert outcome_lines(replayed) == outcome_lines(recorded)


def test_last_failed_same_as_serial(bench: pytest.Pytester) -> None:
    """--lf selects from pytest's cache, which concurrency must not change."""
    runs = {}
    for conc in ("1", "8"):
        shutil.rmtree(bench.path / ".pytest_cache", ignore_errors=True)
        first = bench.runpytest(*A1[:-2], "--model", "fake", "--agentfloor-concurrency", conc, "-p", "cacheprovider", "-v")
        again = bench.runpytest(*A1[:-2], "--model", "fake", "--agentfloor-concurrency", conc, "-p", "cacheprovider", "--lf", "-v")
        runs[conc] = (outcome_lines(first), outcome_lines(again))
    assert runs["8"] == runs["1"]


def test_xdist_workers_with_concurrency(bench: pytest.Pytester) -> None:
    serial = bench.runpytest_subprocess(*A1, "--model", "fake", "--agentfloor-concurrency", "1", "-p", "no:xdist")
    spread = bench.runpytest_subprocess(*A1, "--model", "fake", "--agentfloor-concurrency", "4", "-n", "2")
    counts = {k: v for k, v in serial.parseoutcomes().items() if k in ("passed", "failed", "error")}
    assert {k: v for k, v in spread.parseoutcomes().items() if k in counts} == counts
    one, two = ([(r["task"], r["variant"], r["run"], r["passed"]) for r in map(json.loads, f.read_text().splitlines())]
                for f in sorted(bench.path.glob("reports/sessions/*/runs.jsonl")))
    assert sorted(two) == sorted(one) and len(set(two)) == len(two)  # every item once, same verdicts


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_bad_concurrency_is_a_usage_error(bench: pytest.Pytester, value: str) -> None:
    result = bench.runpytest(*A1, "--model", "fake", f"--agentfloor-concurrency={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-concurrency: expected a whole number from 1 to 4096*"])


def test_concurrency_ini_setting(bench: pytest.Pytester, a1: A1Server) -> None:
    bench.makeini("[pytest]\nagentfloor_concurrency = 6\n")
    bench.runpytest(*A1, "--model", "fake")
    assert 1 < a1.peak <= 6


def test_xdist_load_scheduling_keeps_each_worker_window_full(pytester: pytest.Pytester) -> None:
    """xdist's --dist load stops topping a worker up while items take 0.1 s or more (an item waiting
    for its prefetched episode does): each worker then plays about two episodes at a time. With
    --agentfloor-concurrency the controller keeps every worker's queue as deep as its window."""
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A", dirs_exist_ok=True)
    with A1Server(delay_s=0.25) as slow:
        pytester.path.joinpath("models.toml").write_text(
            f'[models.fake]\nprovider = "openai"\nmodel = "tiny"\nbase_url = "{slow.server.openai_url}"\n'
            "retries = 0\ntimeout_s = 30\n")
        result = pytester.runpytest_subprocess("cases/tier_A/A1.toml", "--instances", "i0", "--agentfloor-runs", "4",
                                               "--no-probe", "-p", "no:cacheprovider", "--model", "fake",
                                               "--agentfloor-concurrency", "8", "-n", "2", "--dist", "load")
    counts = result.parseoutcomes()
    assert counts.get("passed", 0) + counts.get("failed", 0) == 20, result.outlines[-5:]
    # xdist's own scheduling hands each worker 2 items at first and keeps it at about 2 (peak <= 4);
    # with full windows one worker alone keeps up to 8 in flight
    assert slow.peak > 4, slow.peak


class _Node:
    def __init__(self, name: str):
        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = type("Gateway", (), {"id": name})()

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_windowed_scheduler_tops_up_by_the_window_and_shuts_down_at_the_end(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    from pytest_agentfloor.prefetch import make_scheduler

    config = pytester.parseconfigure("-p", "xdist", "--tx", "2*popen", "--dist", "load", "--agentfloor-concurrency", "4",
                                     "--agentfloor-model", "oracle")  # a benchmark run: a plain one stays inert
    sched = make_scheduler(config, None)
    assert sched is not None and sched.depth == 10  # 2 x 4 look-ahead, the running item and the held-back one
    nodes = [_Node("gw0"), _Node("gw1")]
    ids = [f"t{i}" for i in range(100)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    assert all(len(sched.node2pending[n]) >= sched.depth for n in nodes)
    done = set()
    while any(sched.node2pending[n] for n in nodes):
        for node in nodes:
            if sched.node2pending[node]:
                index = sched.node2pending[node][0]
                done.add(index)
                sched.mark_test_complete(node, index, duration=0.5)  # long items: xdist alone would wait
                if sched.pending:
                    assert len(sched.node2pending[node]) >= sched.depth
    assert done == set(range(100)) and not sched.pending
    assert all(n.shutting_down for n in nodes)
    assert sorted(nodes[0].sent + nodes[1].sent) == list(range(100))


@pytest.mark.parametrize("args", [("--agentfloor-concurrency", "1"), ("--agentfloor-concurrency", "4", "--dist", "loadfile")])
def test_xdist_keeps_its_own_scheduler_otherwise(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    pytest.importorskip("xdist")
    from pytest_agentfloor.prefetch import make_scheduler

    assert make_scheduler(pytester.parseconfigure("-p", "xdist", "--tx", "2*popen", *args), None) is None
