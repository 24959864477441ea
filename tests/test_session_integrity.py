"""A run's verdict must match what ran (issue 10, items 5-8), through real pytest runs.

- a dead endpoint or a refused key at the probe is a pytest error, not a green skip;
- every report says which session it describes and whether that run is COMPLETE or PARTIAL, and a
  partial run never replaces the files of a complete one; a second session on the same report
  dir is refused;
- the same case id in two files is a collection error naming both;
- hourly cost charges the time the model was busy, so ``-n`` does not change it.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.probe import endpoint_hint
from pytest_agentfloor.reportdir import ReportDirLock
from tests.fakeserver import FakeModelServer, raw, reply, stall, status

REPO = Path(__file__).resolve().parents[1]
ONE_ITEM = ("cases/tier_A/A1.toml", "--variants", "v0", "--instances", "i0")


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases", pytester.path / "cases")
    return pytester


def http_model(pytester: pytest.Pytester, url: str, **extra: Any) -> None:
    """models.toml with one OpenAI-compatible model "fake" at `url` (no retries, 1 s timeout)."""
    fields = {"provider": "openai", "model": "tiny", "base_url": url, "retries": 0, "timeout_s": 1, **extra}

    def toml(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {toml(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    pytester.path.joinpath("models.toml").write_text(
        "[models.fake]\n" + "".join(f"{k} = {toml(v)}\n" for k, v in fields.items()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def top(pytester: pytest.Pytester, name: str = "summary.json") -> Path:
    return pytester.path / "reports" / name


def run_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())["run"]


# -- (5) a dead endpoint is an error, not a skip ---------------------------------------------
def test_a_dead_port_makes_the_models_items_errors_and_the_run_fail(bench: pytest.Pytester) -> None:
    port = free_port()  # bound and released: nothing listens there
    http_model(bench, f"http://127.0.0.1:{port}/v1")
    result = bench.runpytest(*ONE_ITEM, "--model", "fake")
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*model 'fake' not run: the probe at session start failed: endpoint error: "
                                 f"http://127.0.0.1:{port}/v1: connection refused*is the server running*"])
    assert "skipped" not in result.stdout.str().split("short test summary")[-1]
    assert "context window" not in result.stdout.str()  # issue 29: nothing was measured at a dead port
    run = json.loads((bench.path / "reports" / "latest" / "session.json").read_text())
    assert not run["complete"] and any("endpoint failed the probe" in r for r in run["partial_reasons"])


@pytest.mark.parametrize("action, words", [
    (status(401, "invalid api key"), "check environment variable AF_TEST_KEY (models.fake.api_key_env)"),
    (status(403, "forbidden"), "check environment variable AF_TEST_KEY"),
    (status(404, "model 'tiny' not found"), "the server does not know model 'tiny'"),
    (status(503, "loading"), "HTTP 503"),
    (stall(5), "timed out after 1s"),
])
def test_endpoint_failures_at_the_probe_are_errors_naming_endpoint_and_cause(
        bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, action: Any, words: str) -> None:
    monkeypatch.setenv("AF_TEST_KEY", "sk-test-not-a-real-key")
    with FakeModelServer(lambda body: action) as server:
        url = server.openai_url
        http_model(bench, url, api_key_env="AF_TEST_KEY")
        result = bench.runpytest(*ONE_ITEM, "--model", "fake")
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert words in out and url in out
    assert "sk-test-not-a-real-key" not in out


def test_only_the_papers_probe_classes_skip_and_say_so_once(bench: pytest.Pytester) -> None:
    leaked = reply(content='<tool_call>{"name": "lookup_record", "arguments": {}}</tool_call>')
    with FakeModelServer(lambda body: leaked) as server:
        http_model(bench, server.openai_url)
        result = bench.runpytest("cases/tier_A/A1.toml", "--variants", "v0,v1", "--instances", "i0",
                                 "--model", "fake")
    result.assert_outcomes(skipped=2)
    warnings = [line for line in result.stdout.lines if "WARNING" in line and "skipped" in line]
    assert len(warnings) == 1
    assert "2 item(s) of model fake skipped: the probe classed it text_leaked" in warnings[0]


def test_endpoint_hints_name_what_to_check() -> None:
    assert "does not resolve" in endpoint_hint("host name could not be resolved", name="m")
    assert "models.m.api_key_env" in endpoint_hint("HTTP 401: no", name="m")  # no key configured at all
    assert endpoint_hint("HTTP 400: bad request", name="m") == ""


# -- (6) every report says what it describes ---------------------------------------------------
def test_reports_carry_the_session_and_completeness_and_a_partial_run_keeps_the_complete_files(
        bench: pytest.Pytester) -> None:
    full = bench.runpytest("cases", "--model", "oracle")
    assert full.ret == 0
    run = run_of(top(bench))
    assert run["complete"] is True and run["partial_reasons"] == []
    sid = run["session_id"]
    assert (bench.path / "reports" / "sessions" / sid / "runs.jsonl").exists()
    assert f"session {sid} · COMPLETE" in top(bench, "report.md").read_text()
    assert f"session {sid} · COMPLETE" in top(bench, "report.html").read_text()
    full.stdout.fnmatch_lines([f"agentfloor: session {sid} · COMPLETE*"])
    complete_runs = top(bench, "runs.jsonl").read_text()

    narrow = bench.runpytest("cases/tier_A/A1.toml::A1[v0-i0-r0-oracle]", "--model", "oracle")
    narrow.assert_outcomes(passed=1)
    assert run_of(top(bench))["session_id"] == sid  # the complete run's files are untouched ...
    assert top(bench, "runs.jsonl").read_text() == complete_runs
    latest = bench.path / "reports" / "latest"
    part = run_of(latest / "summary.json")  # ... and the partial one is where `latest` points
    assert part["session_id"] != sid and part["complete"] is False
    assert part["partial_reasons"] == ["selection narrower than the case set: cases/tier_A/A1.toml::A1[v0-i0-r0-oracle]"]
    assert "PARTIAL (selection narrower" in (latest / "report.md").read_text()
    narrow.stdout.fnmatch_lines(["*PARTIAL (selection narrower than the case set*",
                                 f"*still shows the COMPLETE session {sid}"])


@pytest.mark.parametrize("args, reason", [
    (("-x",), "stopped early: stopping after 1 failures"),
    (("--maxfail", "2"), "stopped early: stopping after 2 failures"),
    (("-k", "A1 or B1"), "-k 'A1 or B1'"),
    (("-m", "tier_A"), "-m 'tier_A'"),
    (("--variants", "v0"), "--variants v0"),
])
def test_stops_and_narrowed_selections_are_partial(bench: pytest.Pytester, args: tuple[str, ...], reason: str) -> None:
    bench.runpytest("cases", "--model", "fault-resign", *args)
    run = run_of(top(bench))  # nothing complete before, so the partial run is the one shown
    assert run["complete"] is False and reason in run["partial_reasons"]
    assert run["selection"]["models"] == ["fault-resign"]


def test_stop_under_xdist_is_partial(bench: pytest.Pytester) -> None:
    bench.runpytest_subprocess("cases/tier_B", "--model", "fault-resign", "--maxfail", "1", "-n", "2")
    run = run_of(top(bench))
    assert run["complete"] is False
    assert any(r.startswith("stopped early") for r in run["partial_reasons"]), run["partial_reasons"]


def test_an_interrupted_run_is_partial(bench: pytest.Pytester) -> None:
    bench.makeconftest("""
        _n = []
        def pytest_runtest_logfinish(nodeid, location):
            _n.append(nodeid)
            if len(_n) == 3:
                raise KeyboardInterrupt
    """)
    result = bench.runpytest_subprocess("cases", "--model", "oracle")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    run = run_of(top(bench))
    assert run["complete"] is False and "interrupted" in run["partial_reasons"]
    assert len(top(bench, "runs.jsonl").read_text().splitlines()) == 3


def test_collection_errors_make_a_run_partial(bench: pytest.Pytester) -> None:
    (bench.path / "cases" / "tier_A" / "A9.toml").write_text('id = "A9"\ntier = "A"\n')
    bench.runpytest("cases", "--model", "oracle")
    assert "1 collection error(s)" in run_of(top(bench))["partial_reasons"]


@pytest.mark.parametrize("mode", ["none", "term"])
def test_runs_and_report_files_are_never_out_of_sync(bench: pytest.Pytester, mode: str) -> None:
    bench.runpytest("cases/tier_A", "--model", "oracle")
    assert top(bench).exists()
    bench.runpytest("cases/tier_B", "--model", "oracle", "--agentfloor-report", mode)
    runs = [json.loads(line) for line in top(bench, "runs.jsonl").read_text().splitlines()]
    assert {r["tier"] for r in runs} == {"B"}
    for name in ("summary.json", "tcr.csv", "report.md", "report.html"):
        assert not top(bench, name).exists(), f"stale {name} beside a newer runs.jsonl"
    assert json.loads(top(bench, "session.json").read_text())["selection"]["paths"] == ["cases/tier_B"]


def test_a_second_session_on_the_same_report_dir_is_refused(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_A", "--model", "oracle")
    live = top(bench, "runs.jsonl").read_text()
    holder = ReportDirLock(bench.path / "reports", "20990101-000000.000-beef")
    holder.acquire()  # another session holds the dir (flock: a second open file conflicts, same process or not)
    try:
        result = bench.runpytest("cases/tier_B", "--model", "oracle")
    finally:
        holder.release()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-report-dir: report dir * is in use by session 20990101-000000.000-beef (pid *);"
                                 " wait for it to finish, or give this run its own directory with --agentfloor-report-dir DIR"])
    assert top(bench, "runs.jsonl").read_text() == live  # nothing moved
    assert len(list((bench.path / "reports" / "sessions").iterdir())) == 1


def test_two_concurrent_sessions_one_runs_the_other_is_refused(bench: pytest.Pytester) -> None:
    """The first session is a real pytest process, held open inside its run by its conftest."""
    gate = bench.path / "go"
    bench.makeconftest(f"""
        import os, time
        def pytest_runtest_setup(item):
            open({str(bench.path / 'started')!r}, "w").close()
            while not os.path.exists({str(gate)!r}):
                time.sleep(0.05)
    """)
    first = subprocess.Popen([sys.executable, "-m", "pytest", "cases/tier_A/A1.toml", "--model", "oracle",
                              "--variants", "v0", "--instances", "i0", "-p", "no:cacheprovider"],
                             cwd=bench.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (bench.path / "started").exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        second = bench.runpytest_subprocess("cases/tier_B/B1.toml", "--model", "oracle")
        assert second.ret == pytest.ExitCode.USAGE_ERROR
        second.stderr.fnmatch_lines(["*is in use by session *"])
    finally:
        gate.touch()
        first.communicate(timeout=120)
    assert first.returncode == 0
    assert run_of(top(bench))["selection"]["paths"] == ["cases/tier_A/A1.toml"]


def test_report_rebuild_keeps_the_run_header(bench: pytest.Pytester) -> None:
    from pytest_agentfloor.report.cli import main

    bench.runpytest("cases/tier_A", "--model", "oracle")
    before = {n: top(bench, n).read_text() for n in ("summary.json", "report.md", "report.html")}
    assert main([str(top(bench, "runs.jsonl"))]) == 0
    assert {n: top(bench, n).read_text() for n in before} == before


# -- (7) duplicate case ids ------------------------------------------------------------------
def test_the_same_case_id_in_two_files_is_a_collection_error_naming_both(bench: pytest.Pytester) -> None:
    first = bench.path / "cases" / "tier_A" / "A1.toml"
    (bench.path / "cases" / "zz_more" / "tier_A").mkdir(parents=True)
    second = bench.path / "cases" / "zz_more" / "tier_A" / "A1.toml"  # e.g. a second suite merged in
    shutil.copy(first, second)
    result = bench.runpytest("cases", "-m", "tier_A", "--model", "fault-resign", "--variants", "v0",
                             "--instances", "i0")
    result.assert_outcomes(failed=5, errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting cases/zz_more/tier_A/A1.toml*",
                                 f"invalid case file {second}:",
                                 f"  id: case id 'A1' is already defined in {first}; every case file needs its own id"])
    assert result.ret != 0
    summary = json.loads(top(bench).read_text())
    assert summary["run"]["complete"] is False
    assert sum(1 for r in summary["runs"] if r["task"] == "A1") == 1


# -- (8) hourly cost is a property of the work, not of -n ------------------------------------
DELAY_S = 0.1  # long enough that -n 2 doubles the latency (requests queue behind one slot), short for 20 requests


def serial_server_with_timings() -> FakeModelServer:
    """One slot, like a llama.cpp server started without --parallel: concurrent requests queue.

    Each request takes DELAY_S of "compute", and the response reports it the way llama.cpp does
    (``timings``), so under -n 2 the latency doubles while the work does not.
    """
    slot = threading.Lock()
    n = iter(range(10**6))

    def respond(body: Any) -> Any:
        with slot:
            time.sleep(DELAY_S)
        return raw({"id": f"c{next(n)}", "object": "chat.completion", "created": 0, "model": "tiny",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "done"}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
                    "timings": {"prompt_ms": 1000 * DELAY_S * 0.4, "predicted_ms": 1000 * DELAY_S * 0.6}})

    return FakeModelServer(respond)


def test_hourly_cost_is_the_same_under_n0_and_n2(bench: pytest.Pytester) -> None:
    args = ["cases/tier_A", "--model", "fake", "--variants", "v0,v1", "--instances", "i0", "--no-probe",
            "-p", "no:cacheprovider"]
    per_run = {}
    with serial_server_with_timings() as server:
        http_model(bench, server.openai_url, pricing={"hourly_usd": 3600.0}, timeout_s=30)
        for n in ("0", "2"):
            bench.runpytest_subprocess(*args, "-n", n)
            recs = [json.loads(line) for line in top(bench, "runs.jsonl").read_text().splitlines()]
            assert len(recs) == 10 and not any(r["infra_error"] for r in recs)
            per_run[n] = sum(r["cost_usd"] for r in recs) / len(recs)
    assert per_run["0"] == pytest.approx(DELAY_S, rel=1e-6)  # $3600/h x busy seconds = busy seconds in $
    assert per_run["2"] == pytest.approx(per_run["0"], rel=0.10)


def test_the_servers_own_processing_time_is_read_from_llama_cpp_timings() -> None:
    from pytest_agentfloor.config import ModelConfig
    from pytest_agentfloor.providers.openai_chat import OpenAIProvider

    with serial_server_with_timings() as server:
        prov = OpenAIProvider(ModelConfig(name="m", provider="openai", model="tiny", base_url=server.openai_url,
                                          retries=0, timeout_s=10))
        try:
            got = prov.complete([{"role": "user", "content": "hi"}], [], case=None)
        finally:
            prov.close()
    assert got.busy_s == pytest.approx(DELAY_S)
    assert got.latency_s >= got.busy_s  # the latency also holds the HTTP round trip


def test_files_of_an_older_version_are_kept_as_a_legacy_session(bench: pytest.Pytester) -> None:
    old = bench.path / "reports"
    old.mkdir()
    (old / "runs.jsonl").write_text('{"model": "x"}\n')
    (old / "summary.json").write_text("{}\n")
    bench.runpytest("cases/tier_A", "--model", "oracle")
    (legacy,) = (old / "sessions").glob("*-legacy")
    assert (legacy / "runs.jsonl").read_text() == '{"model": "x"}\n' and (legacy / "summary.json").exists()
    assert run_of(top(bench))["selection"]["paths"] == ["cases/tier_A"]


def test_collect_only_takes_no_lock_and_writes_nothing(bench: pytest.Pytester) -> None:
    bench.runpytest("cases", "--co", "-q")
    assert not (bench.path / "reports").exists()


def test_items_deselected_by_a_conftest_make_the_run_partial(bench: pytest.Pytester) -> None:
    bench.makeconftest("""
        def pytest_collection_modifyitems(config, items):
            drop = [i for i in items if "v1" in i.name]
            items[:] = [i for i in items if i not in drop]
            config.hook.pytest_deselected(items=drop)
    """)
    result = bench.runpytest("cases", "--model", "oracle")
    n = result.parseoutcomes()["deselected"]
    assert n > 0 and run_of(top(bench))["partial_reasons"] == [f"{n} item(s) deselected"]
