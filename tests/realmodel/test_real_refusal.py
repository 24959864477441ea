"""Issue 27 point 14 against the real llama-server: when it refuses to parse the model's output into
tool calls, the provider asks for the same output as text (/apply-template + /completion). That
path must give the model's own words for the very prompt the chat request rendered, and read the
calls in them as the server would have."""

from __future__ import annotations

import json

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.local.server import LocalServer
from pytest_agentfloor.probe import probe_messages, probe_tools
from pytest_agentfloor.providers.local import LocalProvider

pytestmark = pytest.mark.realmodel


def test_the_raw_text_is_what_the_chat_request_would_have_parsed(qwen_server: LocalServer) -> None:
    prov = LocalProvider(ModelConfig(name="raw", provider="local", base_url=qwen_server.openai_url,
                                     max_tokens=128, timeout_s=120, retries=0, temperature=0.0, seed=7))
    try:
        chat = prov.complete(probe_messages(), probe_tools(), case=None)
        request = {"messages": probe_messages(), "tools": probe_tools(), "tool_choice": "auto", "temperature": 0.0,
                   "seed": 7, prov._cap_field: 128}
        raw = prov._raw_text(request, "refused", 0)
    finally:
        prov.close()
    assert chat.tool_calls, chat  # the shipped template's call format, parsed by the server
    assert raw.refusal and raw.refusal.startswith("refused") and raw.tokens_out > 0
    # the bare objects the template asks for, read as the server read them
    assert [(c.name, json.loads(c.arguments)) for c in raw.tool_calls] == \
        [(c.name, json.loads(c.arguments)) for c in chat.tool_calls]
    assert raw.finish_reason == "tool_calls"
