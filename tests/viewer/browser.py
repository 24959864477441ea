"""Headless Chromium for the viewer's browser tests: the binary, a DOM dump, a screenshot.

Debian's ``chromium`` (or ``chromium-headless-shell``) runs the page's script; ``--dump-dom``
returns the DOM after it ran. Playwright (the ``test`` extra) drives the same binary for clicks and
keys through ``executable_path``; ``playwright install`` is never needed. Without either, a test
skips, unless AGENTFLOOR_REQUIRE_BROWSER=1 (.ci/run), where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")


def chromium() -> str:
    """The browser binary; without one the test is skipped, or fails where AGENTFLOOR_REQUIRE_BROWSER=1
    (as .ci/run sets it, after installing Debian's chromium)."""
    for name in (os.environ.get("AGENTFLOOR_CHROMIUM", ""), *CANDIDATES):
        path = shutil.which(name) if name else None
        if path:
            return path
    if os.environ.get("AGENTFLOOR_REQUIRE_BROWSER", "").strip() == "1":
        pytest.fail(f"AGENTFLOOR_REQUIRE_BROWSER=1 but none of {', '.join(CANDIDATES)} is on PATH", pytrace=False)
    pytest.skip("no headless Chromium (apt-get install -y chromium)")


def playwright_api():
    """playwright.sync_api; without it the test is skipped, or fails where AGENTFLOOR_REQUIRE_BROWSER=1."""
    try:
        from playwright import sync_api
    except ImportError:
        if os.environ.get("AGENTFLOOR_REQUIRE_BROWSER", "").strip() == "1":
            pytest.fail("AGENTFLOOR_REQUIRE_BROWSER=1 but playwright is not installed (pip install -e '.[test]')",
                        pytrace=False)
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    return sync_api


def launch(p):  # noqa: ANN001, ANN201 (playwright's own types)
    """Debian's chromium through Playwright (never a browser of Playwright's own download)."""
    return p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])


def _run(*extra: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """One headless run with a throw-away profile, so parallel runs never share one."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=5000", *extra],
                              capture_output=True, text=True, timeout=timeout, env={**os.environ, "HOME": profile})


def dump_dom(url: str, timeout: float = 120) -> str:
    out = _run("--dump-dom", url, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def screenshot(url: str, path: Path, width: int = 1600, height: int = 1000, timeout: float = 120) -> Path:
    out = _run(f"--screenshot={path}", f"--window-size={width},{height}", url, timeout=timeout)
    assert out.returncode == 0 and path.is_file() and path.stat().st_size > 1000, out.stderr[-2000:]
    return path
