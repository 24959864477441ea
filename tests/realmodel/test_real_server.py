"""The real llama-server with the real weights: verified weights, start, health, log, stop, and
the session helpers the plugin uses to start it and hand its URL on."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.local.model_files import QWEN_05B, ensure_model, sha256_file
from pytest_agentfloor.local.server import LocalServer
from pytest_agentfloor.local.session import start_local_servers, stop_local_servers
from pytest_agentfloor.local.urls import URL_ENV, url_env
from pytest_agentfloor.probe import probe
from pytest_agentfloor.providers.registry import make_provider

from .conftest import need

pytestmark = pytest.mark.realmodel


def test_the_assembled_weights_are_the_pinned_ones() -> None:
    need(QWEN_05B)
    path = ensure_model(QWEN_05B)
    assert path.stat().st_size == QWEN_05B.size
    assert sha256_file(path) == QWEN_05B.sha256
    with path.open("rb") as fh:
        assert fh.read(4) == b"GGUF"


def test_the_server_starts_serves_the_shipped_template_and_stops(qwen_server: LocalServer) -> None:
    assert qwen_server.health()
    assert qwen_server.start_s is not None and qwen_server.start_s < 60
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    props = json.load(direct.open(qwen_server.url + "/props", timeout=10))
    assert props["chat_template_caps"]["supports_tool_calls"]
    assert "pytest-agentfloor's own chat template" in props["chat_template"]
    log = qwen_server.log_path.read_text(errors="replace")
    assert "starting:" in log and "--chat-template-file" in log


def test_stop_ends_the_process(tmp_path: Path) -> None:
    need(QWEN_05B)
    server = LocalServer(ensure_model(QWEN_05B), log_path=tmp_path / "s.log", startup_timeout=120).start()
    pid = server.process.pid
    assert server.stop() is not None and not server.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_session_helpers_start_publish_and_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need(QWEN_05B)
    env: dict[str, str] = {}
    cfg = ModelConfig(name="local", provider="local", max_tokens=256, timeout_s=120, retries=0)
    servers = start_local_servers([cfg, ModelConfig(name="oracle", provider="scripted", policy="oracle")],
                                  tmp_path / "reports", env=env)
    try:
        assert list(servers) == ["local"]
        server = servers["local"]
        assert env[url_env("local")] == env[URL_ENV] == server.openai_url
        assert (tmp_path / "reports" / "local-server.log").exists()
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        prov = make_provider(cfg)
        try:
            assert probe(prov).classification == "tool_capable"
        finally:
            prov.close()
    finally:
        stop_local_servers(servers, env)
    assert env == {} and not servers["local"].running
