"""Shared helpers of the real-model tests: a pytester benchmark dir pointed at a URL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def bench_dir(pytester: pytest.Pytester, url: str | None, *, tiers: tuple[str, ...] = ("tier_A", "tier_B"),
              cases: tuple[str, ...] = (), name: str = "local", **fields: Any) -> pytest.Pytester:
    """Copy the tiers (or just `cases`, e.g. "tier_A/A1") and write a models.toml with one local model."""
    if cases:
        for c in cases:
            tier, case = c.split("/")
            (pytester.path / "cases" / tier).mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / "cases" / tier / f"{case}.toml", pytester.path / "cases" / tier / f"{case}.toml")
    else:
        for tier in tiers:
            shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    lines = [f"[models.{name}]", 'provider = "local"']
    if url:
        lines.append(f'base_url = "{url}"')
    for key, value in fields.items():
        lines.append(f"{key} = {json.dumps(value)}")
    (pytester.path / "models.toml").write_text("\n".join(lines) + "\n")
    return pytester


def run(pytester: pytest.Pytester, *paths: str, model: str = "local", extra: tuple[str, ...] = ()) -> pytest.RunResult:
    return pytester.runpytest(*(paths or ("cases",)), "--model", model, "--variants", "v0", "--instances", "i0",
                              "-p", "no:cacheprovider", "--junitxml=out.xml", "-o", "junit_family=xunit1",
                              *(() if "--probe" in extra else ("--no-probe",)),
                              *(e for e in extra if e != "--probe"))


def records(pytester: pytest.Pytester) -> list[dict]:
    path = pytester.path / "reports" / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def outcome_total(result: pytest.RunResult) -> int:
    o = result.parseoutcomes()
    return sum(o.get(k, 0) for k in ("passed", "failed", "errors", "error"))
