"""Recorded responses (record/replay) and the resume index over stored run records.

A cassette entry is keyed by everything that determines a model's answer: provider, model,
base URL without credentials, sampling parameters, messages and tools. Replay never falls
through to the live model: a miss is an error that names the key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import ModelConfig, strip_credentials
from .providers.base import Provider, ProviderError, Reply, ToolCallOut
from .results import RunLog, read_records

if TYPE_CHECKING:
    from .suite.schema import ResolvedCase

CASSETTE_FILE = "cassettes.jsonl"


def request_key(config: ModelConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    ident = {
        "provider": config.provider,
        "model": config.model or config.policy,
        "base_url": strip_credentials(config.base_url) if config.base_url else None,
        "sampling": [config.temperature, config.seed, config.max_tokens, config.think, config.system_prompt],
        "messages": messages,
        "tools": tools,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _reply_from(data: dict[str, Any]) -> Reply:
    calls = [ToolCallOut(**c) for c in data.get("tool_calls", [])]
    return Reply(**{**data, "tool_calls": calls})


class CassetteStore:
    """An append-only JSONL of (key, reply) pairs, shared by xdist workers through flock."""

    def __init__(self, path: Path):
        self.path = path
        self._log = RunLog(path)
        self._index: dict[str, dict[str, Any]] | None = None

    def lookup(self, key: str) -> Reply | None:
        if self._index is None:
            records, _ = read_records(self.path)
            self._index = {r["key"]: r["reply"] for r in records if "key" in r and "reply" in r}
        data = self._index.get(key)
        return _reply_from(data) if data is not None else None

    def add(self, key: str, reply: Reply, model: str) -> None:
        self._log.append({"key": key, "model": model, "reply": asdict(reply)})

    def close(self) -> None:
        self._log.close()


class RecordingProvider:
    """Passes requests to the live provider and stores every reply."""

    def __init__(self, inner: Provider, store: CassetteStore):
        self.inner, self.store, self.config = inner, store, inner.config

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase") -> Reply:
        reply = self.inner.complete(messages, tools, case=case)
        self.store.add(request_key(self.config, messages, tools), reply, self.config.name)
        return reply

    def close(self) -> None:
        self.inner.close()


class ReplayProvider:
    """Serves stored replies only; the live provider is never constructed."""

    def __init__(self, config: ModelConfig, store: CassetteStore):
        self.config, self.store = config, store

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 case: "ResolvedCase") -> Reply:
        key = request_key(self.config, messages, tools)
        reply = self.store.lookup(key)
        if reply is None:
            turn = sum(1 for m in messages if m["role"] == "assistant")
            raise ProviderError(f"replay:{self.store.path}",
                                f"no recorded response for model {self.config.name!r}, case {case.id} "
                                f"{case.variant}-{case.instance} turn {turn} (key {key[:12]})", transient=False)
        return reply

    def close(self) -> None:
        pass


# -- resume ---------------------------------------------------------------------------------
def config_fingerprint(public_config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(public_config, sort_keys=True).encode()).hexdigest()[:16]


def resume_key(model: str, task: str, variant: str, instance: str, run: int, case_hash: str,
               config_fp: str) -> str:
    return f"{model}|{task}|{variant}|{instance}|{run}|{case_hash}|{config_fp}"


def completed_records(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The last complete, graded record of every item in a runs.jsonl, by resume key.

    Infrastructure errors are not results: those items run again.
    """
    records, problems = read_records(path)
    done: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("infra_error") or "trajectory" not in r or "config" not in r:
            continue
        key = resume_key(r["model"], r["task"], r["variant"], r["instance"], r["run"], r["case_hash"],
                         config_fingerprint(r["config"]))
        done[key] = r
    return done, problems
