"""The one protocol every provider speaks, and the retry policy they share.

Messages are OpenAI-style chat dicts (role, content, tool_calls, tool_call_id); providers
translate to and from their own wire format. Tool-call arguments come back as the raw JSON
string the model produced, so the episode can tell a malformed call from a valid one.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..suite.schema import ResolvedCase

T = TypeVar("T")


@dataclass
class ToolCallOut:
    id: str
    name: str
    arguments: str  # raw JSON text as produced by the model


@dataclass
class Reply:
    content: str | None
    tool_calls: list[ToolCallOut] = field(default_factory=list)
    finish_reason: str = "stop"  # "stop", "tool_calls" or "length" (truncated at the cap)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    #: the server's own processing time for this request (llama.cpp ``timings``, Ollama durations),
    #: without time spent queued behind other requests; None when the server does not report it
    busy_s: float | None = None
    reasoning_tokens: int | None = None  # where the server reports them (part of tokens_out)


def busy_seconds(*parts: object, scale: float) -> float | None:
    """Sum of server-reported durations (times ``scale`` to seconds), or None unless all are sane numbers."""
    vals = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    if len(vals) != len(parts) or any(v != v or v < 0 for v in vals):
        return None
    return float(sum(vals)) * scale


class ProviderError(Exception):
    """The endpoint failed; `transient` errors are retried, the rest end the episode at once."""

    def __init__(self, endpoint: str, cause: str, *, transient: bool):
        self.endpoint = endpoint
        self.cause = cause
        self.transient = transient
        super().__init__(f"{endpoint}: {cause}")


class MalformedReply(Exception):
    """The server answered, but its tool-call payload could not be read (a model failure)."""


class Provider(Protocol):
    config: "ModelConfig"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase") -> Reply: ...

    def close(self) -> None: ...


def completion_cap(config: "ModelConfig", case: Any) -> int:
    """The model's completion cap, lowered where the case caps its call (an intent router: 10 tokens)."""
    cap = getattr(case, "max_tokens", None)
    return min(config.max_tokens, cap) if cap else config.max_tokens


def calls_so_far(messages: list[dict[str, Any]]) -> int:
    """Tool calls already in the conversation: generated call ids continue from here."""
    return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")


def with_retries(fn: Callable[[], T], *, retries: int, endpoint: str,
                 backoff_s: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call `fn`, retrying transient ProviderErrors with jittered exponential backoff."""
    attempt = 0
    while True:
        try:
            return fn()
        except ProviderError as exc:
            if not exc.transient or attempt >= retries:
                if attempt:
                    raise ProviderError(exc.endpoint, f"{exc.cause} (after {attempt + 1} attempts)",
                                        transient=exc.transient) from exc
                raise
            delay = backoff_s * (2**attempt) * (0.5 + random.random() / 2)
            sleep(delay)
            attempt += 1


_REGISTRY: dict[str, str] = {
    "scripted": "pytest_agentfloor.providers.scripted:ScriptedProvider",
    "openai": "pytest_agentfloor.providers.openai_chat:OpenAIProvider",
    "ollama": "pytest_agentfloor.providers.ollama_chat:OllamaProvider",
    "local": "pytest_agentfloor.providers.local:LocalProvider",
}


def make_provider(config: "ModelConfig") -> Provider:
    """Import the provider's module only when a configuration uses it."""
    import importlib

    target = _REGISTRY.get(config.provider)
    if target is None:
        raise NotImplementedError(f"provider {config.provider!r} is not available yet")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(config)
