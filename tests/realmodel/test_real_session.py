"""The plugin's own handling of the embedded model: one server per session on the controller,
shared by xdist workers, the probe admitting Qwen and skipping a model that cannot call tools."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.local.model_files import QWEN_05B, SMOLLM2_135M

from .conftest import need

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.realmodel

MODELS = """
[models.local]
provider = "local"
max_tokens = 256
timeout_s = 120

[models.local-smollm2]
provider = "local"
model = "smollm2-135m-instruct"
max_tokens = 128
timeout_s = 120
"""


def _llama_servers() -> set[int]:
    """llama-server processes this test process started (its children): under xdist another worker's
    test may have its own server running at the same moment."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid() and b"llama-server" in (proc / "cmdline").read_bytes():
                    pids.add(int(proc.name))
            except (OSError, ValueError, IndexError):
                pass
    return pids


def test_session_starts_probes_shares_and_stops_the_servers(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    need(QWEN_05B)
    need(SMOLLM2_135M)
    for var in [k for k in os.environ if k.startswith("AGENTFLOOR_LOCAL_URL")]:
        monkeypatch.delenv(var)
    (pytester.path / "cases" / "tier_A0").mkdir(parents=True)
    for case in ("A01", "A02"):
        shutil.copy(REPO / "cases" / "tier_A0" / f"{case}.toml", pytester.path / "cases" / "tier_A0")
    pytester.makefile(".toml", models=MODELS)
    before = _llama_servers()
    result = pytester.runpytest_subprocess("cases", "--model", "local,local-smollm2", "--variants", "v0",
                                           "--instances", "i0", "-n", "2", "-rs", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped") == 2  # smollm2 cannot call tools: its items do not run
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2  # Qwen's items ran on the workers
    result.stdout.fnmatch_lines(["agentfloor: probe local: tool_capable",
                                 "agentfloor: probe local-smollm2: no_tools (*",
                                 "*model 'local-smollm2' probed as no_tools*"])
    probe = json.loads((pytester.path / "reports" / "probe.json").read_text())
    assert probe["local"]["classification"] == "tool_capable"
    assert probe["local-smollm2"]["classification"] == "no_tools"
    summary = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert summary["probe"] == {"local": "tool_capable", "local-smollm2": "no_tools"}
    logs = sorted(p.name for p in (pytester.path / "reports").glob("local-server*.log"))
    assert len(logs) == 2 and all((pytester.path / "reports" / name).stat().st_size > 0 for name in logs)
    records = [json.loads(x) for x in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert {r["model"] for r in records} == {"local"} and all(r["tokens_in"] > 0 for r in records)
    # hourly cost charges llama.cpp's own processing time (its `timings`), which excludes the HTTP
    # round trip and any queueing: strictly less than the latency, so it was read from the server
    assert all(0 < r["busy_s"] < r["latency_s"] for r in records)
    assert _llama_servers() <= before  # both servers stopped with the session
