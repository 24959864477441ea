"""judge-audit against a fake judge over real HTTP: the rates follow from the labels by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.judge.audit import DEFAULT_SET, AuditSetError, load_set
from tests.fakeserver import FakeModelServer, reply

REPO = Path(__file__).resolve().parents[2]


def always(v: str):
    return lambda body: reply(content=json.dumps({"verdict": v, "reason": "Said so."}))


def audit(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "models.toml").write_text(f'[models.fj]\nprovider = "openai"\nmodel = "j"\nbase_url = "{url}"\n'
                                          'timeout_s = 2\nretries = 0\n')
    return subprocess.run([sys.executable, "-m", "pytest_agentfloor", "judge-audit", "--judge", "fj",
                           "--json", "audit.json", *extra], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_our_audit_set_is_large_enough_and_half_violations() -> None:
    s = load_set(DEFAULT_SET)
    assert len(s.items) >= 40
    assert sum(i.label == "fail" for i in s.items) * 2 == len(s.items)
    by_pred: dict[str, list[str]] = {}
    for i in s.items:
        by_pred.setdefault(i.predicate, []).append(i.label)
    assert set(by_pred) == {"required_elements", "no_invented_facts", "only_requested_items"}
    assert all(labels.count("fail") * 2 == len(labels) for labels in by_pred.values())
    assert len({(i.task, i.predicate, i.text) for i in s.items}) == len(s.items)


def test_an_always_pass_judge_agrees_on_half_and_passes_every_violation(tmp_path: Path) -> None:
    from scipy.stats import binomtest

    with FakeModelServer(always("pass")) as srv:
        out = audit(tmp_path, srv.openai_url)
        assert len(srv.requests) == 48
        srv.responder = always("fail")  # a second audit is answered by the cache alone
        again = audit(tmp_path, srv.openai_url)
        assert len(srv.requests) == 48
    assert "48 verdict(s) from the cache, 0 request(s)" in again.stdout
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "audit.json").read_text())
    overall = data["results"]["all"]
    assert overall["agreement"]["k"] == 24 and overall["agreement"]["n"] == 48
    assert (overall["false_pass"]["k"], overall["false_pass"]["n"]) == (24, 24)
    assert (overall["false_fail"]["k"], overall["false_fail"]["n"]) == (0, 24)
    ci = binomtest(24, 48).proportion_ci(method="wilson")
    assert overall["agreement"]["ci95"] == pytest.approx([ci.low, ci.high])
    assert overall["errors"] == 0 and data["prompt_version"] == "judge-v1"
    assert "50.0% [36.4,  63.6] (24/48)" in out.stdout
    assert json.loads((tmp_path / "audit.json").read_text())["results"]["all"]["agreement"]["k"] == 24


def test_texts_without_a_verdict_are_counted_apart(tmp_path: Path) -> None:
    def garbled_on_items(body: dict[str, Any]):
        if "RULE (only_requested_items)" in body["messages"][-1]["content"]:
            return reply(content="The answer is fine.")
        return reply(content='{"verdict": "fail", "reason": "Said so."}')

    with FakeModelServer(garbled_on_items) as srv:
        out = audit(tmp_path, srv.openai_url, "--judge-cache", "off")
    assert out.returncode == 1
    data = json.loads((tmp_path / "audit.json").read_text())["results"]
    assert data["only_requested_items"]["errors"] == 6 and data["only_requested_items"]["agreement"]["n"] == 0
    assert data["all"]["errors"] == 6 and data["all"]["agreement"]["n"] == 42
    assert (data["all"]["false_fail"]["k"], data["all"]["false_fail"]["n"]) == (21, 21)
    assert "unparseable reply" in out.stderr and "6 texts without a verdict in all" in out.stderr
    assert not (tmp_path / "reports" / "judge-cache.jsonl").exists()


def test_a_bad_audit_set_or_judge_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "set.toml"
    bad.write_text('[tasks.T]\nprompt = "p"\n[[items]]\ntask = "U"\npredicate = "required_elements"\n'
                   'label = "pass"\ntext = "t"\n')
    with pytest.raises(AuditSetError, match="unknown task 'U'"):
        load_set(bad)
    out = audit(tmp_path, "http://127.0.0.1:9/v1", "--set", str(bad))
    assert out.returncode == 2 and "unknown task 'U'" in out.stderr
    out = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "judge-audit", "--judge", "oracle"],
                         capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(REPO)})
    assert out.returncode == 2 and "cannot judge text" in out.stderr
