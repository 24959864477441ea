"""Hostile tool arguments: the episode never crashes, every item keeps its record, and model
output is never executed or used as a path (issue 16, items 1 and the sandbox property)."""

from __future__ import annotations

import builtins
import importlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.episode import run_episode
from pytest_agentfloor.providers.base import Reply, ToolCallOut
from pytest_agentfloor.results import build_record
from pytest_agentfloor.sandbox import HostileArguments, Sandbox, parse_arguments
from pytest_agentfloor.suite.loader import load_case, resolve
from pytest_agentfloor.suite.schema import TOOL_NAMES, ResolvedCase
from tests.fakeserver import FakeModelServer, raw_tool_call, reply

REPO = Path(__file__).resolve().parents[1]
DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_ARGUMENTS: dict[str, str] = {
    "overflowing product": '{"operation": "product", "operands": [1e308, 1e308]}',
    "overflowing sum": '{"operation": "sum", "operands": [1e308, 1e308, 1e308]}',
    "1e308 ratio": '{"operation": "ratio", "operands": [1e308, 1e-308]}',
    "NaN": '{"operation": "sum", "operands": [NaN]}',
    "Infinity": '{"operation": "mean", "operands": [Infinity, 1]}',
    "-Infinity": '{"operation": "min", "operands": [-Infinity]}',
    "literal 1e999": '{"operation": "sum", "operands": [1e999]}',
    "5000-digit int": '{"operation": "sum", "operands": [' + "9" * 5000 + "]}",
    "5000-digit negative int": '{"operation": "sum", "operands": [-' + "9" * 5000 + "]}",
    "array nested 100,000 deep": '{"operation": "sum", "operands": ' + DEEP + "}",
    "object nested 100,000 deep": '{"operation": "sum", "x": ' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}",
    "array nested 40 deep": '{"operation": "sum", "operands": ' + "[" * 40 + "]" * 40 + "}",
    "bare deep array": DEEP,
    "percent change from 1e-320": '{"operation": "percent_change", "operands": [1e-320, 1e308]}',
    "huge operand list": '{"operation": "product", "operands": [' + ",".join(["1e10"] * 5000) + "]}",
}


class Scripted:
    """A harness-only provider: one turn of the given tool calls, then a short answer."""

    def __init__(self, calls: list[tuple[str, str]]):
        self.calls, self.turn = calls, 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Reply:
        self.turn += 1
        if self.turn == 1:
            return Reply(None, [ToolCallOut(f"c{i}", name, args) for i, (name, args) in enumerate(self.calls)],
                         "tool_calls")
        return Reply("done")

    def close(self) -> None:
        pass


def all_tools_case() -> ResolvedCase:
    case, digest = load_case(REPO / "cases" / "tier_B" / "B1.toml")
    rc = resolve(case, "v0", "i0", digest)
    return rc.model_copy(update={"tools": TOOL_NAMES, "call_limit": 10_000, "turn_budget": 3})


@pytest.mark.parametrize("args", HOSTILE_ARGUMENTS.values(), ids=HOSTILE_ARGUMENTS.keys())
def test_hostile_arguments_end_in_an_error_envelope_and_a_record(args: str) -> None:
    rc = all_tools_case()
    traj = run_episode(rc, Scripted([("compute_value", args)]), model="m")
    assert traj.termination == "final_answer"  # the episode went on after the refused call
    (call,) = traj.calls
    assert call.result["status"] == "error" and call.result["error_type"] in ("invalid_arguments", "overflow")
    assert call.result["message"] and len(call.result["message"]) < 200
    record = build_record(rc, traj, None, ModelConfig(name="m", provider="scripted", policy="oracle"), "n")
    text = json.dumps(record, allow_nan=False)  # strict JSON: no NaN or Infinity leaks into a record
    assert len(text) < 200_000
    assert json.loads(text)["trajectory"]["turns"][0]["calls"][0]["result"] == call.result


def test_parse_arguments_refuses_what_it_cannot_read_and_keeps_plain_json() -> None:
    assert parse_arguments('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert parse_arguments("  ") == {}
    assert parse_arguments('{"n": ' + "9" * 400 + "}")["n"] == int("9" * 400)
    assert parse_arguments("[0." + "1" * 5000 + "]") == [0.1111111111111111]  # long, but an ordinary float
    for bad in ("[NaN]", "[1e400]", "[" + "1" * 401 + "]", "[" * 33 + "]" * 33, DEEP):
        with pytest.raises(HostileArguments):
            parse_arguments(bad)
    with pytest.raises(json.JSONDecodeError):
        parse_arguments("{not json")


def test_a_tool_that_raises_becomes_a_tool_error_result(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Sandbox, **kw: Any) -> Any:
        raise KeyError("a bug in a tool")

    monkeypatch.setattr(Sandbox, "_t_lookup_record", boom)
    rc = all_tools_case()
    traj = run_episode(rc, Scripted([("lookup_record", '{"record_id": "x"}'),
                                     ("compute_value", '{"operation": "sum", "operands": [1, 2]}')]), model="m")
    first, second = traj.calls
    assert first.result == {"status": "error", "error_type": "tool_error", "message": "lookup_record failed (KeyError)",
                            "hint": ""}
    assert second.result["data"]["result"] == 3 and traj.termination == "final_answer"


def test_huge_string_arguments_are_not_echoed_back_whole() -> None:
    box = Sandbox(all_tools_case().fixtures, TOOL_NAMES)
    for tool, args in (("search_records", {"query": "Q" * 1_000_000}), ("lookup_record", {"record_id": "R" * 10**6}),
                       ("list_options", {"category": "C" * 10**6}), ("submit_decision", {"decision": "D" * 10**6})):
        result = box.call(tool, args)
        assert result["status"] != "ok" and len(json.dumps(result)) < 2_000, tool


# -- the same payloads through the plugin, over real HTTP -------------------------------------------
@pytest.fixture
def hostile_server():
    payloads = list(HOSTILE_ARGUMENTS.values())

    def respond(body: dict[str, Any]):
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            index = int(body["messages"][1]["content"].split("#")[-1]) if "#" in body["messages"][1]["content"] else 0
            return raw_tool_call("compute_value", payloads[index % len(payloads)])
        return reply(content="340")

    with FakeModelServer(respond) as srv:
        yield srv


def test_every_item_fed_hostile_arguments_over_http_has_a_record(pytester: pytest.Pytester,
                                                                  hostile_server: FakeModelServer) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    case = pytester.path / "cases" / "tier_A" / "A1.toml"
    text = case.read_text().replace('tools = ["lookup_record", "get_attribute", "search_records"]',
                                    'tools = ["lookup_record", "get_attribute", "search_records", "compute_value"]')
    # one prompt variant per payload: the server picks the payload by the number after '#'
    prompts = "\n".join(f'v{i} = "How many units of INV-Q7P2K are on hand? #{i}"' for i in range(len(HOSTILE_ARGUMENTS)))
    start, end = text.index("[prompts]"), text.index("[[fixtures.records]]")
    case.write_text(text[:start] + "[prompts]\n" + prompts + "\n\n" + text[end:])
    for other in case.parent.glob("A[2-5].toml"):
        other.unlink()
    pytester.makefile(".toml", models=f"""
        [models.fake]
        provider = "openai"
        model = "tiny"
        base_url = "{hostile_server.openai_url}"
        retries = 0
        timeout_s = 5
    """)
    result = pytester.runpytest("cases", "--model", "fake", "--instances", "i0", "--no-probe", "-p", "no:cacheprovider",
                                "--agentfloor-report", "none", "--junitxml=out.xml")
    n = len(HOSTILE_ARGUMENTS)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == n and "errors" not in outcomes
    out = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    lines = (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()
    assert len(lines) == n
    for line in lines:
        record = json.loads(line)
        calls = record["trajectory"]["turns"][0]["calls"]
        assert calls[0]["result"]["status"] == "error" and not record["infra_error"]


# -- the sandbox property: model output is never executed or used as a path --------------------------
MARK = "zz-model-controlled"
PAYLOADS = [
    f"/etc/passwd#{MARK}", f"../../../../tmp/{MARK}", f"__import__('os').system('touch {MARK}')",
    f"$(touch /tmp/{MARK})", f"`touch {MARK}`", f"{{{{7*7}}}}{MARK}", f"${{HOME}}{MARK}", f"$HOME/{MARK}",
    f"; rm -rf / #{MARK}", f"file:///etc/shadow?{MARK}", f"\\\\server\\share\\{MARK}", f"{MARK}\x00.txt",
    f"os.path.join('/', '{MARK}')", f"import subprocess; subprocess.run(['{MARK}'])", f"%(x)s{MARK}",
    f"{MARK}{{0.__class__}}", f"<script>{MARK}</script>", f"\x1b]0;{MARK}\x07",
]


def _hostile_calls() -> list[tuple[str, str]]:
    calls = []
    for i, p in enumerate(PAYLOADS):
        calls += [
            ("search_records", json.dumps({"query": p, "collection": p})),
            ("lookup_record", json.dumps({"record_id": p})),
            ("get_attribute", json.dumps({"record_id": p, "attribute": p})),
            ("list_options", json.dumps({"category": p})),
            ("check_constraint", json.dumps({"record_id": p, "constraint": p})),
            ("compare_records", json.dumps({"record_ids": [p, p], "attribute": p})),
            ("compute_value", json.dumps({"operation": p, "operands": [1]})),
            ("submit_decision", json.dumps({"decision": p, "record_id": p, "evidence": [p], "note": p})),
            (p, json.dumps({p: p})),  # a tool name the model invents
        ]
    return calls


def test_model_output_is_never_executed_or_used_as_a_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    touched: list[tuple[str, tuple[Any, ...]]] = []

    def spy(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if MARK in repr(args) + repr(kwargs):
                touched.append((name, args))
            return real(*args, **kwargs)
        return wrapper

    for owner, attr in ((builtins, "open"), (builtins, "exec"), (builtins, "eval"), (builtins, "compile"),
                        (builtins, "__import__"), (os, "system"), (os, "popen"), (os, "open"), (os, "stat"),
                        (os, "listdir"), (os, "scandir"), (os, "remove"), (os, "unlink"), (os, "execv"),
                        (subprocess, "Popen"), (subprocess, "run"), (importlib, "import_module"),
                        (Path, "open"), (Path, "read_text"), (Path, "exists")):
        monkeypatch.setattr(owner, attr, spy(f"{getattr(owner, '__name__', owner)}.{attr}", getattr(owner, attr)))
    monkeypatch.chdir(tmp_path)
    rc = all_tools_case()
    calls = _hostile_calls()
    batches = [calls[i:i + 40] for i in range(0, len(calls), 40)]  # episodes of one turn of many calls
    batches += [[("lookup_record", p)] for p in PAYLOADS]  # not JSON at all: ends its episode
    executed = 0
    for batch in batches:
        traj = run_episode(rc, Scripted(batch), model="m")
        assert traj.termination in ("final_answer", "malformed_call", "submitted")
        executed += len(traj.calls)
        build_record(rc, traj, None, ModelConfig(name="m", provider="scripted", policy="oracle"), "n")
    assert executed == len(calls) + len(PAYLOADS)  # every hostile call reached the sandbox
    monkeypatch.undo()
    assert touched == []
    assert list(tmp_path.iterdir()) == [] and not Path(f"/tmp/{MARK}").exists()
