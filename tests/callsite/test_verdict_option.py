"""--agentfloor-callsite-verdict (and the report command's --callsite-verdict) choose which McNemar p decides."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sites(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "callsite", pytester.path / "cases" / "callsite")
    return pytester


def test_the_verdict_option_reaches_the_paired_table_and_the_offline_report(sites: pytest.Pytester) -> None:
    args = ["cases/callsite/intent.toml", "cases/callsite/codegen.toml", "--model", "oracle,fault-always_refuse",
            "--agentfloor-reference", "oracle"]
    result = sites.runpytest(*args)
    result.stdout.fnmatch_lines(["*McNemar against oracle (verdict: exact p)*"])
    assert json.loads((sites.path / "reports" / "summary.json").read_text())["callsite"]["verdict"] == "raw"
    result = sites.runpytest(*args, "--agentfloor-callsite-verdict", "holm")
    result.stdout.fnmatch_lines(["*McNemar against oracle (verdict: Holm-adjusted p)*"])
    cs = json.loads((sites.path / "reports" / "summary.json").read_text())["callsite"]
    assert cs["verdict"] == "holm"
    assert all(t["significant"] == (t["p_holm"] < 0.05) for t in cs["tests"])
    out = sites.path / "rebuilt"
    proc = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "report", str(sites.path / "reports" / "runs.jsonl"),
                           "--reference", "oracle", "--callsite-verdict", "holm", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["callsite"] == cs
    result = sites.runpytest(*args, "--agentfloor-callsite-verdict", "bonferroni")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-callsite-verdict: expected one of raw, holm, got 'bonferroni'*"])
