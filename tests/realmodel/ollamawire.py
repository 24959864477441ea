"""Ollama's /api/chat in front of the embedded model's OpenAI endpoint (stdlib, 127.0.0.1), for the tests.

llama-server speaks the OpenAI wire only, and no Ollama runs here; an agent written with the official
`ollama` client still needs a real model behind its /api/chat. This adapter translates each request
to one chat completion of the embedded model and the answer back to Ollama's shape (non-streamed: one
JSON object; streamed: the message in one line, then the `done` line), so the model's behaviour is
real and only the wire is translated. What it does not do: Ollama's own options beyond
`temperature` and `num_predict`, images, `format`, thinking.
"""

from __future__ import annotations

import http.client
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.fakeserver import LoopbackServer


def to_openai(body: dict[str, Any]) -> dict[str, Any]:
    """An /api/chat request as a chat completion request."""
    messages, pending = [], []
    for n, m in enumerate(body.get("messages") or []):
        m = dict(m)
        if m.get("tool_calls"):
            calls = []
            for k, c in enumerate(m["tool_calls"]):
                fn = c.get("function") or {}
                cid = f"call_{n}_{k}"
                pending.append(cid)
                calls.append({"id": cid, "type": "function", "function": {
                    "name": fn.get("name"), "arguments": json.dumps(fn.get("arguments") or {})}})
            m["tool_calls"] = calls
        if m.get("role") == "tool":
            m.pop("tool_name", None)
            m["tool_call_id"] = pending.pop(0) if pending else "call_0"
        messages.append({k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id")})
    options = body.get("options") or {}
    out: dict[str, Any] = {"model": body.get("model"), "messages": messages, "stream": False}
    if body.get("tools"):
        out["tools"] = body["tools"]
    if "temperature" in options:
        out["temperature"] = options["temperature"]
    if "num_predict" in options:
        out["max_tokens"] = options["num_predict"]
    return out


def to_ollama(reply: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat completion as /api/chat's final (done) object."""
    choice = reply["choices"][0]
    msg = choice.get("message") or {}
    out_msg: dict[str, Any] = {"role": "assistant", "content": msg.get("content") or ""}
    calls = []
    for c in msg.get("tool_calls") or []:
        fn = c.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = {}
        calls.append({"function": {"name": fn.get("name"), "arguments": args}})
    if calls:
        out_msg["tool_calls"] = calls
    usage = reply.get("usage") or {}
    return {"model": model, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "message": out_msg,
            "done": True, "done_reason": "stop" if choice.get("finish_reason") != "length" else "length",
            "prompt_eval_count": usage.get("prompt_tokens", 0), "eval_count": usage.get("completion_tokens", 0)}


class OllamaWire(LoopbackServer):
    owner_attr = "adapter"
    thread_name = "ollama-wire"

    def __init__(self, openai_root: str, timeout_s: float = 300.0):
        super().__init__()
        parts = urlsplit(openai_root)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the adapter only forwards to a loopback server")
        self.host, self.port, self.root = parts.hostname, parts.port or 80, parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self.calls = 0

    def complete(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            conn.request("POST", self.root + "/chat/completions", body=json.dumps(request),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()


class _Handler(BaseHTTPRequestHandler):
    adapter: OllamaWire
    protocol_version = "HTTP/1.1"
    timeout = 300

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.split("?")[0] != "/api/chat":
            return self._json(404, {"error": f"{self.path}: only /api/chat is served"})
        self.adapter.calls += 1
        code, reply = self.adapter.complete(to_openai(body))
        if code != 200:
            return self._json(code, {"error": json.dumps(reply)[:500]})
        done = to_ollama(reply, str(body.get("model")))
        if body.get("stream") is False:
            return self._json(200, done)
        first = {**done, "done": False, "message": done["message"]}
        for key in ("done_reason", "prompt_eval_count", "eval_count"):
            first.pop(key, None)
        last = {**done, "message": {"role": "assistant", "content": ""}}
        data = (json.dumps(first) + "\n" + json.dumps(last) + "\n").encode()
        self._send(200, data, "application/x-ndjson")

    def _json(self, code: int, obj: Any) -> None:
        self._send(code, json.dumps(obj).encode(), "application/json")

    def _send(self, code: int, data: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


OllamaWire.handler_class = _Handler
