"""mypy on the package, at two strictnesses.

- The whole package passes mypy at its default strictness (pydantic plugin, pyproject.toml's
  [tool.mypy]): no error anywhere, no ``ignore_errors`` section; the few ``# type: ignore`` left
  each name their error code and why.
- The typed seams pass ``mypy --strict``: the kind protocol and registry, the built-in kinds, the
  pressure cell the episode loop reads through kindspec.EpisodePressure, the provider registry, the
  run state, the report primitives and section registry, and the options page generator. Imports
  into the rest of the package are followed silently there (``--follow-imports=silent``): only how
  these modules use it counts.

Skips when mypy is not installed (the ``test`` extra).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEAMS = [
    "pytest_agentfloor/kindspec.py", "pytest_agentfloor/kinds.py", "pytest_agentfloor/suite/kind.py",
    "pytest_agentfloor/suite/predicates.py", "pytest_agentfloor/callsite/kind.py", "pytest_agentfloor/pressure/kind.py",
    "pytest_agentfloor/pressure/cell.py", "pytest_agentfloor/providers/registry.py", "pytest_agentfloor/runstate.py",
    "pytest_agentfloor/report/format.py", "pytest_agentfloor/report/sections.py", "pytest_agentfloor/report/args.py",
    "pytest_agentfloor/optionsdoc.py",
]


def _mypy(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is not installed: pip install -e '.[test]'")
    env = dict(os.environ, MYPY_CACHE_DIR=str(tmp_path / "mypy-cache"))
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_package_passes_mypy(tmp_path: Path) -> None:
    done = _mypy(tmp_path, "pytest_agentfloor")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_seams_pass_mypy_strict(tmp_path: Path) -> None:
    done = _mypy(tmp_path, "--strict", "--follow-imports=silent", *SEAMS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_module_is_exempt_from_mypy() -> None:
    """The config turns no check off for part of the package (an ignore_errors section would hide it)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "ignore_errors" not in text and "[[tool.mypy.overrides]]" not in text


def test_every_type_ignore_names_its_error_code() -> None:
    bare = [f"{p.relative_to(REPO)}:{n}" for p in sorted((REPO / "pytest_agentfloor").rglob("*.py"))
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if "# type: ignore" in line and "# type: ignore[" not in line]
    assert not bare, f"blanket type: ignore (name the error code): {bare}"
