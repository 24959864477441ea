"""A fault-injecting HTTP proxy between the harness and a real model server (stdlib, 127.0.0.1).

Each POST takes the next fault from a queue (or `default`), and either answers by itself or
forwards to the upstream server and passes (or rewrites) its answer:

- ``"pass"``: forward as is;
- ``("status", code)``: answer `code` with an OpenAI-shaped error body, upstream not contacted;
- ``"drop"``: close the connection without a response;
- ``("stall", seconds)``: say nothing for `seconds` (bounded, interrupted on stop), then close;
- ``"bad_args"``: forward, then replace ``tool_calls[0].function.arguments`` by invalid JSON
  (a reply without calls gets one such call added, so the fault is always injected);
- ``"no_name"``: forward, then remove ``tool_calls[0].function.name`` (likewise).

Everything is bounded: the upstream request has a timeout, stalls have a cap, handler threads
are daemons with a socket timeout, and `stop()` interrupts stalls and joins the server thread.
"""

from __future__ import annotations

import http.client
import json
from http.server import BaseHTTPRequestHandler
from typing import Any, Union
from urllib.parse import urlsplit

from tests.fakeserver import LoopbackServer

Fault = Union[str, tuple[str, Any]]
BAD_ARGUMENTS = '{"record_id": "INV-'  # cut off mid-string: not JSON


class FaultProxy(LoopbackServer):
    owner_attr = "proxy"
    thread_name = "fault-proxy"

    def __init__(self, upstream: str, *, default: Fault = "pass", upstream_timeout: float = 120.0,
                 max_stall_s: float = 30.0):
        super().__init__()
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the fault proxy only forwards to a loopback upstream")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.default = default
        self.upstream_timeout = upstream_timeout
        self.max_stall_s = max_stall_s
        self.log: list[tuple[str, str]] = []  # (fault, what happened), one per POST
        self.usage: list[tuple[int, int]] = []  # (prompt, completion) tokens of each 200 passed on

    # -- scripting ------------------------------------------------------------------------
    def reset(self, default: Fault = "pass") -> None:
        with self._lock:
            self._queue.clear()
            self.log.clear()
            self.usage.clear()
            self.default = default

    def _next(self) -> Fault:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _note(self, fault: Fault, what: str) -> None:
        with self._lock:
            self.log.append((fault if isinstance(fault, str) else f"{fault[0]}:{fault[1]}", what))

    @property
    def faults_seen(self) -> list[str]:
        with self._lock:
            return [f for f, _ in self.log]

    # -- upstream -------------------------------------------------------------------------
    def forward(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, str]:
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=self.upstream_timeout)
        try:
            keep = {k: v for k, v in headers.items() if k.lower() in ("content-type", "authorization", "accept")}
            conn.request(method, path, body=body or None, headers=keep)
            resp = conn.getresponse()
            return resp.status, resp.read(), resp.getheader("Content-Type", "application/json")
        finally:
            conn.close()


def _ensure_call(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        calls = [{"id": "call_injected", "type": "function",
                  "function": {"name": "lookup_record", "arguments": "{}"}}]
        message["tool_calls"] = calls
    return calls[0]


def rewrite(data: bytes, fault: str) -> tuple[bytes, str]:
    """The upstream reply with its first tool call broken as `fault` says."""
    body = json.loads(data)
    choice = body["choices"][0]
    message = choice.setdefault("message", {})
    had_call = bool(message.get("tool_calls"))
    call = _ensure_call(message)
    fn = call.setdefault("function", {})
    if fault == "bad_args":
        fn["arguments"] = BAD_ARGUMENTS
    else:
        fn.pop("name", None)
    choice["finish_reason"] = "tool_calls"
    what = f"{fault} on the model's own call" if had_call else f"{fault} on an added call"
    return json.dumps(body).encode(), what


class _Handler(BaseHTTPRequestHandler):
    proxy: FaultProxy
    protocol_version = "HTTP/1.0"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        try:
            code, data, ctype = self.proxy.forward("GET", self.path, b"", dict(self.headers))
        except OSError as exc:
            code, data, ctype = 502, json.dumps({"error": str(exc)}).encode(), "application/json"
        self._send(code, data, ctype)

    def do_POST(self) -> None:
        proxy = self.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault = proxy._next()
        kind = fault if isinstance(fault, str) else fault[0]
        if kind == "status":
            code = int(fault[1])  # type: ignore[index]
            proxy._note(fault, f"answered {code}")
            err = {"error": {"message": f"injected HTTP {code}", "type": "injected", "code": code}}
            self._send(code, json.dumps(err).encode(), "application/json")
            return
        if kind == "drop":
            proxy._note(fault, "dropped the connection")
            self.close_connection = True
            return
        if kind == "stall":
            seconds = min(float(fault[1]), proxy.max_stall_s)  # type: ignore[index]
            proxy._note(fault, f"stalled {seconds:g}s")
            proxy._stop.wait(seconds)
            self.close_connection = True
            return
        try:
            code, data, ctype = proxy.forward("POST", self.path, body, dict(self.headers))
        except OSError as exc:
            proxy._note(fault, f"upstream failed: {exc}")
            self._send(502, json.dumps({"error": {"message": f"proxy: upstream failed: {exc}"}}).encode(),
                       "application/json")
            return
        what = f"forwarded, upstream {code}"
        if code == 200:
            try:
                usage = json.loads(data).get("usage") or {}
                with proxy._lock:
                    proxy.usage.append((int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))))
            except (ValueError, AttributeError):
                pass
        if kind in ("bad_args", "no_name") and code == 200:
            data, what = rewrite(data, kind)
        proxy._note(fault, what)
        self._send(code, data, ctype)

    def _send(self, code: int, data: bytes, ctype: str) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


FaultProxy.handler_class = _Handler
