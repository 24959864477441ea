"""Session lifecycle of the embedded model servers, for the plugin's controller and its workers.

Controller, at session start (before xdist starts its workers)::

    servers = start_local_servers(options.selected, options.report_dir)

starts one `LocalServer` per distinct local model that has no `base_url` and no URL in the
environment yet, logging to ``<report_dir>/local-server.log`` (``local-server-<model>.log`` when
several run), and publishes each URL in this process's environment (`urls.url_env`). Workers
spawned afterwards inherit it; to be independent of spawn order, also hand
``worker_urls(servers)`` to each node (``node.workerinput["agentfloor_local_urls"]`` in
``pytest_configure_node``) and call ``apply_worker_urls(config.workerinput)`` in the worker's
``pytest_configure``. At session end: ``stop_local_servers(servers)``.

Each server is started with the `slots`, `threads` and `threads_batch` of its configurations
(`server_settings`; defaults measured for the README main job on 2 cores, docs/local-model.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, MutableMapping

from ..context import LADDER_MAX_TURNS, context_need
from .model_files import ModelSpec, ensure_model, spec_for
from .server import LocalServer, LocalServerError, default_threads, template_path
from .urls import URL_ENV, url_env, url_for

if TYPE_CHECKING:
    from ..config import ModelConfig

WORKERINPUT_KEY = "agentfloor_local_urls"
LOG_NAME = "local-server.log"
#: llama-server slots when models.toml sets none (measured: docs/local-model.md, benchmarks/bench_local_slots.py)
DEFAULT_SLOTS = 1


def needs_server(models: Iterable["ModelConfig"], env: Mapping[str, str] = os.environ) -> list["ModelConfig"]:
    """Local models with no server yet: no base_url and no URL in the environment."""
    return [m for m in models if m.provider == "local" and not m.base_url and not url_for(m.name, env)]


def server_settings(configs: Iterable["ModelConfig"]) -> tuple[int, int, int | None]:
    """(slots, threads, threads_batch) of the one server that serves `configs` (one model).

    Slots: the most any of them asks for (each gets its episodes' full context), else DEFAULT_SLOTS.
    Threads: configurations that set them must agree (one process cannot run both); unset,
    `default_threads()` and llama-server's own batch default (the generation threads).
    """
    configs = list(configs)
    slots = max([c.slots for c in configs if c.slots] or [DEFAULT_SLOTS])
    chosen: dict[str, int | None] = {}
    for field in ("threads", "threads_batch"):
        values = {c.name: getattr(c, field) for c in configs if getattr(c, field) is not None}
        if len(set(values.values())) > 1:
            listed = " and ".join(f"models.{name}.{field} = {v}" for name, v in values.items())
            raise LocalServerError(f"{listed} share one embedded server (same model): set the same {field}")
        chosen[field] = next(iter(values.values()), None)
    return slots, chosen["threads"] or default_threads(), chosen["threads_batch"]


def slot_context(spec: ModelSpec, configs: Iterable["ModelConfig"] = (), *,
                 turns: int = LADDER_MAX_TURNS) -> int:
    """Tokens of context per parallel slot for the configurations served by one server.

    Unset, it is the model's default or, if more, what the longest episode of the session needs
    with the largest completion cap among them (`context_need`). Set (`context_window`, the
    largest among them), it must hold that episode: a smaller window is a start-up error naming
    the field to change, not a run of cut prompts.
    """
    configs = list(configs)
    explicit = [c.context_window for c in configs if c.context_window]
    if not explicit:
        return max([spec.ctx_size] + [context_need(turns, c.max_tokens) for c in configs])
    per_slot = max(explicit)
    for c in configs:
        need = context_need(turns, c.max_tokens)
        if per_slot < need:
            raise LocalServerError(
                f"models.{c.name}: a context of {per_slot} tokens per slot cannot hold a {turns}-turn "
                f"episode with max_tokens = {c.max_tokens} (needs {need}); raise context_window to at least "
                f"{need} or lower max_tokens")
    return per_slot


def server_for(spec: ModelSpec, *, log_path: Path, parallel: int = 1, startup_timeout: float = 120.0,
               cache: Path | None = None, ctx_per_slot: int | None = None, threads: int | None = None,
               threads_batch: int | None = None) -> LocalServer:
    """A (not yet started) server for `spec`, its weights verified and its template shipped.

    llama-server divides its --ctx-size among its --parallel slots, so the total is per slot x slots.
    """
    if parallel < 1:
        raise LocalServerError(f"parallel must be at least 1, got {parallel}")
    model = ensure_model(spec, cache)
    template = template_path(spec.template) if spec.template else None
    return LocalServer(model, template=template, log_path=log_path,
                       ctx_size=(ctx_per_slot or spec.ctx_size) * parallel,
                       parallel=parallel, threads=threads, threads_batch=threads_batch, alias=spec.key,
                       startup_timeout=startup_timeout)


def start_local_servers(models: Iterable["ModelConfig"], report_dir: Path, *, parallel: int | None = None,
                        startup_timeout: float = 120.0, turns: int = LADDER_MAX_TURNS,
                        env: MutableMapping[str, str] = os.environ) -> dict[str, LocalServer]:
    """Start what `needs_server` names; returns {config name: server} (configs of one model share one).

    `parallel` overrides the slots of every server (else `server_settings`)."""
    pending = needs_server(models, env)
    by_spec: dict[str, list["ModelConfig"]] = {}
    for m in pending:
        by_spec.setdefault(spec_for(m.model).key, []).append(m)
    servers: dict[str, LocalServer] = {}
    started: list[LocalServer] = []
    try:
        for key, configs in by_spec.items():
            log = report_dir / (LOG_NAME if len(by_spec) == 1 else f"local-server-{key}.log")
            per_slot = slot_context(spec_for(key), configs, turns=turns)  # checked before weights or binary are touched
            slots, threads, threads_batch = server_settings(configs)
            server = server_for(spec_for(key), log_path=log, parallel=parallel or slots, startup_timeout=startup_timeout,
                                ctx_per_slot=per_slot, threads=threads, threads_batch=threads_batch)
            server.start()
            started.append(server)
            for m in configs:
                servers[m.name] = server
                env[url_env(m.name)] = server.openai_url
        if len(started) == 1 and URL_ENV not in env:
            env[URL_ENV] = started[0].openai_url
    except BaseException:
        for server in started:
            server.stop()
        raise
    return servers


def stop_local_servers(servers: Mapping[str, LocalServer] | Iterable[LocalServer],
                       env: MutableMapping[str, str] = os.environ) -> None:
    items = list(servers.items()) if isinstance(servers, Mapping) else [(None, s) for s in servers]
    for name, server in items:
        server.stop()
        if name is not None and env.get(url_env(name)) == server.openai_url:
            env.pop(url_env(name), None)
        if server.port is not None and env.get(URL_ENV) == server.openai_url:
            env.pop(URL_ENV, None)


def worker_urls(servers: Mapping[str, LocalServer]) -> dict[str, str]:
    """The environment entries a worker needs (JSON-serialisable, for node.workerinput)."""
    out = {url_env(name): s.openai_url for name, s in servers.items()}
    distinct = {s.openai_url for s in servers.values()}
    if len(distinct) == 1:
        out[URL_ENV] = distinct.pop()
    return out


def apply_worker_urls(workerinput: Mapping[str, object], env: MutableMapping[str, str] = os.environ) -> None:
    urls = workerinput.get(WORKERINPUT_KEY) or {}
    if isinstance(urls, Mapping):
        for key, value in urls.items():
            env[str(key)] = str(value)
