"""Ollama provider: the official `ollama` client on the native /api/chat endpoint.

The native endpoint (not Ollama's OpenAI-compatible one) is used because only it honours
`think` and reports `done_reason`, so a reply truncated at `num_predict` is recognisable.
Messages arrive in OpenAI chat format and are translated both ways here: Ollama wants tool
arguments as objects and tool results tagged with the tool's name rather than a call id.

Ollama parses tool calls on the server, so a model's invalid JSON never reaches us as a
string: depending on the Ollama version it is either returned as plain content or answered
with an HTTP 500 "error parsing tool call", which is mapped to MalformedReply (a model
failure that a retry at fixed temperature and seed would only repeat).
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import httpx
import ollama
import pydantic

from ..config import strip_credentials
from .base import (MalformedReply, ProviderError, Reply, ToolCallOut, busy_seconds, calls_so_far, completion_cap,
                   with_retries)

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..suite.schema import ResolvedCase

DEFAULT_HOST = "http://localhost:11434"


def _backoff_sleep(seconds: float) -> None:
    # Looked up at call time so tests can monkeypatch time.sleep; with_retries' default is
    # bound when base.py is imported.
    time.sleep(seconds)


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def _arguments_object(arguments: Any) -> dict[str, Any]:
    """OpenAI-style arguments (a JSON string) as the object Ollama requires.

    Arguments that are not a JSON object (a malformed call the episode already flagged)
    become {}: Ollama cannot carry them, and the tool result that follows says what went wrong.
    """
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def to_ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Translate OpenAI chat messages to Ollama's: object arguments, `tool_name` on tool results."""
    names_by_id: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            content = json.dumps(content)
        msg: dict[str, Any] = {"role": role, "content": content or ""}
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc.get("function") or {}
                name = fn.get("name", "")
                if tc.get("id"):
                    names_by_id[tc["id"]] = name
                calls.append({"function": {"name": name, "arguments": _arguments_object(fn.get("arguments"))}})
            msg["tool_calls"] = calls
        elif role == "tool":
            name = m.get("name") or names_by_id.get(m.get("tool_call_id") or "")
            if name:
                msg["tool_name"] = name
        out.append(msg)
    return out


class OllamaProvider:
    """Native Ollama chat with `tools=`; tool arguments are re-serialised to JSON strings."""

    def __init__(self, config: "ModelConfig"):
        self.config = config
        self.host = config.base_url or DEFAULT_HOST
        self.endpoint = strip_credentials(self.host)
        self._secret: str | None = None
        headers: dict[str, str] = {}
        if config.api_key_env:  # e.g. Ollama behind an authenticating proxy, or ollama.com
            value = os.environ.get(config.api_key_env)
            if not value:
                raise ProviderError(self.endpoint,
                                    f"environment variable {config.api_key_env} (api_key_env) is not set or empty",
                                    transient=False)
            self._secret = value
            headers["Authorization"] = f"Bearer {value}"
        self._client = ollama.Client(host=self.host, timeout=config.timeout_s, headers=headers)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase | None" = None) -> Reply:
        cfg = self.config
        options: dict[str, Any] = {"temperature": cfg.temperature, "num_predict": completion_cap(cfg, case)}
        if cfg.seed is not None:
            options["seed"] = cfg.seed
        request: dict[str, Any] = {
            "model": cfg.model,
            "messages": to_ollama_messages(messages),
            "tools": tools or None,
            "stream": False,
            "options": options,
        }
        if cfg.think is not None:
            request["think"] = cfg.think
        first_id = calls_so_far(messages)
        return with_retries(lambda: self._once(request, first_id), retries=cfg.retries,
                            endpoint=self.endpoint, sleep=_backoff_sleep)

    def close(self) -> None:
        self._client.close()

    # -- one attempt --------------------------------------------------------------------------
    def _once(self, request: dict[str, Any], first_id: int) -> Reply:
        start = time.perf_counter()
        error: Exception | None = None
        try:
            resp = self._client.chat(**request)
        except ollama.ResponseError as exc:
            code = exc.status_code
            text = " ".join(str(exc.error).split())[:300]
            if "error parsing tool call" in text:
                error = MalformedReply(self._redact(f"Ollama could not parse the model's tool call: {text}"))
            else:
                error = self._error(f"HTTP {code}: {text}", code == 429 or code >= 500)
        except httpx.TimeoutException:
            error = self._error(f"timed out after {self.config.timeout_s:g}s", True)
        except httpx.RemoteProtocolError:
            error = self._error("connection dropped by the server before a response", True)
        except (httpx.TransportError, ConnectionError) as exc:
            # The client turns httpx.ConnectError into a bare ConnectionError with a generic
            # "is Ollama running?" text; the real reason is on the suppressed context.
            root = _root_cause(exc)
            detail = "connection refused" if "refused" in str(root).lower() else \
                f"connection failed ({type(root).__name__}: {str(root)[:200]})"
            error = self._error(f"{detail} (is Ollama running at {self.endpoint}?)", True)
        except pydantic.ValidationError as exc:
            if any("tool_calls" in map(str, err.get("loc", ())) for err in exc.errors()):
                error = MalformedReply(f"unreadable tool calls in the reply: {_first_error(exc)}")
            else:
                error = self._error(f"unreadable response: {_first_error(exc)}", False)
        except json.JSONDecodeError as exc:
            error = self._error(f"response is not JSON ({exc.msg})", False)
        if error is not None:
            # Raised outside the except block so the client's exception (which holds the
            # request, headers included) is not even reachable through __context__.
            raise error
        latency = time.perf_counter() - start
        return self._parse(resp, latency, first_id)

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _error(self, cause: str, transient: bool) -> ProviderError:
        return ProviderError(self.endpoint, self._redact(cause), transient=transient)

    def _parse(self, resp: "ollama.ChatResponse", latency: float, first_id: int) -> Reply:
        message = resp.message
        calls: list[ToolCallOut] = []
        for i, tc in enumerate(message.tool_calls or []):
            fn = tc.function
            if not fn.name:
                raise MalformedReply(f"tool call {i} has no function name")
            cid = getattr(tc, "id", None)  # newer servers may send ids; the client model may drop them
            calls.append(ToolCallOut(id=cid if isinstance(cid, str) and cid else f"call_{first_id + i}",
                                     name=fn.name, arguments=json.dumps(dict(fn.arguments))))
        if resp.done_reason == "length":
            finish = "length"
        elif calls:
            finish = "tool_calls"
        else:
            finish = "stop"
        return Reply(
            content=message.content or None,
            tool_calls=calls,
            finish_reason=finish,
            tokens_in=resp.prompt_eval_count or 0,
            tokens_out=resp.eval_count or 0,
            latency_s=latency,
            # prompt evaluation plus generation, in ns: the server's work, not the time queued
            busy_s=busy_seconds(resp.prompt_eval_duration, resp.eval_duration, scale=1e-9),
        )


def _first_error(exc: pydantic.ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg', '')}"[:200]
