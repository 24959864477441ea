"""The typed seams pass mypy --strict: the kind protocol and registry, the built-in kinds, the
provider registry, the report primitives and section registry, and the options page generator.

The rest of the package is followed silently (``--follow-imports=silent``): its own errors are not
reported here, only how these modules use it. Skips when mypy is not installed (the ``test`` extra).
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
    "pytest_agentfloor/providers/registry.py", "pytest_agentfloor/report/format.py",
    "pytest_agentfloor/report/sections.py", "pytest_agentfloor/report/args.py", "pytest_agentfloor/optionsdoc.py",
]


@pytest.mark.slow
def test_the_seams_pass_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed: pip install -e '.[test]'")
    env = dict(os.environ, MYPY_CACHE_DIR=str(tmp_path / "mypy-cache"))
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--config-file", str(REPO / "pyproject.toml"), *SEAMS],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
