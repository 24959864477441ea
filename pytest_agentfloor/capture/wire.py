"""What a captured request asked and what its reply said, read from the bytes on the wire.

Two APIs: OpenAI chat completions (JSON, or server-sent events when ``stream`` is true) and
Ollama ``/api/chat`` (JSON, or one JSON object per line; Ollama streams unless ``stream`` is
false). The proxy forwards the bytes unchanged; these functions only read them for the record,
and never raise on a body they cannot read (the record then says so in ``reply.error``).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import Any

OPENAI = "openai"
OLLAMA = "ollama"
#: request fields kept as the call's messages and tools; the rest (temperature, max_tokens, ...) are params
_SPLIT = ("messages", "tools", "model", "stream")


def api_of(path: str) -> str | None:
    """The API a forwarded path speaks (None: passed through, not captured)."""
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith("/chat/completions"):
        return OPENAI
    if bare.endswith("/api/chat"):
        return OLLAMA
    return None


def read_request(body: bytes) -> dict[str, Any]:
    """{model, stream, messages, tools, params} of a chat request (empty fields when it is not JSON)."""
    try:
        data = json.loads(body) if body else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {"model": None, "stream": None, "messages": [], "tools": [], "params": {},
                "error": "request body is not JSON"}
    if not isinstance(data, dict):
        return {"model": None, "stream": None, "messages": [], "tools": [], "params": {},
                "error": "request body is not a JSON object"}
    return {"model": data.get("model"), "stream": data.get("stream"),
            "messages": data.get("messages") or [], "tools": data.get("tools") or [],
            "params": {k: v for k, v in data.items() if k not in _SPLIT}}


def decoded(body: bytes, encoding: str | None) -> bytes:
    """The body without its Content-Encoding (gzip, deflate); unknown encodings are left as they are."""
    enc = (encoding or "").strip().lower()
    try:
        if enc in ("gzip", "x-gzip"):
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if enc == "deflate":
            try:
                return zlib.decompress(body)
            except zlib.error:
                return zlib.decompress(body, -zlib.MAX_WBITS)
    except zlib.error:
        return body
    return body


def _args(value: Any) -> Any:
    """Tool-call arguments as an object where they are JSON, else the string as sent."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _empty() -> dict[str, Any]:
    return {"text": None, "tool_calls": [], "finish_reason": None, "model": None, "tokens_in": None,
            "tokens_out": None, "error": None}


def _openai_message(out: dict[str, Any], data: dict[str, Any]) -> None:
    out["model"] = data.get("model")
    choice = (data.get("choices") or [{}])[0] or {}
    msg = choice.get("message") or {}
    out["text"] = msg.get("content")
    out["finish_reason"] = choice.get("finish_reason")
    for c in msg.get("tool_calls") or []:
        fn = c.get("function") or {}
        out["tool_calls"].append({"id": c.get("id"), "name": fn.get("name"), "arguments": _args(fn.get("arguments"))})
    usage = data.get("usage") or {}
    out["tokens_in"], out["tokens_out"] = usage.get("prompt_tokens"), usage.get("completion_tokens")


def _openai_stream(out: dict[str, Any], text: str) -> None:
    parts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]" or not payload:
            continue
        data = json.loads(payload)
        out["model"] = data.get("model") or out["model"]
        usage = data.get("usage") or {}
        if usage:
            out["tokens_in"], out["tokens_out"] = usage.get("prompt_tokens"), usage.get("completion_tokens")
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                parts.append(delta["content"])
            for c in delta.get("tool_calls") or []:
                slot = calls.setdefault(int(c.get("index", len(calls))), {"id": None, "name": "", "arguments": ""})
                slot["id"] = c.get("id") or slot["id"]
                fn = c.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                out["finish_reason"] = choice["finish_reason"]
    out["text"] = "".join(parts) if parts or not calls else None
    out["tool_calls"] = [{"id": c["id"], "name": c["name"], "arguments": _args(c["arguments"])}
                         for _, c in sorted(calls.items())]


def _ollama_lines(out: dict[str, Any], objs: list[dict[str, Any]]) -> None:
    parts: list[str] = []
    for data in objs:
        out["model"] = data.get("model") or out["model"]
        msg = data.get("message") or {}
        if msg.get("content"):
            parts.append(msg["content"])
        for c in msg.get("tool_calls") or []:
            fn = c.get("function") or {}
            out["tool_calls"].append({"id": c.get("id"), "name": fn.get("name"), "arguments": _args(fn.get("arguments"))})
        if data.get("done"):
            out["finish_reason"] = data.get("done_reason")
            out["tokens_in"], out["tokens_out"] = data.get("prompt_eval_count"), data.get("eval_count")
        if data.get("error"):
            out["error"] = str(data["error"])
    out["text"] = "".join(parts)


def read_reply(api: str, status: int, body: bytes, content_type: str | None) -> dict[str, Any]:
    """{text, tool_calls [{id, name, arguments}], finish_reason, model, tokens_in, tokens_out, error}."""
    out = _empty()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        out["error"] = "reply body is not UTF-8"
        return out
    try:
        if status >= 400:
            try:
                data = json.loads(text)
                err = data.get("error", data) if isinstance(data, dict) else data
                out["error"] = err.get("message", json.dumps(err)) if isinstance(err, dict) else str(err)
            except json.JSONDecodeError:
                out["error"] = text[:2000]
            return out
        ctype = (content_type or "").lower()
        if api == OPENAI:
            if "event-stream" in ctype or text.lstrip().startswith("data:"):
                _openai_stream(out, text)
            else:
                _openai_message(out, json.loads(text))
        else:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            _ollama_lines(out, [json.loads(ln) for ln in lines])
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
        out["error"] = f"reply could not be read ({type(exc).__name__}: {exc})"
    return out


def system_prompt(messages: list[Any]) -> str:
    """The request's system prompt: its leading system (or developer) messages' text, joined."""
    parts = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("system", "developer"):
            break
        parts.append(content_text(m.get("content")))
    return "\n\n".join(parts)


def content_text(content: Any) -> str:
    """A message's content as text (OpenAI's list of parts: the text parts, joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return json.dumps(content)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tool_names(tools: list[Any]) -> list[str]:
    out: list[str] = []
    for t in tools:
        if isinstance(t, dict):
            inner = t.get("function")
            fn: dict[str, Any] = inner if isinstance(inner, dict) else t
            if isinstance(fn.get("name"), str):
                out.append(fn["name"])
    return out


def is_terminal_chunk(api: str, chunk: bytes) -> bool:
    """Does this streamed chunk end the reply ([DONE], or Ollama's done: true)? The record is written
    before such a chunk reaches the agent, so an acknowledged reply is always on disk."""
    if api == OPENAI:
        return b"[DONE]" in chunk
    return b'"done":true' in chunk.replace(b" ", b"")
