"""The judge with the embedded model: one judged item (`--model local --judge local`, one server
for both) and the audit of the labelled set. The agreement measured here is in docs/judge.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agentfloor.local.model_files import QWEN_05B

from .conftest import need

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.realmodel

MODELS = '[models.local]\nprovider = "local"\nmax_tokens = 256\ntimeout_s = 180\n'


@pytest.fixture
def no_local_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [k for k in os.environ if k.startswith("AGENTFLOOR_LOCAL_URL")]:
        monkeypatch.delenv(var)


def test_one_item_judged_offline_by_the_embedded_model(pytester: pytest.Pytester, no_local_urls: None) -> None:
    need(QWEN_05B)
    (pytester.path / "cases" / "tier_A0").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A0" / "A02.toml", pytester.path / "cases" / "tier_A0")
    (pytester.path / "models.toml").write_text(MODELS)
    result = pytester.runpytest_subprocess("cases", "--model", "local", "--agentfloor-judge", "local", "--variants", "v0",
                                           "--no-probe", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    (rec,) = [json.loads(line) for line in
              (pytester.path / "reports" / "latest" / "runs.jsonl").read_text().splitlines()]
    if rec["infra_error"]:  # the judged model's endpoint or the judge failed: say which, do not pass quietly
        pytest.fail(f"infrastructure error: {rec['error']}")
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
    if not (rec["trajectory"]["final_answer"] or "").strip():
        pytest.skip("the model gave no final text, so there was nothing to judge")
    verdicts = rec["judge"]["verdicts"]
    assert [v["predicate"] for v in verdicts] == ["required_elements", "no_invented_facts"]
    assert all(v["source"] == "judge" and v["verdict"] in ("pass", "fail") and v["reason"] for v in verdicts)
    assert rec["judge_requests"] == 2 and rec["judge_model"] == "local"
    cache = (pytester.path / "reports" / "judge-cache.jsonl").read_text().splitlines()
    assert len(cache) == 2
    assert "semantic checks: 2 verdict(s) by the judge local" in " ".join(result.stdout.str().split())


def test_the_audit_set_with_the_embedded_judge(tmp_path: Path, no_local_urls: None) -> None:
    need(QWEN_05B)
    (tmp_path / "models.toml").write_text(MODELS)
    out = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "judge-audit", "--judge", "local",
                          "--json", "audit.json"], capture_output=True, text=True, cwd=tmp_path, timeout=3600)
    print(out.stdout)
    print(out.stderr[-2000:])
    assert out.returncode in (0, 1), out.stderr
    data = json.loads((tmp_path / "audit.json").read_text())
    overall = data["results"]["all"]
    assert len(data["items"]) == 48
    assert overall["agreement"]["n"] + overall["errors"] == 48
    assert overall["agreement"]["n"] > 0  # JSON mode keeps the small model inside the contract
