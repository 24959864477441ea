"""Menu sizes, lanes and encodings as they reach a real HTTP server (tests/fakeserver.py)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.pressure.compiler import compile_cell
from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, reply

from .helpers import families

REPO = Path(__file__).resolve().parents[2]
C1 = REPO / "cases" / "tier_C" / "C1.toml"


def follower(case: Any):
    """A server-side 'model' that answers with `case`'s reference program, turn by turn."""
    def respond(body: dict[str, Any]):
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        step = case.reference[turn]
        if step.calls:
            return reply(tool_calls=[(c.tool, dict(c.args)) for c in step.calls])
        return reply(content=step.final or "done")
    return respond


def conversations(server: FakeModelServer) -> list[list[dict[str, Any]]]:
    convs: list[list[dict[str, Any]]] = []
    for r in server.received:
        if r.path.endswith("/chat/completions") or r.path.endswith("/api/chat"):
            if len(r.body["messages"]) == 2:
                convs.append([])
            convs[-1].append(r.body)
    return convs


def models(server: FakeModelServer, provider: str) -> str:
    url = server.openai_url if provider == "openai" else server.url
    return f"""
        [models.wire]
        provider = "{provider}"
        model = "tiny-tools"
        base_url = "{url}"
        max_tokens = 300
        timeout_s = 5
        retries = 0
    """


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_fixed_and_routed_lanes_on_the_wire(pytester: pytest.Pytester, provider: str) -> None:
    intent, fam = families()["overdue-invoice"]
    case = compile_cell(fam, intent, 128, "high", "compact", "fixed", "h")
    with FakeModelServer(follower(case)) as server:
        shutil.copytree(REPO / "cases" / "pressure", pytester.path / "cases" / "pressure")
        pytester.makefile(".toml", models=models(server, provider))
        lanes = {}
        for lane in ("fixed", "routed"):  # one lane per run: a run may play its episodes concurrently
            server.received.clear()
            result = pytester.runpytest("cases/pressure/accounting.toml", "--model", "wire", "--no-probe",
                                        "-m", f"overdue-invoice and V128 and Whigh and compact and {lane}",
                                        "--agentfloor-protocol", "tbb")
            result.assert_outcomes(passed=1)
            (lanes[lane],) = conversations(server)
        fixed, routed = lanes["fixed"], lanes["routed"]
    n_calls = sum(len(t.calls) for t in case.reference)
    assert [len(b["tools"]) for b in fixed] == [128] * n_calls
    # routed: the full menu until the first executed operational call (the search), then the four tools
    assert [len(b["tools"]) for b in routed] == [128] + [4] * (n_calls - 1)
    shown = {t["function"]["name"] for t in routed[-1]["tools"]}
    assert shown == {"search_records", "lookup_record", "get_attribute", "submit_decision"}
    # compact delivery: short keys and the field dictionary reach the model
    tool_msgs = [m["content"] for m in fixed[-1]["messages"] if m["role"] == "tool"]
    assert tool_msgs and all(json.loads(c).get("keys") is not None for c in tool_msgs[:-1])
    assert all(", " not in c for c in tool_msgs)
    recs = [json.loads(line) for f in (pytester.path / "reports" / "sessions").glob("*/runs.jsonl")
            for line in f.read_text().splitlines()]
    by_lane = {r["instance"]: r for r in recs}
    assert by_lane["fixed"]["facets"]["exposures"] == 128 * n_calls
    assert by_lane["routed"]["facets"]["exposures"] == 128 + 4 * (n_calls - 1)


def test_menu_and_encoding_options_apply_to_ladder_cases(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the regrade subprocess imports this checkout, not an installed copy
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    case = resolve(load_case(C1)[0], "v0", "i0", "h")
    with FakeModelServer(follower(case)) as server:
        shutil.copytree(REPO / "cases" / "tier_C", pytester.path / "cases" / "tier_C")
        pytester.makefile(".toml", models=models(server, "openai"))
        pytester.makeini("[pytest]\nagentfloor_encoding = typed\n")
        result = pytester.runpytest("cases/tier_C/C1.toml", "--model", "wire", "--no-probe", "--variants", "v0",
                                    "--instances", "i0", "--agentfloor-menu", "32")
        result.assert_outcomes(passed=1)
        bodies = [r.body for r in server.received if r.path.endswith("/chat/completions")]
    assert bodies and all(len(b["tools"]) == 32 for b in bodies)
    assert set(case.tools) <= {t["function"]["name"] for t in bodies[0]["tools"]}
    tool_msg = next(m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_msg)["data"]["type"] == "object"  # the ini setting's typed encoding
    rec = json.loads((pytester.path / "reports" / "runs.jsonl").read_text().splitlines()[0])
    assert rec["kind"] == "episode" and rec["facets"]["V"] == 32 and rec["facets"]["D"] == "typed"
    assert rec["case_hash"].endswith("+V32.typed")
    out = pytester.run(sys.executable, "-m", "pytest_agentfloor", "regrade", str(pytester.path / "reports" / "runs.jsonl"),
                       "--cases", str(pytester.path / "cases"))
    assert "re-graded 1 record(s): 0 outcome(s) changed" in out.stdout.str() and "regrade:" not in out.stderr.str()


@pytest.mark.parametrize("args, message", [
    (["--agentfloor-menu", "0"], "--agentfloor-menu: expected a number of tool schemas from 1 to"),
    (["--agentfloor-menu", "many"], "--agentfloor-menu: expected a number"),
    (["--agentfloor-encoding", "yaml"], "--agentfloor-encoding: expected one of raw, compact, typed, linked"),
])
def test_bad_pressure_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    shutil.copytree(REPO / "cases" / "tier_C", pytester.path / "cases" / "tier_C")
    result = pytester.runpytest("cases/tier_C/C1.toml", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
