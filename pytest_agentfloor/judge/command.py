"""A judge for the commands that run outside pytest (regrade, judge-audit).

The judge is named as in a pytest run (`--judge MODEL`, a model of models.toml); its cache is
the report dir's judge-cache.jsonl, shared with the benchmark sessions. An embedded local
judge gets its server only on the first cache miss, so a fully cached re-grade starts nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .cache import CACHE_FILE, CACHE_MODES, JudgeCache
from .client import Judge


class JudgeSetupError(Exception):
    """The judge cannot be set up (unknown model, bad configuration or cache mode)."""


def open_judge(name: str, models_file: Path, report_dir: Path, cache_mode: str = "readwrite") -> tuple[Judge, list[Any]]:
    """(judge, servers it started, to stop at the end: the list fills on the first request)."""
    from ..config import ConfigError, load_models

    if cache_mode not in CACHE_MODES:
        raise JudgeSetupError(f"--judge-cache: expected one of {', '.join(CACHE_MODES)}, got {cache_mode!r}")
    try:
        models = load_models(models_file if models_file.exists() else None)
    except ConfigError as exc:
        raise JudgeSetupError(str(exc)) from None
    if name not in models:
        where = str(models_file) if models_file.exists() else f"built-ins only (no {models_file})"
        raise JudgeSetupError(f"--judge: unknown model {name!r} ({where}); configured: {', '.join(sorted(models))}")
    config = models[name]
    if config.provider in ("scripted", "replay", "recorded"):
        raise JudgeSetupError(f"--judge: {name!r} is a {config.provider} model and cannot judge text; "
                              "name an openai, ollama or local model")
    if config.api_key_env and not os.environ.get(config.api_key_env):
        raise JudgeSetupError(f"models.{name}.api_key_env: environment variable {config.api_key_env} is not set "
                              "(it must hold the API key)")
    servers: list[Any] = []

    def factory(cfg: Any) -> Any:
        from ..local.session import needs_server, start_local_servers
        from ..providers.base import ProviderError
        from ..providers.registry import make_provider

        if needs_server([cfg]):
            from ..local.model_files import ModelFileError
            from ..local.server import LocalServerError

            try:
                servers.extend(set(start_local_servers([cfg], report_dir).values()))
            except (ModelFileError, LocalServerError) as exc:
                raise ProviderError(f"local:{cfg.name}", f"the local model server did not start: {exc}",
                                    transient=False) from None
        return make_provider(cfg)

    from ..masking import model_secrets

    cache = None if cache_mode == "off" else JudgeCache(report_dir / CACHE_FILE, cache_mode,
                                                         secrets=model_secrets([config]))
    return Judge(config, cache, provider_factory=factory), servers
