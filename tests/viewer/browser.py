"""Headless Chromium for the viewer's browser tests: the binary, a DOM dump, a screenshot.

Debian's ``chromium`` (or ``chromium-headless-shell``) runs the page's script; ``--dump-dom``
returns the DOM after it ran. Playwright, when installed, drives the same binary for clicks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")


def chromium() -> str:
    """The browser binary, or skip the test with the command that installs one."""
    for name in (os.environ.get("AGENTFLOOR_CHROMIUM", ""), *CANDIDATES):
        path = shutil.which(name) if name else None
        if path:
            return path
    pytest.skip("no headless Chromium (apt-get install -y chromium)")


def _args(*extra: str) -> list[str]:
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--virtual-time-budget=5000", *extra]


def dump_dom(url: str, timeout: float = 120) -> str:
    out = subprocess.run(_args("--dump-dom", url), capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def screenshot(url: str, path: Path, width: int = 1600, height: int = 1000, timeout: float = 120) -> Path:
    out = subprocess.run(_args(f"--screenshot={path}", f"--window-size={width},{height}", url),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0 and path.is_file() and path.stat().st_size > 1000, out.stderr[-2000:]
    return path
