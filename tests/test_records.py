"""Run records: whole lines under concurrent writers, and no credentials in what is written.

The concurrency test uses real processes (sys.executable) appending to one file, as xdist
workers do; records are larger than a pipe/page-sized write so that an unlocked or chunked
writer would interleave.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentfloor.config import ModelConfig, load_models, strip_credentials
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.grading import grade
from pytest_agentfloor.providers.scripted import ScriptedProvider
from pytest_agentfloor.results import RunLog, build_record, properties, read_records
from pytest_agentfloor.suite.loader import load_case, resolve

REPO = Path(__file__).resolve().parents[1]
WRITERS, RECORDS, PAYLOAD = 4, 300, 20_000

WRITER = """
import sys
from pathlib import Path
from pytest_agentfloor.results import RunLog
path, writer, n, size = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
go = Path(sys.argv[5])
Path(f"{go}.ready{writer}").touch()
while not go.exists():  # start together, so the writes overlap
    pass
log = RunLog(path)
for seq in range(n):
    log.append({"writer": writer, "seq": seq, "payload": chr(97 + writer) * size})
log.close()
"""


def test_concurrent_writers_leave_only_whole_lines(tmp_path: Path) -> None:
    path, go = tmp_path / "runs.jsonl", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w), str(RECORDS), str(PAYLOAD), str(go)])
             for w in range(WRITERS)]
    deadline = time.monotonic() + 120
    while not all(Path(f"{go}.ready{w}").exists() for w in range(WRITERS)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a writer did not start"
        time.sleep(0.01)
    go.touch()
    assert [p.wait(timeout=120) for p in procs] == [0] * WRITERS
    raw = path.read_bytes().split(b"\n")
    assert raw[-1] == b""  # the file ends with a newline
    records, torn = [], []
    for n, line in enumerate(raw[:-1], 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            torn.append(n)
    assert torn == [], f"{len(torn)} of {len(raw) - 1} lines are not whole records"
    assert len(records) == WRITERS * RECORDS
    assert sorted((r["writer"], r["seq"]) for r in records) == [(w, s) for w in range(WRITERS) for s in range(RECORDS)]
    assert all(r["payload"] == chr(97 + r["writer"]) * PAYLOAD for r in records)
    # each writer's own records stay in the order it wrote them
    for w in range(WRITERS):
        assert [r["seq"] for r in records if r["writer"] == w] == list(range(RECORDS))
    again, problems = read_records(path)
    assert problems == [] and len(again) == WRITERS * RECORDS


def test_read_records_reports_a_torn_line_and_a_non_json_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": \n{"c": 3}\n{"d": 4')
    records, problems = read_records(path)
    assert records == [{"a": 1}, {"c": 3}]
    assert problems == [f"{path}:2: not a JSON record, ignored", f"{path}:4: truncated last line ignored"]
    assert read_records(tmp_path / "absent.jsonl") == ([], [])


# -- credentials ---------------------------------------------------------------------------------
SECRET_USER, SECRET_PW, SECRET_TOKEN = "alice-d0-not-leak", "pw-d0-not-leak-77", "tok-d0-not-leak-99"


@pytest.mark.parametrize("url, expected", [
    (f"http://{SECRET_USER}:{SECRET_PW}@127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    (f"https://{SECRET_USER}@api.example.com/v1", "https://api.example.com/v1"),
    (f"https://{SECRET_USER}:{SECRET_PW}@[::1]:443/v1", "https://[::1]:443/v1"),
    (f"http://localhost:11434/?key={SECRET_TOKEN}#frag", "http://localhost:11434/"),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    (f"http://{SECRET_USER}:p@ss{SECRET_PW}@h.example/v1", "http://h.example/v1"),  # "@" in the password
    ("http://@h.example/v1", "http://h.example/v1"),  # empty user information
    (f"http://:{SECRET_PW}@h.example/v1", "http://h.example/v1"),  # a password without a user
])
def test_strip_credentials(url: str, expected: str) -> None:
    assert strip_credentials(url) == expected


def test_a_credentialed_base_url_never_reaches_a_record(tmp_path: Path) -> None:
    """What the run-record writer writes for a model whose base_url embeds user, password and token."""
    models = tmp_path / "models.toml"
    models.write_text(f"""
        [models.remote]
        provider = "openai"
        model = "m"
        base_url = "https://{SECRET_USER}:{SECRET_PW}@api.example.com:8443/v1?api-key={SECRET_TOKEN}"
        api_key_env = "SOME_KEY_VARIABLE"
    """.replace("\n        ", "\n"))
    config = load_models(models)["remote"]
    public = config.public()
    assert public["base_url"] == "https://api.example.com:8443/v1"
    assert public["api_key_env"] == "SOME_KEY_VARIABLE"  # the variable's name, never a value

    case, digest = load_case(REPO / "cases" / "tier_B" / "B1.toml")
    resolved = resolve(case, "v0", "i0", digest)
    # the episode is played by the oracle; the record is written under the credentialed configuration
    oracle = ScriptedProvider(ModelConfig(name="oracle", provider="scripted", policy="oracle"))
    traj = run_episode(resolved, oracle, model="remote")
    record = build_record(resolved, traj, grade(resolved, traj), config, "cases/tier_B/B1.toml::B1[v0-i0-r0-remote]")
    log = RunLog(tmp_path / "runs.jsonl")
    log.append(record)
    log.close()
    written = (tmp_path / "runs.jsonl").read_text()
    for secret in (SECRET_USER, SECRET_PW, SECRET_TOKEN):
        assert secret not in written
        assert secret not in json.dumps(properties(record))
    assert json.loads(written)["config"]["base_url"] == "https://api.example.com:8443/v1"


def test_record_fields_come_from_case_trajectory_grade_and_config() -> None:
    case, digest = load_case(REPO / "cases" / "tier_B" / "B1.toml")
    resolved = resolve(case, "v1", "i0", digest)
    config = ModelConfig(name="priced", provider="scripted", policy="oracle",
                         pricing={"input_per_mtok": 2.0, "output_per_mtok": 4.0, "hourly_usd": 36.0})
    traj = run_episode(resolved, ScriptedProvider(config), model="priced", run=3)
    for turn in traj.turns:
        turn.tokens_in, turn.tokens_out, turn.busy_s = 0, 0, 0.0
    traj.turns[0].tokens_in, traj.turns[0].tokens_out = 1000, 500
    traj.turns[0].busy_s = 10.0  # the server's processing time: what hourly pricing charges
    rec = build_record(resolved, traj, grade(resolved, traj), config, "node")
    assert (rec["model"], rec["task"], rec["tier"], rec["variant"], rec["instance"], rec["run"]) == \
           ("priced", "B1", "B", "v1", "i0", 3)
    assert rec["passed"] is True and rec["infra_error"] is False
    assert rec["first_unmet"] is None and rec["failure_mode"] is None and rec["terminal_flag"] is None
    assert (rec["turns"], rec["calls"]) == (len(traj.turns), len(traj.calls))
    assert (rec["tokens_in"], rec["tokens_out"]) == (1000, 500)
    # 1000 x 2 / 1e6 + 500 x 4 / 1e6 + 36 $/h x 10 s busy = 0.002 + 0.002 + 0.1
    assert rec["cost_usd"] == pytest.approx(0.104)
    assert rec["case_hash"] == digest and rec["nodeid"] == "node"
    assert set(rec["obligations"]) and all(rec["obligations"].values())
    assert dict(properties(rec))["model"] == "priced" and dict(properties(rec))["task"] == "B1"


def test_an_infrastructure_error_is_neither_a_pass_nor_a_graded_failure() -> None:
    case, digest = load_case(REPO / "cases" / "tier_B" / "B1.toml")
    resolved = resolve(case, "v0", "i0", digest)
    config = ModelConfig(name="oracle", provider="scripted", policy="oracle")
    traj = run_episode(resolved, ScriptedProvider(config), model="oracle")
    traj.termination = "provider_error"
    rec = build_record(resolved, traj, grade(resolved, traj), config, "node")
    assert rec["infra_error"] is True and rec["passed"] is False
    assert rec["failure_mode"] is None and rec["first_unmet"] is None and rec["terminal_flag"] is None


# -- the record and the writer, field by field -----------------------------------------------------
def b1_record(policy: str, config: ModelConfig | None = None) -> tuple[dict, object]:
    case, digest = load_case(REPO / "cases" / "tier_B" / "B1.toml")
    resolved = resolve(case, "v0", "i0", digest)
    config = config or ModelConfig(name=policy, provider="scripted", policy=policy)
    traj = run_episode(resolved, ScriptedProvider(ModelConfig(name="p", provider="scripted", policy=policy)),
                       model=config.name)
    return resolved, traj


def test_a_graded_failure_carries_its_obligation_mode_and_flag() -> None:
    from pytest_agentfloor import __version__

    resolved, traj = b1_record("resign")
    config = ModelConfig(name="resign", provider="scripted", policy="resign")
    g = grade(resolved, traj)
    assert not g.passed
    rec = build_record(resolved, traj, g, config, "node")
    assert rec["passed"] is False and rec["infra_error"] is False
    assert rec["first_unmet"] == g.first_unmet.code and rec["first_unmet"] is not None
    assert rec["failure_mode"] == g.failure_mode and rec["failure_mode"] is not None
    assert rec["terminal_flag"] == g.terminal_flag
    assert rec["obligations"] == {v.code: v.ok for v in g.verdicts} and not all(rec["obligations"].values())
    assert (rec["schema"], rec["plugin_version"], rec["error"]) == (1, __version__, traj.error)
    assert rec["trajectory"] == json.loads(traj.model_dump_json())
    assert rec["config"] == config.public()
    # without a grade (the grader raised) the record says nothing about obligations
    bare = build_record(resolved, traj, None, config, "node")
    assert (bare["passed"], bare["first_unmet"], bare["failure_mode"], bare["terminal_flag"], bare["obligations"]) == \
           (False, None, None, None, {})


def test_times_and_cost_are_rounded_as_documented() -> None:
    resolved, traj = b1_record("oracle")
    for turn in traj.turns:
        turn.latency_s, turn.busy_s, turn.tokens_in, turn.tokens_out = 0.0, 0.0, 0, 0
    traj.turns[0].latency_s = 0.123456789
    traj.turns[0].busy_s = 2.718281828
    traj.turns[0].tokens_in = 1_234_567
    traj.wall_s = 3.14159265358
    config = ModelConfig(name="c", provider="scripted", policy="oracle", pricing={"input_per_mtok": 0.123456789})
    rec = build_record(resolved, traj, grade(resolved, traj), config, "node")
    assert (rec["latency_s"], rec["busy_s"], rec["wall_s"]) == (0.123457, 2.718282, 3.141593)
    assert rec["cost_usd"] == 0.1524156776  # 1.234567 Mtok x 0.123456789 $/Mtok = 0.152415677625363 exactly


def test_the_writer_writes_compact_json_lines_and_stringifies_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "runs.jsonl"  # parents are created
    log = RunLog(path)
    log.append({"b": [1, 2], "a": {"x": None}})
    log.append({"where": tmp_path})  # not JSON: written as its str()
    log.close()
    assert path.read_text() == '{"b":[1,2],"a":{"x":null}}\n' + json.dumps({"where": str(tmp_path)},
                                                                          separators=(",", ":")) + "\n"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o644 & ~umask


def test_close_releases_the_file_and_a_later_append_reopens_it(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "runs.jsonl")
    log.append({"n": 1})
    fd = log._fd
    log.close()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    log.close()  # twice is harmless
    log.append({"n": 2})
    log.close()
    assert read_records(tmp_path / "runs.jsonl") == ([{"n": 1}, {"n": 2}], [])
