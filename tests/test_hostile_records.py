"""Stored files under abuse: record size caps, bad lines in runs.jsonl and cassettes, torn lines on
resume, cassettes keyed by item, and bad --baseline/--report-dir (issue 16, items 7, 10-14)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.corpus import completed_records, read_cassette
from pytest_agentfloor.report.cli import main as report_main
from pytest_agentfloor.results import MAX_TEXT_BYTES, RunLog, cap_text, read_records
from tests.fakeserver import FakeModelServer, raw_tool_call, reply

REPO = Path(__file__).resolve().parents[1]
NO_REPORT = ["-p", "no:cacheprovider", "--agentfloor-report", "none"]


def runs(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "reports" / "runs.jsonl").read_text().splitlines()]


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    return pytester


# -- item 7: what a record stores per message is capped, with the original size ------------------
def test_cap_text_cuts_long_strings_and_records_their_size() -> None:
    big = "é" * 100_000  # 200,000 bytes
    capped, sizes = cap_text({"a": [{"content": big}, "short"], "b": 3})
    assert sizes == {"a[0].content": 200_000}
    kept = capped["a"][0]["content"]
    assert kept.endswith("...[cut: 200000 bytes in all]") and len(kept.encode()) <= MAX_TEXT_BYTES + 40
    assert capped["a"][1] == "short" and capped["b"] == 3
    assert cap_text("x" * MAX_TEXT_BYTES) == ("x" * MAX_TEXT_BYTES, {})


def test_a_5mb_argument_makes_a_small_record(bench: pytest.Pytester) -> None:
    huge = "A" * 5_000_000

    def respond(body: dict[str, Any]):
        if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
            return raw_tool_call("get_attribute", json.dumps({"record_id": huge, "attribute": "on_hand"}))
        return reply(content="340 " + huge)

    with FakeModelServer(respond) as server:
        bench.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            retries = 0
            timeout_s = 20
        """)
        result = bench.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0",
                                 "--no-probe", *NO_REPORT)
    result.assert_outcomes(failed=1)
    size = (bench.path / "reports" / "runs.jsonl").stat().st_size
    assert size < 1_000_000, size
    (record,) = runs(bench.path)
    assert record["capped"]["trajectory.final_answer"] == 5_000_004
    assert any(v >= 5_000_000 for k, v in record["capped"].items() if "raw_arguments" in k)
    assert len(result.stdout.str()) < 50_000  # the failure message quotes the model only in part


# -- item 10: runs.jsonl lines that are not records ---------------------------------------------
BAD_LINES: dict[str, tuple[bytes, str]] = {
    "non-UTF-8": (b'{"model": "\xff\xfe"}\n', "not UTF-8 (byte 0xff at column 12)"),
    "array": (b"[1,2,3]\n", "a JSON array, not a record object"),
    "null": (b"null\n", "a JSON null, not a record object"),
    "string": (b'"text"\n', "a JSON string, not a record object"),
    "number": (b"42\n", "a JSON number, not a record object"),
    "not JSON": (b"{oops\n", "not a JSON record"),
    "deep": (b"[" * 100_000 + b"]" * 100_000 + b"\n", "not a JSON record"),
}


@pytest.mark.parametrize("line, note", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_read_records_skips_and_names_a_bad_line(tmp_path: Path, line: bytes, note: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"n": 1}\n' + line + b'{"n": 2}\n')
    records, problems = read_records(path)
    assert records == [{"n": 1}, {"n": 2}]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:2: {note}")


def test_many_bad_lines_are_counted_not_listed(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"[1]\n" * 40 + b'{"n": 1}\n')
    records, problems = read_records(path)
    assert records == [{"n": 1}] and len(problems) == 6
    assert problems[-1] == f"{path}: 40 bad lines skipped in all (35 more not shown)"


def test_resume_skips_records_lacking_fields(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"model": "m", "trajectory": {}, "config": {}}) + "\n"
                    + json.dumps({"model": 3, "task": "A1", "trajectory": {}, "config": {}}) + "\n")
    done, problems = completed_records(path)
    assert done == {} and problems == [f"{path}: 2 record(s) lacking fields a resume needs were ignored "
                                       "(they run again)"]


def test_resume_and_report_read_a_damaged_runs_jsonl(bench: pytest.Pytester) -> None:
    args = ["cases/tier_A", "--model", "oracle", "--variants", "v0", "--instances", "i0", *NO_REPORT]
    bench.runpytest(*args).assert_outcomes(passed=5)
    path = bench.path / "reports" / "runs.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # damage: a non-UTF-8 byte in record 2, record 3 replaced by an array
    lines[1] = lines[1].replace(b'"model":"oracle"', b'"model":"or\xffacle"')
    lines[2] = b"[1,2,3]\n"
    path.write_bytes(b"".join(lines))
    result = bench.runpytest(*args, "--agentfloor-resume")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    result.stdout.fnmatch_lines(["*runs.jsonl:2: not UTF-8 (byte 0xff at column *), line ignored*",
                                 "*runs.jsonl:3: a JSON array, not a record object, ignored*",
                                 "*resumed 3 item(s) from runs.jsonl*"])
    code = report_main([str(path), "--n-boot", "200"])
    assert code == 0


def test_report_command_names_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\xff\n[1,2,3]\n")
    assert report_main([str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: not UTF-8" in err and f"{path}:2: a JSON array" in err
    assert "no complete run records" in err and "Traceback" not in err


# -- item 11: a torn last line is never extended ---------------------------------------------------
def test_resume_after_a_torn_last_line_starts_a_new_line(bench: pytest.Pytester) -> None:
    args = ["cases/tier_A", "--model", "oracle", "--variants", "v0,v1", "--instances", "i0", *NO_REPORT]
    bench.runpytest(*args).assert_outcomes(passed=10)
    path = bench.path / "reports" / "runs.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    result = bench.runpytest(*args, "--agentfloor-resume")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*runs.jsonl:10: truncated last line ignored*"])
    records, problems = read_records(path)
    assert len(records) == 10 and problems == []  # nine carried over, the torn one re-run and written whole


def test_run_log_appends_after_a_torn_line_from_several_writers(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"torn": ')
    logs = [RunLog(path) for _ in range(4)]
    threads = [threading.Thread(target=lambda log=log, i=i: [log.append({"w": i, "k": k}) for k in range(25)])
               for i, log in enumerate(logs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for log in logs:
        log.close()
    records, problems = read_records(path)
    assert len(records) == 100 and problems == [f"{path}:1: not a JSON record, ignored"]


# -- item 14: cassettes keyed by item and turn ------------------------------------------------------
def test_replay_of_a_sweep_equals_the_recorded_sweep(bench: pytest.Pytester) -> None:
    counter = iter(range(10**6))

    def respond(body: dict[str, Any]):
        """A 'sampling' model: identical requests get different answers (right on every third)."""
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        n = next(counter)
        if turn == 0:
            return raw_tool_call("get_attribute", json.dumps({"record_id": "INV-Q7P2K", "attribute": "on_hand"}))
        return reply(content="340" if n % 3 == 0 else f"{n}")

    with FakeModelServer(respond) as server:
        bench.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            retries = 0
            timeout_s = 5
            temperature = 0.8
        """)
        args = ["cases/tier_A/A1.toml", "--model", "fake", "--instances", "i0,i1", "--agentfloor-runs", "4", *NO_REPORT]
        recording = bench.runpytest(*args, "--agentfloor-record")  # the session's probe is recorded too, outside any item
        recording.stdout.fnmatch_lines(["*probe fake: tool_capable*"])
        recorded = runs(bench.path)
        n_requests = len(server.requests)
        replay = bench.runpytest(*args, "--agentfloor-replay")
        assert len(server.requests) == n_requests
    replayed = runs(bench.path)
    assert len(recorded) == len(replayed) == 5 * 2 * 4
    assert "errors" not in replay.parseoutcomes()

    def by_item(records: list[dict]) -> dict:
        return {(r["variant"], r["instance"], r["run"]): (r["passed"], r["trajectory"]["final_answer"])
                for r in records}

    assert by_item(replayed) == by_item(recorded)
    assert len({answer for _, answer in by_item(recorded).values()}) > 10  # the runs really differed


def test_bad_cassette_lines_are_named_once_and_skipped(bench: pytest.Pytester) -> None:
    def respond(body: dict[str, Any]):
        if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
            return raw_tool_call("get_attribute", json.dumps({"record_id": "INV-Q7P2K", "attribute": "on_hand"}))
        return reply(content="340")

    with FakeModelServer(respond) as server:
        bench.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            retries = 0
            timeout_s = 5
        """)
        # lines are damaged by position below, so the cassette must be written in item order
        args = ["cases/tier_A/A1.toml", "--model", "fake", "--instances", "i0", "--no-probe",
                "--agentfloor-concurrency", "1", *NO_REPORT]
        bench.runpytest(*args, "--agentfloor-record").assert_outcomes(passed=5)
    path = bench.path / "reports" / "cassettes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 10
    lines[0] = lines[0][:20] + b"\xff" + lines[0][20:]  # v0, turn 0: not UTF-8
    entry = json.loads(lines[3])
    entry["reply"]["tool_calls"] = "lookup everything"  # v1, turn 1: a reply of the wrong shape
    lines[3] = json.dumps(entry).encode() + b"\n"
    lines[5] = b"[1,2,3]\n"  # v2, turn 1
    path.write_bytes(b"".join(lines))
    result = bench.runpytest(*args, "--agentfloor-replay")
    result.assert_outcomes(passed=2, errors=3)  # the three items whose entries were damaged miss
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert out.count("cassettes.jsonl:1: not UTF-8") == 1
    assert out.count("cassettes.jsonl:4: unusable cassette entry ('reply.tool_calls' must be a list") == 1
    assert out.count("cassettes.jsonl:6: a JSON array, not a record object") == 1
    assert len(runs(bench.path)) == 5  # every item has its record, the misses as infrastructure errors
    index, problems = read_cassette(path)
    assert len(index) == 7 and len(problems) == 3


# -- items 12 and 13: --baseline and --report-dir checked before anything runs ----------------------
@pytest.mark.parametrize("name, content, message", [
    ("base", None, "--agentfloor-baseline base: is a directory, not a file"),
    ("base.jsonl", b"garbage\n", "--agentfloor-baseline base.jsonl: no usable baseline run"),
    ("base.jsonl", b'{"model": "m"}\n', "no usable baseline run (each needs model, task, tier, variant, instance, "
                                       "run, passed); run 1: no 'task' field"),
    ("base.json", b'{"runs": 3}', "this summary.json has no per-run outcomes"),
    ("base.json", b"\xff{", "--agentfloor-baseline base.json: not UTF-8"),
    ("base.json", b"{nope", "--agentfloor-baseline base.json: not valid JSON"),
])
def test_a_bad_baseline_is_a_usage_error_before_any_item(bench: pytest.Pytester, name: str, content: bytes | None,
                                                         message: str) -> None:
    if content is None:
        (bench.path / name).mkdir()
    else:
        (bench.path / name).write_bytes(content)
    result = bench.runpytest("cases/tier_A", "--model", "oracle", "--agentfloor-baseline", name, *NO_REPORT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert not (bench.path / "reports" / "runs.jsonl").exists()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_report_dir_that_is_a_file_is_one_usage_error(bench: pytest.Pytester) -> None:
    (bench.path / "reports").write_text("not a directory")
    result = bench.runpytest("cases/tier_A", "--model", "oracle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.str().count("ERROR:") == 1
    result.stderr.fnmatch_lines(["ERROR: --agentfloor-report-dir reports: is a file, not a directory*"])
    result = bench.runpytest("cases/tier_A", "--model", "oracle", "--agentfloor-report-dir", "reports/sub")
    result.stderr.fnmatch_lines(["ERROR: --agentfloor-report-dir reports/sub: cannot be created: * is not a directory*"])


def test_regrade_keeps_records_it_cannot_read(bench: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_agentfloor.regrade import main as regrade_main

    bench.runpytest("cases/tier_A/A1.toml", "--model", "oracle", "--variants", "v0", "--instances", "i0", *NO_REPORT)
    path = bench.path / "reports" / "runs.jsonl"
    good = path.read_bytes()
    broken = json.loads(good)
    broken["trajectory"] = {"turns": "many"}
    broken["run"] = 1  # another run: a repeat of the good one would replace it (the duplicate rule)
    odd = {**json.loads(good), "task": ["A1"]}
    path.write_bytes(good + json.dumps(broken).encode() + b"\n" + json.dumps(odd).encode() + b"\n[1]\n")
    assert regrade_main([str(path), "--cases", str(bench.path / "cases"),
                         "--write", str(bench.path / "out.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "cannot be re-graded (ValidationError" in captured.err and "runs.jsonl:4: a JSON array" in captured.err
    assert "no case file for task ['A1']" in captured.err and "Traceback" not in captured.err
    assert len(read_records(bench.path / "out.jsonl")[0]) == 3  # every readable record kept
