"""The judge with the embedded model: one judged item (`--model local --judge local`, one server
for both) and `judge-audit` over a stratified part of the labelled set. The agreement over the
whole set (48 requests, minutes on two cores) is measured with the documented command and quoted
in docs/judge.md; what this test checks (the command starts the embedded judge, JSON mode keeps
its replies inside the contract, no text is lost) holds text by text, so 6 texts (one per predicate
and label) show it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from pytest_agentfloor.judge.audit import DEFAULT_SET as AUDIT_SET
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


def audit_subset(per_pair: int = 2) -> tuple[str, Counter[tuple[str, str]]]:
    """The shipped audit set's tasks and `per_pair` of its texts for each (predicate, label), taken
    verbatim and from different tasks where the set has them; and the counts kept."""
    text = AUDIT_SET.read_text()
    head, *blocks = text.split("\n[[items]]\n")
    items = tomllib.loads(text)["items"]
    assert len(blocks) == len(items) == 48
    chosen: list[int] = []
    counts: Counter[tuple[str, str]] = Counter()
    for distinct_tasks in (True, False):
        for i, item in enumerate(items):
            pair = (item["predicate"], item["label"])
            task_taken = any(items[j]["task"] == item["task"] and (items[j]["predicate"], items[j]["label"]) == pair
                             for j in chosen)
            if i not in chosen and counts[pair] < per_pair and not (distinct_tasks and task_taken):
                chosen.append(i)
                counts[pair] += 1
    return head + "".join("\n[[items]]\n" + blocks[i] for i in sorted(chosen)), counts


def test_the_audit_set_with_the_embedded_judge(tmp_path: Path, no_local_urls: None) -> None:
    need(QWEN_05B)
    (tmp_path / "models.toml").write_text(MODELS)
    subset, counts = audit_subset(per_pair=1)
    assert len(counts) == 6 and set(counts.values()) == {1}  # 3 predicates x pass/fail, a text each
    (tmp_path / "audit.toml").write_text(subset)
    out = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "judge-audit", "--judge", "local",
                          "--set", "audit.toml", "--json", "audit.json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=3600)
    print(out.stdout)
    print(out.stderr[-2000:])
    assert out.returncode in (0, 1), out.stderr
    data = json.loads((tmp_path / "audit.json").read_text())
    assert len(data["items"]) == 6
    for predicate in ("required_elements", "no_invented_facts", "only_requested_items", "all"):
        tally = data["results"][predicate]
        assert tally["agreement"]["n"] + tally["errors"] == (6 if predicate == "all" else 2), predicate
    assert data["results"]["all"]["agreement"]["n"] > 0  # JSON mode keeps the small model inside the contract
