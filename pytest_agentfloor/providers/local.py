"""The embedded local model: the OpenAI-compatible provider pointed at a running `LocalServer`.

The server is started once per session on the controller (`pytest_agentfloor.local.session`),
and its URL reaches this provider, in order of precedence, from:

1. `base_url` in the model's configuration (a server you started yourself);
2. `$AGENTFLOOR_LOCAL_URL_<NAME>`, NAME being the configuration name upper-cased with every
   other character made `_` (one server per local model, when several run at once);
3. `$AGENTFLOOR_LOCAL_URL` (one local server for every local model).

Without any of these every request fails at once with a ProviderError that is not retried
(an infrastructure error of the item, with its record).

One classification is specific to llama.cpp: when the model's output cannot be parsed into the
tool-call format its chat template announced, llama-server answers HTTP 500 with a parse error.
That is the model's failure (a malformed call, F2), not the server's, so it is raised as
MalformedReply instead of being retried as a transient 5xx.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ..local.urls import url_for
from .base import MalformedReply, ProviderError, Reply
from .openai_chat import OpenAIProvider

if TYPE_CHECKING:
    from ..config import ModelConfig

# llama-server's words when the model's output does not parse in the template's tool-call format
_PARSE_FAILURE = re.compile(r"does not match the expected [\w-]+ format|failed to parse tool call", re.IGNORECASE)


class LocalProvider(OpenAIProvider):
    def __init__(self, config: "ModelConfig"):
        from ..local.model_files import spec_for

        self.local_config = config
        url = config.base_url or url_for(config.name, os.environ)
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
        except ProviderError as exc:
            if exc.cause.startswith("HTTP 500") and _PARSE_FAILURE.search(exc.cause):
                raise MalformedReply(f"the server could not parse the model's tool call: {exc.cause}") from None
            raise
