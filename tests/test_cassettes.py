"""corpus.py in-process: cassette keys and entries, record and replay, the resume index.

Cassette keys and resume fingerprints are stored on disk, so their derivation is a file format:
the expected keys here are hashes of JSON text written out by hand, not values computed by the
functions under test. The end-to-end behaviour (a real pytest run recording, replaying,
resuming) is in test_corpus.py and test_resume_keys.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.corpus import (CassetteStore, RecordingProvider, ReplayProvider, completed_records,
                                      config_fingerprint, read_cassette, record_key, request_key)
from pytest_agentfloor.providers.base import ProviderError, Reply, ToolCallOut
from pytest_agentfloor.results import PROPERTY_FIELDS
from tests.test_episode import b1

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"}, {"role": "tool", "content": "r"},
            {"role": "assistant", "content": "b"}]
TOOLS = [{"name": "t"}]
MSG_JSON = ('[{"content":"s","role":"system"},{"content":"q","role":"user"},{"content":"a","role":"assistant"},'
            '{"content":"r","role":"tool"},{"content":"b","role":"assistant"}]')


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def openai(**kw: Any) -> ModelConfig:
    return ModelConfig(name="remote", provider="openai", model="tiny", base_url="http://me:secret@h:8/v1?key=k",
                       temperature=0.5, seed=3, max_tokens=64, **kw)


# -- the cassette key -----------------------------------------------------------------------------
def test_the_key_of_a_request_is_the_hash_of_its_documented_identity() -> None:
    # turn 2: two assistant messages so far; the base URL without credentials or query
    expected = sha('{"base_url":"http://h:8/v1","item":["B1","v0","i0",1],"messages":' + MSG_JSON
                   + ',"model":"tiny","provider":"openai","sampling":[0.5,3,64,null,"default"],'
                   '"tools":[{"name":"t"}],"turn":2}')
    assert request_key(openai(), MESSAGES, TOOLS, ("B1", "v0", "i0", 1)) == expected


def test_the_key_adds_the_reasoning_effort_only_when_set() -> None:
    expected = sha('{"base_url":"http://h:8/v1","item":null,"messages":[],"model":"tiny","provider":"openai",'
                   '"sampling":[0.5,3,64,true,"structured","low"],"tools":[],"turn":0}')
    config = openai(reasoning_effort="low", think=True, system_prompt="structured")
    assert request_key(config, [], []) == expected


def test_a_scripted_models_key_names_its_policy_and_no_url() -> None:
    config = ModelConfig(name="o", provider="scripted", policy="oracle")
    expected = sha('{"base_url":null,"item":null,"messages":[],"model":"oracle","provider":"scripted",'
                   '"sampling":[0.0,null,1024,null,"default"],"tools":[],"turn":0}')
    assert request_key(config, [], []) == expected


# -- cassette entries -----------------------------------------------------------------------------
def write(path: Path, *entries: Any) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return path


def entry(key: str = "k", **reply: Any) -> dict[str, Any]:
    return {"key": key, "model": "m", "reply": {"content": "hi", **reply}}


def test_a_stored_reply_reads_back_whole(tmp_path: Path) -> None:
    reply = {"content": None, "tool_calls": [{"id": "1", "name": "search_records", "arguments": "{}"}],
             "finish_reason": "tool_calls", "tokens_in": 5, "tokens_out": 2, "latency_s": 0.5, "busy_s": None,
             "reasoning_tokens": 1}
    index, problems = read_cassette(write(tmp_path / "c.jsonl", {"key": "k", "reply": reply}))
    assert problems == []
    assert index == {"k": Reply(content=None, tool_calls=[ToolCallOut(id="1", name="search_records", arguments="{}")],
                                finish_reason="tool_calls", tokens_in=5, tokens_out=2, latency_s=0.5, busy_s=None,
                                reasoning_tokens=1)}


def test_a_missing_cassette_is_empty(tmp_path: Path) -> None:
    assert read_cassette(tmp_path / "none.jsonl") == ({}, [])


@pytest.mark.parametrize("bad,why", [
    ({"model": "m", "reply": {"content": "x"}}, "no 'key' string"),
    ({"key": 7, "reply": {"content": "x"}}, "no 'key' string"),
    ({"key": "k", "reply": "x"}, "'reply' is not an object"),
    ({"key": "k"}, "'reply' is not an object"),
    (entry(color="red"), "'reply' has unknown field(s) ['color']"),
    (entry(tool_calls={"id": "1"}), "'reply.tool_calls' must be a list of {id, name, arguments} strings"),
    (entry(tool_calls=["call"]), "'reply.tool_calls' must be a list of {id, name, arguments} strings"),
    (entry(tool_calls=[{"id": "1", "name": "t"}]), "'reply.tool_calls' must be a list of {id, name, arguments} strings"),
    (entry(tool_calls=[{"id": "1", "name": "t", "arguments": {}}]),
     "'reply.tool_calls' must be a list of {id, name, arguments} strings"),
    (entry(content=3), "'reply.content' must be a string or null"),
    (entry(finish_reason=None), "'reply.finish_reason' must be a string"),
    (entry(finish_reason=1), "'reply.finish_reason' must be a string"),
    (entry(tokens_in=-1), "'reply.tokens_in' must be a non-negative number"),
    (entry(tokens_in=True), "'reply.tokens_in' must be a non-negative number"),
    (entry(tool_calls=[], tokens_out=-2), "'reply.tokens_out' must be a non-negative number"),  # checked after the calls
    (entry(latency_s="1"), "'reply.latency_s' must be a non-negative number"),
    ('{"key": "k", "reply": {"content": "x", "latency_s": NaN}}', "'reply.latency_s' must be a non-negative number"),
])
def test_an_unusable_entry_is_named_and_skipped(tmp_path: Path, bad: Any, why: str) -> None:
    path = write(tmp_path / "c.jsonl", entry("good"), bad)
    index, problems = read_cassette(path)
    assert list(index) == ["good"]
    assert problems == [f"{path}:2: unusable cassette entry ({why}), line ignored"]


def test_usable_edge_values(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", entry("a", content=None, tokens_in=0, busy_s=None, latency_s=0.25),
                 "", entry("b", tool_calls=[]))  # a blank line is no entry and no problem
    index, problems = read_cassette(path)
    assert problems == [] and index["a"] == Reply(content=None, latency_s=0.25) and index["b"] == Reply(content="hi")


def test_bad_lines_are_noted_up_to_five_then_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", *["[1]"] * 7, entry("k"))
    index, problems = read_cassette(path)
    assert list(index) == ["k"]
    assert problems == [f"{path}:{n}: a JSON array, not a record object, ignored" for n in range(1, 6)] + [
        f"{path}: 7 bad lines skipped in all (2 more not shown)"]
    path = write(tmp_path / "d.jsonl", *["[1]"] * 5)
    assert len(read_cassette(path)[1]) == 5  # five notes and no count line


def test_the_last_entry_for_a_key_wins(tmp_path: Path) -> None:
    index, _ = read_cassette(write(tmp_path / "c.jsonl", entry("k", content="old"), entry("k", content="new")))
    assert index["k"].content == "new"


# -- record and replay ----------------------------------------------------------------------------
class Live:
    def __init__(self, config: ModelConfig, *replies: Reply):
        self.config, self.replies, self.closed, self.cases, self.sent = config, list(replies), False, [], []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Reply:
        self.cases.append(case)
        self.sent.append((messages, tools))
        return self.replies.pop(0)

    def close(self) -> None:
        self.closed = True


def test_recording_stores_each_reply_under_its_item_and_turn(tmp_path: Path) -> None:
    config = openai()
    case = b1()
    store = CassetteStore(tmp_path / "cassettes.jsonl")
    live = Live(config, Reply(content="one", tokens_in=3), Reply(content="two"))
    rec = RecordingProvider(live, store)
    assert rec.config is config and rec.at_run(4).config is config
    got = rec.at_run(4).complete(MESSAGES, TOOLS, case=case)
    assert got == Reply(content="one", tokens_in=3) and live.cases == [case] and live.sent == [(MESSAGES, TOOLS)]
    rec.complete([], [], case=None)  # the session's probe: no item
    rec.close()
    store.close()
    assert live.closed
    first, probe = (json.loads(x) for x in (tmp_path / "cassettes.jsonl").read_text().splitlines())
    assert first == {"key": request_key(config, MESSAGES, TOOLS, ("B1", "v0", "i0", 4)), "model": "remote",
                     "task": "B1", "variant": "v0", "instance": "i0", "run": 4, "turn": 2,
                     "reply": {"content": "one", "tool_calls": [], "finish_reason": "stop", "tokens_in": 3,
                               "tokens_out": 0, "latency_s": 0.0, "busy_s": None, "reasoning_tokens": None}}
    assert probe["key"] == request_key(config, [], []) and set(probe) == {"key", "model", "reply"}


def test_replay_serves_what_was_recorded_for_the_same_run_only(tmp_path: Path) -> None:
    config = openai()
    store = CassetteStore(tmp_path / "cassettes.jsonl")
    RecordingProvider(Live(config, Reply(content="run 0"), Reply(content="run 1")), store).at_run(0).complete(
        MESSAGES, TOOLS, case=b1())
    RecordingProvider(Live(config, Reply(content="run 1")), store).at_run(1).complete(MESSAGES, TOOLS, case=b1())
    store.close()
    replay = ReplayProvider(config, CassetteStore(tmp_path / "cassettes.jsonl"))
    assert replay.at_run(1).complete(MESSAGES, TOOLS, case=b1()).content == "run 1"
    assert replay.at_run(0).complete(MESSAGES, TOOLS, case=b1()).content == "run 0"
    with pytest.raises(ProviderError) as miss:
        replay.at_run(2).complete(MESSAGES, TOOLS, case=b1())
    key = request_key(config, MESSAGES, TOOLS, ("B1", "v0", "i0", 2))
    path = tmp_path / "cassettes.jsonl"
    assert str(miss.value) == (f"replay:{path}: no recorded response for model 'remote', case B1 v0-i0-r2 "
                               f"turn 2 (key {key[:12]})")
    assert miss.value.transient is False  # a miss is final: retrying cannot find a reply


def test_a_replay_miss_names_the_probe_and_the_unusable_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "cassettes.jsonl", "not json", "[]")
    replay = ReplayProvider(openai(), CassetteStore(path))
    with pytest.raises(ProviderError) as miss:
        replay.complete([], [], case=None)
    key = request_key(openai(), [], [])
    assert miss.value.cause == (f"no recorded response for model 'remote', the probe turn 0 (key {key[:12]}); "
                                "2 note(s) on unusable cassette lines")
    assert replay.store.problems == [f"{path}:1: not a JSON record, ignored",
                                     f"{path}:2: a JSON array, not a record object, ignored"]


def test_the_store_reads_its_file_once(tmp_path: Path) -> None:
    path = write(tmp_path / "cassettes.jsonl", entry("k", content="first"))
    store = CassetteStore(path)
    assert store.problems == []  # nothing read yet, nothing to report
    assert store.lookup("k").content == "first"
    write(path, entry("k", content="changed"))
    assert store.lookup("k").content == "first" and store.lookup("other") is None


# -- the resume index -----------------------------------------------------------------------------
def test_the_configuration_fingerprint_leaves_out_the_rate_limits() -> None:
    # json.dumps with sorted keys and its default separators, then the first 16 hex digits
    plain = sha('{"name": "m", "temperature": 0.0}')[:16]
    assert config_fingerprint({"temperature": 0.0, "name": "m", "rpm": 30.0, "max_connections": 2}) == plain
    with_protocol = sha('{"config": {"name": "m", "temperature": 0.0}, "protocol": {"name": "tbb"}}')[:16]
    assert config_fingerprint({"name": "m", "temperature": 0.0, "rpm": 1.0}, {"name": "tbb"}) == with_protocol


RECORD = {**{k: None for k in PROPERTY_FIELDS}, "model": "m", "task": "B1", "variant": "v0", "instance": "i0",
          "run": 3, "case_hash": "h", "config": {"name": "m"}, "protocol_params": {"name": "tbb"}, "trajectory": {}}


def test_the_resume_key_of_a_record() -> None:
    fp = sha('{"config": {"name": "m"}, "protocol": {"name": "tbb"}}')[:16]
    assert record_key(RECORD) == f"m|B1|v0|i0|3|h|{fp}"
    old = {k: v for k, v in RECORD.items() if k != "protocol_params"}  # a record from before protocols
    assert record_key(old) == "m|B1|v0|i0|3|h|" + sha('{"name": "m"}')[:16]


@pytest.mark.parametrize("field,value,error,message", [
    ("model", 1, TypeError, "expected a string"), ("task", None, TypeError, "expected a string"),
    ("variant", ["v0"], TypeError, "expected a string"), ("instance", 0, TypeError, "expected a string"),
    ("case_hash", 1, TypeError, "expected a string"), ("run", "x", ValueError, None),
    ("run", None, TypeError, None), ("config", None, TypeError, "'config' is not an object"),
    ("config", [], TypeError, "'config' is not an object")])
def test_a_record_with_a_wrong_field_has_no_key(field: str, value: Any, error: type, message: str | None) -> None:
    with pytest.raises(error) as exc:
        record_key({**RECORD, field: value})
    assert message is None or str(exc.value) == message
    with pytest.raises(KeyError):
        record_key({k: v for k, v in RECORD.items() if k != field})


def test_completed_records_keeps_results_and_reruns_the_rest(tmp_path: Path) -> None:
    rows = [{**RECORD, "run": 0, "n": 1},
            {**RECORD, "run": 1, "termination": "context_limit", "n": 2},  # a harness limit: runs again
            {**RECORD, "run": 2, "infra_error": True, "n": 3},
            {k: v for k, v in RECORD.items() if k != "config"} | {"run": 4, "n": 4},
            {k: v for k, v in RECORD.items() if k != "trajectory"} | {"run": 5, "n": 5},
            {k: v for k, v in RECORD.items() if k not in ("busy_s", "usage_invalid")} | {"run": 6, "n": 6},
            {k: v for k, v in RECORD.items() if k != "facets"} | {"run": 7, "n": 7},  # required: runs again
            {**RECORD, "run": 8, "model": 8, "n": 8},  # wrong type: runs again
            {**RECORD, "run": 9, "config": None, "n": 9},  # hand-edited: runs again, no crash
            {k: v for k, v in RECORD.items() if k != "tier"} | {"run": 10, "n": 10}]
    path = write(tmp_path / "runs.jsonl", *rows)
    with path.open("a") as fh:
        fh.write('{"torn')  # a writer killed mid-line
    done, problems = completed_records(path)
    assert sorted(r["n"] for r in done.values()) == [1, 6]
    assert done[record_key(rows[0])]["n"] == 1
    assert problems == [f"{path}:11: truncated last line ignored",
                        f"{path}: 4 record(s) lacking fields a resume needs were ignored (they run again)"]


def test_completed_records_of_a_clean_file_has_no_notes(tmp_path: Path) -> None:
    done, problems = completed_records(write(tmp_path / "runs.jsonl", RECORD))
    assert list(done) == [record_key(RECORD)] and problems == []


def test_the_fingerprint_names_a_single_url_and_no_replica_of_a_pool() -> None:
    # a stored single URL stays in the condition; a pool's replicas are where runs ran, not their condition
    single = sha('{"base_url": "http://h:8/v1", "name": "m"}')[:16]
    assert config_fingerprint({"name": "m", "base_url": "http://h:8/v1"}) == single
    assert config_fingerprint({"name": "m", "base_url": "http://other:8/v1"}) != single
    pool = sha('{"base_url": "<endpoint pool>", "name": "m"}')[:16]
    assert config_fingerprint({"name": "m", "base_url": ["http://a:1/v1", "http://b:1/v1"]}) == pool
    assert config_fingerprint({"name": "m", "base_url": ["http://b:1/v1"]}) == pool
