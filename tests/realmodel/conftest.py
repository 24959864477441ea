"""Fixtures for tests against the embedded local model (the `local` extra).

Without the extra these tests skip, saying what is missing; with AGENTFLOOR_REQUIRE_REALMODEL=1
(as CI sets it) a missing extra fails them instead, so a broken install cannot pass as skips.
Servers are module-scoped: each test module starts the model once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from pytest_agentfloor.local.model_files import QWEN_05B, SMOLLM2_135M, ModelSpec, installed
from pytest_agentfloor.local.server import LocalServer, LocalServerError, find_binary
from pytest_agentfloor.local.session import server_for

REQUIRE_ENV = "AGENTFLOOR_REQUIRE_REALMODEL"
REPO = Path(__file__).resolve().parents[2]


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip() == "1"


def missing(spec: ModelSpec) -> str | None:
    """Why the extra cannot serve `spec` here, or None."""
    try:
        find_binary()
    except LocalServerError as exc:
        return str(exc)
    return installed(spec)


def need(spec: ModelSpec) -> None:
    reason = missing(spec)
    if reason is None:
        return
    if required():
        pytest.fail(f"{REQUIRE_ENV}=1 but the local model extra is not usable: {reason}", pytrace=False)
    pytest.skip(f"local model extra not installed ({reason})")


def serve(spec: ModelSpec, log_dir: Path) -> Iterator[LocalServer]:
    """Yield a started server for `spec` (the plugin's own `server_for`), stopping it afterwards."""
    need(spec)
    with server_for(spec, log_path=log_dir / "local-server.log") as server:
        yield server


@pytest.fixture(scope="module")
def qwen_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    yield from serve(QWEN_05B, tmp_path_factory.mktemp("qwen"))


@pytest.fixture(scope="module")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    yield from serve(SMOLLM2_135M, tmp_path_factory.mktemp("smollm2"))
