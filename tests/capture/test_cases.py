"""`capture cases`: captured lines -> call-site tables of the existing kind (grader inference, dedup,
provenance, review state), and how the call-site kind plays a captured conversation with tools."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.callsite.kind import expand_table, grade_call, play_call
from pytest_agentfloor.capture.cases import build, collect, main, openai_messages, toml_str
from pytest_agentfloor.providers.base import Reply, ToolCallOut

pytest_plugins = ["pytester"]


def line(site: str, user: str, text: str | None = None, *, calls: list[dict[str, Any]] | None = None,
         system: str = "SYS", tools: list[Any] | None = None, time: str = "2026-01-01T00:00:00.000Z",
         status: int = 200, api: str = "openai", model: str = "gpt-x", params: dict | None = None) -> str:
    return json.dumps({"v": 1, "site": site, "time": time, "api": api, "model": model, "upstream_model": model,
                       "status": status, "request": {"messages": [{"role": "system", "content": system},
                                                                  {"role": "user", "content": user}],
                                                     "tools": tools or [], "params": params or {}},
                       "reply": {"text": text, "tool_calls": calls or [], "error": None if status == 200 else "x"}})


def write(folder: Path, site: str, *lines: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{site}.jsonl", "a") as fh:
        fh.write("\n".join(lines) + "\n")


def tables(folder: Path, config: Any = None) -> dict[str, dict[str, Any]]:
    seen, _, _ = collect(folder)
    files, _ = build(seen, config or {})
    return {name: tomllib.loads(text) for name, text in files.items()}


@pytest.mark.parametrize("replies,grader", [
    (["billing", "Outage.", "billing"], "intent"),
    (['[{"domain": "light", "service": "turn_on", "entity_id": "light.a"}]', "[]", "```json\n[1, 2]\n```"], "json_actions"),
    (['{"plan": 1}', '{"plan": 2}', '{"plan": 3}'], "json"),
    (["```python\nasync def setup(agent):\n    await agent.log('x')\n```", "async def process(agent):\n    return 1",
      "async def cleanup(agent):\n    return None"], "codegen"),
    (["import os\ndef main():\n    return os.sep", "def f(x):\n    return x", "def g():\n    pass"], "python"),
    (["The sky is blue.", "I cannot help with that.", "billing"], "exact"),
])
def test_the_grader_is_inferred_from_the_replies_and_passes_every_reference(tmp_path: Path, replies: list[str],
                                                                            grader: str) -> None:
    write(tmp_path, "s", *(line("s", f"q{i}", r) for i, r in enumerate(replies)))
    (table,) = tables(tmp_path).values()
    assert table["grader"] == grader
    cases = expand_table({k: v for k, v in table.items() if k != "kind"}, tmp_path / "s.toml", "h")
    for case in cases:  # the oracle's answer is the reference: it must pass
        from pytest_agentfloor.trajectory import Trajectory

        traj = Trajectory(case_id=case.id, tier="callsite", variant="v0", instance="i0", run=0, model="o", tools=[],
                          messages=[], turn_budget=1, call_limit=0, final_answer=case.reference,
                          termination="final_answer")
        assert grade_call(case, traj).passed, case.id
    if grader == "intent":
        assert table["labels"] == ["Outage", "billing"] and [c["label"] for c in table["case"]] == ["billing", "Outage", "billing"]


def test_codegen_that_breaks_the_agent_contract_falls_back_to_exact(tmp_path: Path) -> None:
    code = "async def process(agent):\n    while True:\n        await agent.publish('t', 1)"
    write(tmp_path, "s", line("s", "q", code))
    (table,) = tables(tmp_path).values()
    assert table["grader"] == "exact"


def test_one_case_per_distinct_request_counted_with_the_commonest_reply(tmp_path: Path) -> None:
    write(tmp_path, "r",
          line("r", "a", "x", time="2026-01-01T00:00:03.000Z"), line("r", "a", "y", time="2026-01-01T00:00:01.000Z"),
          line("r", "a", "x", time="2026-01-01T00:00:02.000Z", model="gpt-y"), line("r", "b", "y"),
          line("r", "a", "x", system="OTHER"), line("r", "a", "boom", status=500))
    got = tables(tmp_path)
    assert sorted(got) == ["r-2.toml", "r.toml"]  # another system prompt: another table of the site
    main_table = got["r.toml"]
    assert main_table["system_prompt"] == "SYS"
    a, b = sorted(main_table["case"], key=lambda c: c["prompt"])
    assert a["reference"] == "x" and a["provenance"]["count"] == 3 and a["provenance"]["replies_seen"] == 2
    assert (a["provenance"]["first_seen"], a["provenance"]["last_seen"]) == ("2026-01-01T00:00:01.000Z",
                                                                             "2026-01-01T00:00:03.000Z")
    assert a["provenance"]["upstream_models"] == ["gpt-x", "gpt-y"] and a["review"] == "provisional"
    assert b["provenance"]["count"] == 1 and a["id"].startswith("r-") and a["id"] != b["id"]
    _, read, skipped = collect(tmp_path)
    assert (read, skipped) == (6, 1)


def test_a_grader_named_in_the_config_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "capture.toml"
    cfg.write_text('[cases.s]\ngrader = "action_label"\nlabels = ["a", "b", "c"]\n')
    write(tmp_path / "cap", "s", line("s", "q1", "a"), line("s", "q2", "b"))
    assert main(["--from", str(tmp_path / "cap"), "--config", str(cfg)]) == 0
    table = tomllib.loads((tmp_path / "cap" / "s.toml").read_text())
    assert table["grader"] == "action_label" and table["labels"] == ["a", "b", "c"]


def test_reviewed_tables_are_not_overwritten_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "s", line("s", "q", "a"))
    assert main(["--from", str(tmp_path)]) == 0
    path = tmp_path / "s.toml"
    path.write_text(path.read_text().replace('review = "provisional"', 'review = "accepted"'))
    assert main(["--from", str(tmp_path)]) == 2 and "--force" in capsys.readouterr().err
    assert main(["--from", str(tmp_path), "--force"]) == 0


def test_an_empty_capture_folder_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--from", str(tmp_path)]) == 2 and "no usable captured call" in capsys.readouterr().err


def test_ollama_conversations_are_stored_in_the_openai_shape() -> None:
    msgs = [{"role": "user", "content": "w?"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
            {"role": "tool", "content": "r", "tool_name": "f"}]
    out = openai_messages(msgs)
    assert out[1]["tool_calls"] == [{"id": "call_0", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]
    assert out[2]["tool_call_id"] == "call_0"


@pytest.mark.parametrize("text", ["plain", "two\nlines", "ends with '", "has ''' inside\n", "tab\tand \x7f del",
                                  "crlf\r\nline", "emoji \U0001F600 and \u00e9", "", "\n", "back\\slash\n\"q\""])
def test_strings_read_back_exactly(text: str) -> None:
    assert tomllib.loads(f"x = {toml_str(text)}")["x"] == text


class _Calls:
    """A provider that answers every request with the same tool call."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, case: Any) -> Reply:
        self.seen.append((list(messages), tools))
        return Reply(content=None, tool_calls=[ToolCallOut(id="c", name="get_weather", arguments='{"city": "Paris"}')],
                     finish_reason="tool_calls")


def test_a_captured_case_is_played_with_its_conversation_and_tools_and_graded_on_the_calls(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    write(tmp_path, "w", line("w", "Weather in Paris?", calls=[{"id": "c1", "name": "get_weather",
                                                                 "arguments": {"city": "Paris"}}], tools=tools))
    (table,) = tables(tmp_path).values()
    assert table["grader"] == "tool_calls" and json.loads(table["tools"]) == tools
    (case,) = expand_table({k: v for k, v in table.items() if k != "kind"}, tmp_path / "w.toml", "h")
    provider = _Calls()
    traj = play_call(case, provider, model="live")  # type: ignore[arg-type]
    messages, sent_tools = provider.seen[0]
    assert messages == [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Weather in Paris?"}]
    assert sent_tools == tools and traj.tools == ["get_weather"]
    assert json.loads(traj.final_answer or "") == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert grade_call(case, traj).passed
    case_other = case.model_copy(update={"reference": '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'})
    grade = grade_call(case_other, traj)
    assert not grade.passed and grade.first_unmet is not None and grade.first_unmet.code == "tool_calls.calls"


def test_generated_tables_collect_and_pass_under_the_oracle(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "cases" / "captured"
    write(folder, "intent", *(line("intent", f"turn {i}", ["actuate", "other", "pipeline"][i % 3]) for i in range(6)))
    write(folder, "planner", line("planner", "plan it", '```json\n[{"type": "dynamic", "name": "a"}]\n```',
                                  params={"temperature": 0, "max_tokens": 300, "stop": None}))
    assert main(["--from", str(folder)]) == 0
    planner = tomllib.loads((folder / "planner.toml").read_text())
    assert planner["max_tokens"] == 300 and json.loads(planner["case"][0]["provenance"]["params"])["stop"] is None
    result = pytester.runpytest("cases/captured", "--model", "oracle", "-p", "no:randomly")
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["*7 passed*"])


def test_the_documented_example_tables_are_what_capture_cases_writes_from_its_captures(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "captured"
    assert main(["--from", str(example), "--out", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("*.toml"))
    assert written == sorted(p.name for p in example.glob("*.toml")) == ["router.toml", "weather-2.toml", "weather.toml"]
    for name in written:
        assert (tmp_path / name).read_text() == (example / name).read_text(), name
