"""capture replay: a captured session sent to a candidate (loopback fake OpenAI and Ollama servers), its
replies graded by the captured cases and recorded as runs that `report` reads; errors as infrastructure
errors; the candidate's key never stored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.capture.cases import main as cases_main
from pytest_agentfloor.capture.command import main as capture_main
from pytest_agentfloor.capture.review import main as review_main
from pytest_agentfloor.report.cli import main as report_main
from pytest_agentfloor.results import read_records
from tests.capture.helpers import records, running_proxy
from tests.capture.test_agent_loop import ROUTER_PROMPT, ollama_agent, openai_agent, upstream
from tests.fakeserver import FakeModelServer, drop, reply, status

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "captured"
KEY = "sk-candidate-secret-0123456789abcdef"


def weak_router(body: dict[str, Any]) -> Any:
    """A candidate that routes every turn to weather (wrong on the joke) and is production elsewhere."""
    if body["messages"][0]["content"] == ROUTER_PROMPT:
        return reply("weather")
    return upstream(body)


def order(recs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(system prompt, last message's content) of each captured call, in capture order."""
    recs = sorted(recs, key=lambda r: r["time"])
    return [(r["request"]["messages"][0]["content"], str(r["request"]["messages"][-1].get("content")))
            for r in recs]


def runs_of(path: Path) -> list[dict[str, Any]]:
    recs, problems = read_records(path)
    assert problems == []
    return recs


def test_openai_session_replayed_to_a_candidate_is_graded_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out, runs = tmp_path / "captured", tmp_path / "runs.jsonl"
    with FakeModelServer(upstream) as up, running_proxy(up.url, out) as (url, _):
        openai_agent(url, ["Weather in Paris?", "Tell me a joke", "Weather in Oslo?"], stream=False)
        openai_agent(url, ["Weather in Lima?"], stream=True)
    captured = records(out)
    assert len(captured) == 4 + 3 * 2
    assert cases_main(["--from", str(out)]) == 0
    assert review_main([str(out), "--accept-all", "router"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("CANDIDATE_KEY", KEY)
    with FakeModelServer(weak_router) as cand:
        rc = capture_main(["--replay-to", cand.url, "--from", str(out), "--model", "small-x", "--name", "small",
                           "--out", str(runs), "--api-key-env", "CANDIDATE_KEY"])
        received = list(cand.received)
    assert rc == 0
    # every stored request, in capture order, on its own wire, with the model replaced and the key as a bearer
    sent = [(b.body["messages"][0]["content"], str(b.body["messages"][-1].get("content"))) for b in received]
    assert sent == order(captured)
    assert {b.path for b in received} == {"/v1/chat/completions"}
    assert {b.body["model"] for b in received} == {"small-x"}
    assert {b.headers["authorization"] for b in received} == {f"Bearer {KEY}"}
    assert sum(bool(b.body.get("stream")) for b in received) == 2  # Lima's two weather calls streamed, as captured
    assert all(b.body["max_tokens"] == 5 for b in received if b.body["messages"][0]["content"] == ROUTER_PROMPT)

    recs = runs_of(runs)
    assert len(recs) == 10 and {r["model"] for r in recs} == {"small"} and {r["kind"] for r in recs} == {"callsite"}
    assert not any(r["infra_error"] for r in recs)
    failed = [r for r in recs if not r["passed"]]
    assert [r["trajectory"]["messages"][-1]["content"] for r in failed] == ["Tell me a joke"]
    assert failed[0]["facets"]["site"] == "router" and failed[0]["first_unmet"] is not None
    assert failed[0]["terminal_flag"] == "wrong_conclusion"  # the model's failure, not an infrastructure error
    assert all(r["config"]["api_key_env"] == "CANDIDATE_KEY" for r in recs)
    assert KEY.encode() not in runs.read_bytes()
    printed = capsys.readouterr().out
    router = next(line for line in printed.splitlines() if line.startswith("router "))
    assert "3/4 75%" in router  # accepted references: the joke went to weather
    weather = next(line for line in printed.splitlines() if line.startswith("weather "))
    assert "6/6 100%" in weather and weather.split()[1] == "6"

    assert report_main([str(runs), "--out", str(tmp_path / "rep")]) == 0
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())["callsite"]
    assert summary["provisional"] == 6  # weather's cases were not reviewed
    assert summary["sites"] == ["router"]
    router_acc = summary["accuracy"]["router"]["small"]
    assert router_acc["n_cases"] == 4 and router_acc["passed"] == 3 and router_acc["n_infra"] == 0


def test_ollama_session_replayed_on_the_ollama_wire(tmp_path: Path) -> None:
    out, runs = tmp_path / "captured", tmp_path / "runs.jsonl"
    with FakeModelServer(upstream) as up, running_proxy(up.url, out) as (url, _):
        ollama_agent(url, ["Weather in Lima?", "Weather in Paris?"])
    assert cases_main(["--from", str(out)]) == 0
    assert review_main([str(out), "--accept-all", "all"]) == 0
    with FakeModelServer(upstream) as cand:
        assert capture_main(["replay", "--from", str(out), "--to", cand.url, "--out", str(runs)]) == 0
        received = list(cand.received)
    assert len(received) == 4 and {b.path for b in received} == {"/api/chat"}
    assert {b.body["model"] for b in received} == {"qwen-x"}  # no --model: the captured request's
    assert all(b.body["stream"] is False for b in received)
    assert all("authorization" not in b.headers for b in received)
    recs = runs_of(runs)
    assert len(recs) == 4 and all(r["passed"] for r in recs)
    assert {r["config"]["provider"] for r in recs} == {"ollama"}
    assert report_main([str(runs), "--out", str(tmp_path / "rep")]) == 0


@pytest.fixture
def example(tmp_path: Path) -> Path:
    out = tmp_path / "captured"
    shutil.copytree(EXAMPLE, out)
    return out


def test_upstream_errors_are_infrastructure_errors_and_the_key_is_struck_out(
        example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs.jsonl"
    monkeypatch.setenv("CANDIDATE_KEY", KEY)
    with FakeModelServer(upstream) as cand:
        cand.push(status(500, "overloaded"), drop(), status(401, f"Incorrect API key provided: {KEY}"))
        assert capture_main(["replay", "--from", str(example), "--to", cand.url, "--out", str(runs),
                             "--api-key-env", "CANDIDATE_KEY"]) == 0
    recs = runs_of(runs)
    assert len(recs) == 13
    first = recs[:3]
    assert all(r["infra_error"] and not r["passed"] and r["failure_mode"] is None for r in first)
    assert [r["termination"] for r in first] == ["provider_error"] * 3
    assert "HTTP 500: overloaded" in first[0]["error"] and "HTTP 401" in first[2]["error"]
    assert "[REDACTED]" in first[2]["error"]
    assert not any(r["infra_error"] for r in recs[3:])
    assert KEY.encode() not in runs.read_bytes()
    assert "3 infrastructure error(s)" in capsys.readouterr().out


def test_an_unreachable_candidate_is_infrastructure_errors_and_exit_1(example: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs.jsonl"
    assert capture_main(["replay", "--from", str(example), "--to", "http://127.0.0.1:9", "--out", str(runs)]) == 1
    recs = runs_of(runs)
    assert len(recs) == 13 and all(r["infra_error"] and not r["passed"] for r in recs)
    assert "http://127.0.0.1:9 answered none of the 13 call(s)" in capsys.readouterr().err


def test_replay_needs_tables_and_a_set_key(tmp_path: Path, example: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(example / "router.jsonl", bare)
    assert capture_main(["replay", "--from", str(bare), "--to", "http://127.0.0.1:9"]) == 2
    assert "capture cases --from" in capsys.readouterr().err
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(SystemExit):
        capture_main(["replay", "--from", str(example), "--to", "http://127.0.0.1:9",
                      "--api-key-env", "NO_SUCH_KEY_VAR"])
    assert "--api-key-env NO_SUCH_KEY_VAR: the variable is not set" in capsys.readouterr().err


def test_dropped_cases_are_not_replayed_and_the_nth_call_is_run_n(example: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import csv
    import io

    sheet = tmp_path / "sheet.csv"
    assert review_main([str(example), "--export", str(sheet)]) == 0
    rows = list(csv.DictReader(io.StringIO(sheet.read_text())))
    joke = next(r for r in rows if r["prompt"] == "Tell me a joke")
    for r in rows:
        r["decision"] = "drop" if r is joke else "accept"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    sheet.write_text(buf.getvalue())
    assert review_main([str(example), "--import", str(sheet)]) == 0
    runs = tmp_path / "runs.jsonl"
    with FakeModelServer(upstream) as cand:
        assert capture_main(["replay", "--from", str(example), "--to", cand.url, "--out", str(runs)]) == 0
    recs = runs_of(runs)
    assert len(recs) == 12 and "not replayed: 1 dropped in review" in capsys.readouterr().out
    paris = [r for r in recs if r["facets"]["site"] == "router"
             and r["trajectory"]["messages"][-1]["content"] == "Weather in Paris?"]
    assert [r["run"] for r in paris] == [0, 1]  # the same request twice: two runs of one case
    assert len({r["nodeid"] for r in paris}) == 2


@pytest.mark.parametrize("verb", [[], ["replay"]])
def test_every_option_of_the_proxy_and_replay_is_in_the_capture_docs(verb: list[str],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import re

    with pytest.raises(SystemExit):
        capture_main([*verb, "--help"])
    options = set(re.findall(r"(--[a-z][a-z-]+)", capsys.readouterr().out)) - {"--help"}
    page = (Path(__file__).resolve().parents[2] / "docs" / "capture.md").read_text()
    assert options and not sorted(o for o in options if not re.search(rf"{o}(?![a-z-])", page))


def test_start_runs_the_candidate_for_the_replay_only(example: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import socket
    import sys

    server = Path(__file__).resolve().parents[2] / "docs" / "examples" / "candidate_server.py"
    runs = tmp_path / "runs.jsonl"
    assert capture_main(["replay", "--from", str(example), "--to", "http://127.0.0.1:{port}", "--out", str(runs),
                         "--start", f"{sys.executable} {server} {{port}}"]) == 0
    recs = runs_of(runs)
    assert len(recs) == 13 and not any(r["infra_error"] for r in recs)
    assert sorted(r["passed"] for r in recs).count(False) == 2  # the joke, and Oslo worded differently
    port = int(capsys.readouterr().out.split("-> http://127.0.0.1:", 1)[1].split()[0])
    with pytest.raises(OSError):  # stopped with the replay
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert capture_main(["replay", "--from", str(example), "--to", "http://127.0.0.1:{port}",
                         "--start", f"{sys.executable} -c \"import sys; sys.exit('no model file')\""]) == 2
    err = capsys.readouterr().err
    assert "exited with 1 before 127.0.0.1:" in err and "no model file" in err


def test_compare_pairs_two_replays_of_one_session(example: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from pytest_agentfloor.compare import main as compare_main

    server = Path(__file__).resolve().parents[2] / "docs" / "examples" / "candidate_server.py"
    prod, small = tmp_path / "prod.jsonl", tmp_path / "small.jsonl"
    with FakeModelServer(upstream) as up:
        assert capture_main(["replay", "--from", str(example), "--to", up.url, "--name", "prod", "--out", str(prod)]) == 0
    assert capture_main(["replay", "--from", str(example), "--to", "http://127.0.0.1:{port}", "--name", "small",
                         "--out", str(small), "--start", f"{sys.executable} {server} {{port}}"]) == 0
    capsys.readouterr()
    assert compare_main([str(prod), str(small)]) in (0, 1)
    out = capsys.readouterr().out
    assert "callsite     13" in out and "outcome changed on 2 item(s): 2 passed before and fail now" in out
