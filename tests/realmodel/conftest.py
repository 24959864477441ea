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

from pytest_agentfloor.local.model_files import QWEN_05B, SMOLLM2_135M, ModelSpec, ensure_model, installed
from pytest_agentfloor.local.server import LocalServer, LocalServerError, find_binary, template_path

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


def start_server(spec: ModelSpec, log_dir: Path, **kw) -> LocalServer:
    need(spec)
    model = ensure_model(spec)
    template = template_path(spec.template) if spec.template else None
    server = LocalServer(model, template=template, log_path=log_dir / "local-server.log",
                         ctx_size=spec.ctx_size, alias=spec.key, startup_timeout=120, **kw)
    return server.start()


@pytest.fixture(scope="module")
def qwen_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    server = start_server(QWEN_05B, tmp_path_factory.mktemp("qwen"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    server = start_server(SMOLLM2_135M, tmp_path_factory.mktemp("smollm2"))
    try:
        yield server
    finally:
        server.stop()
