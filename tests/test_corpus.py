"""Record, replay, resume and durability of run records, through real pytest runs."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.fakeserver import FakeModelServer, status
from tests.test_provider_episodes import follow_reference

REPO = Path(__file__).resolve().parents[1]
KILL_AFTER = """
import os, signal
_seen = []
_worker = []

def pytest_configure(config):
    # not the environment: an outer xdist run would leak its PYTEST_XDIST_WORKER into this one
    _worker.append(getattr(config, "workerinput", {{}}).get("workerid", ""))

def pytest_runtest_logfinish(nodeid, location):
    _seen.append(nodeid)
    if _worker[0] in ({workers}) and len(_seen) == {n}:
        os.kill(os.getpid(), signal.SIGKILL)
"""


def table(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("│")]


def runs(pytester: pytest.Pytester) -> list[dict]:
    path = pytester.path / "reports" / "latest" / "runs.jsonl"  # the latest session's, even when it was killed
    return [json.loads(line) for line in path.read_text().splitlines()]


def outcomes(records: list[dict]) -> list[tuple]:
    return sorted((r["nodeid"].split("@")[0], r["passed"], r["failure_mode"], r["first_unmet"]) for r in records)


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    for tier in ("tier_A", "tier_B", "tier_C"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    return pytester


class TestRecordReplay:
    @pytest.fixture
    def server(self):
        with FakeModelServer(follow_reference) as srv:
            yield srv

    @pytest.fixture
    def http_bench(self, bench: pytest.Pytester, server: FakeModelServer) -> pytest.Pytester:
        bench.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            retries = 0
            timeout_s = 2
        """)
        return bench

    def test_replay_reproduces_the_recorded_run_without_the_model(self, http_bench: pytest.Pytester,
                                                                  server: FakeModelServer) -> None:
        args = ["cases/tier_B/B1.toml", "--model", "fake", "--instances", "i0", "--no-probe"]
        http_bench.runpytest(*args, "--agentfloor-record").assert_outcomes(passed=5)
        recorded = runs(http_bench)
        n_requests = len(server.requests)
        server.responder = lambda body: status(500, "the live model must not be called")
        http_bench.runpytest(*args, "--agentfloor-replay").assert_outcomes(passed=5)
        assert len(server.requests) == n_requests
        replayed = runs(http_bench)
        strip = ("wall_s", "trajectory")
        assert [{k: v for k, v in r.items() if k not in strip} for r in recorded] == \
               [{k: v for k, v in r.items() if k not in strip} for r in replayed]
        assert [r["trajectory"]["turns"] for r in recorded] == [r["trajectory"]["turns"] for r in replayed]

    def test_a_replay_miss_is_an_error_and_never_calls_the_model(self, http_bench: pytest.Pytester,
                                                                 server: FakeModelServer) -> None:
        http_bench.runpytest("cases/tier_B/B1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0",
                             "--agentfloor-record", "--no-probe")
        n_requests = len(server.requests)
        result = http_bench.runpytest("cases/tier_B/B1.toml", "--model", "fake", "--variants", "v1",
                                      "--instances", "i0", "--agentfloor-replay")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*no recorded response for model 'fake', case B1 v1-i0-r0 turn 0 (key *"])
        assert len(server.requests) == n_requests

    def test_record_and_replay_exclude_each_other(self, http_bench: pytest.Pytester) -> None:
        result = http_bench.runpytest("cases", "--agentfloor-record", "--agentfloor-replay")
        assert result.ret == pytest.ExitCode.USAGE_ERROR


MODELS = ["--model", "oracle,fault-resign,fault-partial", "-p", "no:cacheprovider"]


def test_resume_after_the_controller_is_killed_gives_the_uninterrupted_result(bench: pytest.Pytester) -> None:
    full = bench.runpytest_subprocess("cases", *MODELS)
    expected_table, expected = table(full), outcomes(runs(bench))
    total = len(expected)
    shutil.rmtree(bench.path / "reports")
    bench.makeconftest(KILL_AFTER.format(workers="'',", n=total // 2))
    killed = bench.runpytest_subprocess("cases", *MODELS)
    assert killed.ret == -9
    assert len(runs(bench)) == total // 2
    (bench.path / "conftest.py").unlink()
    resumed = bench.runpytest_subprocess("cases", *MODELS, "--agentfloor-resume")
    resumed.stdout.fnmatch_lines([f"*{total // 2} deselected*", f"*resumed {total // 2} item(s) from runs.jsonl*"])
    assert table(resumed) == expected_table
    assert outcomes(runs(bench)) == expected


def test_resume_after_a_worker_is_killed(bench: pytest.Pytester) -> None:
    full = bench.runpytest_subprocess("cases", *MODELS)
    expected_table, expected = table(full), outcomes(runs(bench))
    shutil.rmtree(bench.path / "reports")
    bench.makeconftest(KILL_AFTER.format(workers="'gw1',", n=5))
    crashed = bench.runpytest_subprocess("cases", *MODELS, "-n", "2")
    assert crashed.ret != 0
    crashed.stdout.fnmatch_lines(["*worker 'gw1' crashed while running*"])
    (bench.path / "conftest.py").unlink()
    resumed = bench.runpytest_subprocess("cases", *MODELS, "--agentfloor-resume", "-n", "2")
    assert table(resumed) == expected_table
    assert outcomes(runs(bench)) == expected


def test_truncated_last_line_is_reported_and_ignored(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_A", "--model", "oracle")
    path = bench.path / "reports" / "runs.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    result = bench.runpytest("cases/tier_A", "--model", "oracle", "--agentfloor-resume")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*runs.jsonl:*: truncated last line ignored*",
                                 f"*resumed {len(lines) - 1} item(s) from runs.jsonl*"])


def test_resume_reruns_items_whose_case_changed(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_B/B1.toml", "--model", "oracle", "--instances", "i0")
    case = bench.path / "cases" / "tier_B" / "B1.toml"
    case.write_text(case.read_text() + "\n# gold corrected\n")
    result = bench.runpytest("cases/tier_B/B1.toml", "--model", "oracle", "--instances", "i0", "--agentfloor-resume")
    result.assert_outcomes(passed=5)
    assert "resumed 0" not in result.stdout.str() and "item(s) from runs.jsonl" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*--resume: *B1; their items run again*"])


def test_regrade_reports_changed_outcomes_without_a_model(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_B/B1.toml", "--model", "oracle", "--instances", "i0")
    case = bench.path / "cases" / "tier_B" / "B1.toml"
    # a corrected gold: the oracle's stored answers no longer match
    case.write_text(case.read_text().replace('values = ["Net 45"]', 'values = ["Net 90"]', 1))
    result = bench.run(sys.executable, "-m", "pytest_agentfloor", "regrade", "reports/runs.jsonl", "--cases", "cases",
                       "--write", "reports/regraded.jsonl")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*B1?v0-i0-r0-oracle?: passed -> failed (Q, F5)",
                                 "re-graded 5 record(s): 5 outcome(s) changed; passed 5 -> 0", "wrote *"])
    regraded = [json.loads(x) for x in (bench.path / "reports" / "regraded.jsonl").read_text().splitlines()]
    assert [r["passed"] for r in regraded] == [False] * 5 and all(r["first_unmet"] == "Q" for r in regraded)
    missing = bench.run(sys.executable, "-m", "pytest_agentfloor", "regrade", "nope.jsonl")
    assert missing.ret == 2 and "no such file: nope.jsonl" in missing.stderr.str()
