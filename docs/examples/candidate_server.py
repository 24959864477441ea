"""A scripted stand-in for a small candidate model, for docs/capture.md's "Try a routing live".

    python docs/examples/candidate_server.py PORT

Serves OpenAI chat completions on 127.0.0.1:PORT (standard library only) and answers the
captured example (docs/examples/captured) the way a small model might: the router sends every
turn to the weather agent (so it is wrong on the joke), the weather agent calls get_weather with
the city it finds and then answers like production, but in other words for Oslo.
"""

from __future__ import annotations

import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The message this candidate answers a request with (content and tool_calls)."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if not body.get("tools"):
        return {"role": "assistant", "content": "weather"}
    if last.get("role") == "user":
        city = (re.findall(r"[A-Z][a-z]+", last.get("content") or "") or ["Paris"])[-1].rstrip("?")
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_0", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]}
    result = last.get("content") or ""
    text = "Snow is falling there." if result == "snow" else f"It is {result} there."
    return {"role": "assistant", "content": text}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without it each reply waits ~40 ms

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        msg = answer(body)
        out = json.dumps({"id": "chatcmpl-candidate", "object": "chat.completion", "created": int(time.time()),
                          "model": body.get("model") or "candidate", "choices": [{
                              "index": 0, "message": msg,
                              "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                          "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
