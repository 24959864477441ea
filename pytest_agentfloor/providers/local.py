"""The embedded local model: the OpenAI-compatible provider pointed at a running `LocalServer`.

The server is started once per session on the controller (`pytest_agentfloor.local.session`),
and its URL reaches this provider, in order of precedence, from:

1. `base_url` in the model's configuration (a server you started yourself);
2. `$AGENTFLOOR_LOCAL_URL_<NAME>`, NAME being the configuration name upper-cased with every
   other character made `_` (one server per local model, when several run at once);
3. `$AGENTFLOOR_LOCAL_URL` (one local server for every local model).

Without any of these every request fails at once with a ProviderError that is not retried
(an infrastructure error of the item, with its record).

When the model's output cannot be parsed into the tool-call format its chat template announced,
llama-server answers HTTP 500 with a parse error and not the text. The OpenAI provider reads that
as the model's malformed call; here, on llama.cpp's own server, the text is asked for again
without tool parsing: the same prompt, rendered by the server (``POST /apply-template``, tools
included) and completed raw (``POST /completion``, same temperature, seed and cap). Calls in the
template's own format (one bare object per line), which the server's parser refuses when there
are two or more or one names an undeclared tool, are read from that text
(`local.template_calls`); any other reply is the model's text with no tool calls, graded by the
paper's rule for text (a leaked call, not a native one). Either way the server's refusal is in
the turn's record (`Turn.refusal`). Only when the second request fails too does the refusal
stand as the model's malformed call.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from ..local.template_calls import read_calls
from ..local.urls import url_for
from .base import (MalformedReply, ProviderError, Reply, RequestExpired, ToolCallOut, busy_seconds, call_within,
                   request_bound)
from .openai_chat import OpenAIProvider

if TYPE_CHECKING:
    from ..config import ModelConfig

class LocalProvider(OpenAIProvider):
    def __init__(self, config: "ModelConfig"):
        from ..local.model_files import spec_for

        self.local_config = config
        url = config.single_url or url_for(config.name, os.environ)
        # Without a URL the provider still constructs, and every request fails at once with a
        # non-transient ProviderError: the episode then ends as an infrastructure error that
        # leaves its record, instead of the item erroring before it has a trajectory.
        self._no_server: ProviderError | None = None
        if not url:
            self._no_server = ProviderError(
                f"local:{config.name}",
                "no local model server URL: set base_url in models.toml, or start the server "
                "(pytest_agentfloor.local.session.start_local_servers), which sets $AGENTFLOOR_LOCAL_URL",
                transient=False)
            url = "http://127.0.0.1:9/v1"  # never contacted
        update: dict[str, Any] = {"base_url": url}
        if not config.model:
            update["model"] = spec_for("").key
        super().__init__(config.model_copy(update=update))
        self._own_server = config.base_url is None
        if self._own_server:
            self.context_source = ("models.toml context_window (per slot)" if config.context_window
                                   else "the embedded server's per-slot context")
        self.context_hint = (f"raise context_window of models.{config.name} in models.toml (the embedded "
                             "server's context per parallel slot)" if config.base_url is None else self.context_hint)

    @property
    def context_window(self) -> int | None:
        """Our own server's context per slot (as `local.session.slot_context` sizes it), else models.toml's."""
        cfg = self.local_config
        if not self._own_server or cfg.context_window:
            return cfg.context_window
        from ..context import context_need
        from ..local.model_files import spec_for

        try:
            return max(spec_for(cfg.model).ctx_size, context_need(self.episode_turns, cfg.max_tokens))
        except Exception:  # an unknown model name fails at start-up, with its own message
            return None

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: Any = None, json_reply: bool = False) -> Reply:
        if self._no_server is not None:
            raise self._no_server
        return super().complete(messages, tools, case=case, json_reply=json_reply)

    def _once(self, request: dict[str, Any], first_id: int) -> Reply:
        try:
            return super()._once(request, first_id)
        except MalformedReply as exc:
            if not getattr(exc, "server_refused", False):
                raise
            try:
                return self._raw_text(request, str(exc), first_id)
            except Exception:  # the server cannot say what the model wrote: its refusal stands
                raise exc from None

    def _raw_text(self, request: dict[str, Any], refusal: str, first_id: int) -> Reply:
        """The model's output for `request` as plain text: the server's own rendering of the prompt,
        completed without tool parsing (llama.cpp's /apply-template and /completion). Calls written
        in the chat template's own format, which the server's parser refuses beyond one declared
        call, are read from it (`local.template_calls`); anything else stays text."""
        import httpx

        root = self.base_url.rstrip("/")
        root = root[:-3] if root.endswith("/v1") else root
        bound = request_bound(self.config.timeout_s)
        if bound <= 0:
            raise RequestExpired("no time left")
        start = time.perf_counter()

        def ask() -> tuple[str, dict[str, Any]]:
            with httpx.Client(timeout=bound, trust_env=not self.direct) as client:
                rendered = client.post(f"{root}/apply-template", json={
                    k: request[k] for k in ("messages", "tools", "tool_choice") if k in request})
                rendered.raise_for_status()
                prompt = rendered.json()["prompt"]
                body = {"prompt": prompt, "n_predict": request.get(self._cap_field),
                        "temperature": request.get("temperature"), "cache_prompt": True}
                if "seed" in request:
                    body["seed"] = request["seed"]
                done = client.post(f"{root}/completion", json=body)
                done.raise_for_status()
                return prompt, done.json()

        _, out = call_within(ask, bound)
        content = out.get("content")
        if not isinstance(content, str):
            raise ValueError("no text in the /completion answer")
        last = request["messages"][-1] if request.get("messages") else {}
        if last.get("role") == "assistant" and isinstance(last.get("content"), str):
            content = last["content"] + content  # a prefilled reply: the model's text continues it
        stopped = "length" if out.get("stop_type") == "limit" else "stop"
        calls: list[ToolCallOut] = []
        read = read_calls(content) if request.get("tools") else None
        if read is not None:
            content, pairs = read
            calls = [ToolCallOut(id=f"call_{first_id + i}", name=n, arguments=a) for i, (n, a) in enumerate(pairs)]
            stopped = "tool_calls"
            refusal += ("; the model's text is the chat template's call format, read as "
                        f"{len(calls)} call(s) (asked for again without the server's tool parsing)")
        else:
            refusal += "; the content is the model's text, asked for again without tool parsing"
        timings = out.get("timings")
        busy = busy_seconds(timings.get("prompt_ms"), timings.get("predicted_ms"), scale=1e-3) \
            if isinstance(timings, dict) else None
        return Reply(content=content, tool_calls=calls, finish_reason=stopped,
                     tokens_in=_count(out.get("tokens_evaluated")), tokens_out=_count(out.get("tokens_predicted")),
                     latency_s=time.perf_counter() - start, busy_s=busy, refusal=refusal)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
