"""Proxies (issue 20): loopback endpoints never go through HTTP(S)_PROXY / ALL_PROXY; other
endpoints follow the user's proxy settings.

The 'proxy' is a tiny loopback HTTP server that records what reaches it and answers like a
model server. The remote endpoint is `model.invalid` (a reserved name that never resolves):
it can only be reached through the proxy, so nothing leaves this machine.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from pytest_agentfloor.config import ModelConfig, is_loopback
from pytest_agentfloor.providers.ollama_chat import OllamaProvider
from pytest_agentfloor.providers.openai_chat import OpenAIProvider
from tests.fakeserver import FakeModelServer

USER = [{"role": "user", "content": "hi"}]


class RecordingProxy:
    """Records every request line (absolute-form, as clients send to an HTTP proxy) and answers it."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                owner.seen.append(f"{self.command} {self.path}")
                if "/api/chat" in self.path:
                    body: dict[str, Any] = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": True,
                                            "message": {"role": "assistant", "content": "via proxy"}}
                elif "/chat/completions" in self.path:
                    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "via proxy"}}]}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def do_CONNECT(self) -> None:
                owner.seen.append(f"CONNECT {self.path}")
                self.send_response(403)
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.httpd.server_address[1]


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingProxy]:
    p = RecordingProxy()
    p.thread.start()
    for var in ("NO_PROXY", "no_proxy", "OLLAMA_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(var, p.url)
    yield p
    p.httpd.shutdown()
    p.httpd.server_close()


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


def openai_at(url: str) -> OpenAIProvider:
    return OpenAIProvider(ModelConfig(name="m", provider="openai", model="tiny", base_url=url, retries=0,
                                      timeout_s=5))


def ollama_at(url: str) -> OllamaProvider:
    return OllamaProvider(ModelConfig(name="m", provider="ollama", model="tiny", base_url=url, retries=0,
                                      timeout_s=5, context_window=4096))


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_loopback_endpoints_bypass_every_proxy_variable(proxy: RecordingProxy, server: FakeModelServer,
                                                        host: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    assert openai_at(f"http://{host}:{port}/v1").complete(USER, [], case=None).content == "done"
    assert ollama_at(f"http://{host}:{port}").complete(USER, [], case=None).content == "done"
    assert proxy.seen == []
    assert [r.path for r in server.received] == ["/v1/chat/completions", "/api/chat"]


def test_other_endpoints_follow_the_users_proxy(proxy: RecordingProxy, server: FakeModelServer) -> None:
    assert openai_at("http://model.invalid:8000/v1").complete(USER, [], case=None).content == "via proxy"
    assert ollama_at("http://model.invalid:11434").complete(USER, [], case=None).content == "via proxy"
    assert proxy.seen == ["POST http://model.invalid:8000/v1/chat/completions",
                          "POST http://model.invalid:11434/api/chat"]
    assert server.received == []


@pytest.mark.parametrize("url, expected", [
    ("http://localhost:11434", True), ("http://127.0.0.1:8080/v1", True), ("http://127.8.9.10", True),
    ("http://[::1]:11434", True), ("http://LOCALHOST.", True), ("http://api.localhost/v1", True),
    ("localhost:11434", True), ("http://10.0.0.5:11434", False), ("https://api.openai.com/v1", False),
    ("http://127.0.0.1.example.com", False), ("http://[::2]", False), ("http://[bad", False),
])
def test_is_loopback(url: str, expected: bool) -> None:
    assert is_loopback(url) is expected
