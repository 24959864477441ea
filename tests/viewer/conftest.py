"""Stored runs for the viewer and compare tests, written once by real pytest sessions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_session(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real pytest session on the repo's cases (copied into `where`), in its own process."""
    if not (where / "cases").exists():
        where.mkdir(parents=True, exist_ok=True)
        for tier in ("tier_A", "tier_B"):
            shutil.copytree(REPO / "cases" / tier, where / "cases" / tier)
        shutil.copy(REPO / "models.toml", where / "models.toml")
    # pytest leaves short-summary lines untruncated when CI/BUILD_NUMBER is set: drop them so the
    # 80-column rendering is what is tested, on a developer's machine and in CI alike
    env = {**{k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")},
           "PYTHONPATH": str(REPO), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "pytest", "cases", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--instances", "i0", "--no-probe", *args], cwd=where, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="session")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """reports/ of one session with the oracle and four fault policies (passes and failures)."""
    where = tmp_path_factory.mktemp("viewer-runs")
    out = run_session(where, "--model", "oracle,fault-exhaust,fault-hallucinate,fault-malformed,fault-partial", "-rf")
    assert (where / "reports" / "runs.jsonl").is_file(), out.stdout[-3000:] + out.stderr[-3000:]
    (where / "stdout.txt").write_text(out.stdout)
    return where
