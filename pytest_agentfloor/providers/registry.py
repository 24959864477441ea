"""Which module serves which provider name; a module is imported only when a model uses it.

Apart from `base` so that `pool` and `limits` (which wrap providers) import `base` without
`base` importing them back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Provider

if TYPE_CHECKING:
    from ..config import ModelConfig


_REGISTRY: dict[str, str] = {
    "scripted": "pytest_agentfloor.providers.scripted:ScriptedProvider",
    "openai": "pytest_agentfloor.providers.openai_chat:OpenAIProvider",
    "ollama": "pytest_agentfloor.providers.ollama_chat:OllamaProvider",
    "local": "pytest_agentfloor.providers.local:LocalProvider",
    "recorded": "pytest_agentfloor.providers.recorded:RecordedProvider",
}


def make_provider(config: "ModelConfig", *, turns: int | None = None) -> Provider:
    """Import the provider's module only when a configuration uses it.

    `turns`: the session's longest episode in model turns (`context.session_turns`), for
    providers that size a context window (`episode_turns`).
    """
    import importlib

    if config.is_pool:  # replicas of one model: one provider per URL behind a balancer
        from .pool import make_pool

        return make_pool(config, lambda replica: make_provider(replica, turns=turns))
    target = _REGISTRY.get(config.provider)
    if target is None:
        raise NotImplementedError(f"provider {config.provider!r} is not available yet")
    module, _, cls = target.partition(":")
    provider: Provider = getattr(importlib.import_module(module), cls)(config)
    if turns and hasattr(provider, "episode_turns"):
        provider.episode_turns = turns
    return provider
