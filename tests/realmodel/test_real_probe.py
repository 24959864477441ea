"""The tool-calling probe against real servers: Qwen 0.5B (shipped template, and its stock one)
and SmolLM2-135M (a model whose template has no tools at all)."""

from __future__ import annotations

from typing import Iterator

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.local.model_files import QWEN_05B
from pytest_agentfloor.local.server import LocalServer
from pytest_agentfloor.probe import probe
from pytest_agentfloor.providers.local import LocalProvider

from .conftest import serve

pytestmark = pytest.mark.realmodel


def probe_at(server: LocalServer, max_tokens: int = 256):
    prov = LocalProvider(ModelConfig(name="probe", provider="local", base_url=server.openai_url,
                                     max_tokens=max_tokens, timeout_s=120, retries=0))
    try:
        return probe(prov)
    finally:
        prov.close()


@pytest.fixture(scope="module")
def qwen_stock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """The same weights with the template that ships inside the GGUF (no --chat-template-file)."""
    from dataclasses import replace

    yield from serve(replace(QWEN_05B, template=None), tmp_path_factory.mktemp("qwen-stock"))


def test_qwen_with_the_shipped_template_makes_a_native_call(qwen_server: LocalServer) -> None:
    res = probe_at(qwen_server)
    assert res.classification == "tool_capable", res
    assert "lookup_record" in res.detail and "CUS-4417" in res.detail


def test_qwen_with_its_stock_template_writes_the_call_as_text(qwen_stock_server: LocalServer) -> None:
    """Why the project ships a template: the stock one expects <tool_call> tags the model omits."""
    res = probe_at(qwen_stock_server)
    assert res.classification == "text_leaked", res


def test_smollm2_cannot_call_tools(smollm2_server: LocalServer) -> None:
    res = probe_at(smollm2_server, max_tokens=128)
    assert res.classification in ("no_tools", "text_leaked"), res
    assert not res.admitted
