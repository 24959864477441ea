"""The judge: one verdict per (predicate, text), from the cache or from one model request.

Deterministic by construction: the judge's configuration is forced to temperature 0 and a
fixed seed (the configured seed, else JUDGE_SEED), and the reply must be JSON (the provider is
asked for JSON mode where the API has one). The cache key covers everything the judge sees.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .cache import CacheError, JudgeCache
from .prompt import PROMPT_VERSION, UnparseableReply, messages, parse_reply

if TYPE_CHECKING:
    from ..config import ModelConfig
    from ..providers.base import Provider

JUDGE_SEED = 42
#: the configuration fields that can change a verdict (not the name, timeouts, retries or pricing)
FINGERPRINT_FIELDS = ("provider", "model", "base_url", "temperature", "seed", "max_tokens", "think",
                      "reasoning_effort")


class JudgeError(Exception):
    """The judge timed out, failed or answered outside the contract: the item is an infrastructure error."""


def judge_config(config: "ModelConfig") -> "ModelConfig":
    """The configuration a judge runs with: temperature 0 and a fixed seed."""
    seed = config.seed if config.seed is not None else JUDGE_SEED
    return config.model_copy(update={"temperature": 0.0, "seed": seed})


def fingerprint(config: "ModelConfig") -> str:
    """Public fingerprint of a judge configuration (no secrets: `public()` strips them)."""
    public = config.public()
    ident = {k: public.get(k) for k in FINGERPRINT_FIELDS}
    ident["base_url"] = config.key_base_url()  # a pool's replicas do not change the judge
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def context_digest(task: str, reference: str | None) -> str:
    return hashlib.sha256(json.dumps([task, reference or ""]).encode("utf-8", "surrogatepass")).hexdigest()


def cache_key(judge_fp: str, predicate: str, rubric: str, case_id: str, context: str, text: str) -> str:
    """SHA-256 over the judge's fingerprint, the prompt version, the predicate and rubric, the case
    (its id and the digest of what the judge is shown of it) and the exact text judged."""
    ident = {"judge": judge_fp, "prompt_version": PROMPT_VERSION, "predicate": predicate, "rubric": rubric,
             "case": case_id, "context": context, "text": text}
    blob = json.dumps(ident, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class Judgment:
    """One predicate's verdict on one text; `source` is "judge" or "keyword" (the stand-in)."""

    predicate: str
    source: str
    passed: bool
    reason: str
    rubric: str = ""
    key: str | None = None
    cached: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = 0.0  # None: the judge has no pricing (unknown, never $0); a hit costs nothing

    def to_json(self) -> dict[str, Any]:
        return {"predicate": self.predicate, "source": self.source, "verdict": "pass" if self.passed else "fail",
                "reason": self.reason, "rubric": self.rubric, "key": self.key, "cached": self.cached,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "latency_s": round(self.latency_s, 6),
                "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 10)}

    def line(self) -> str:
        how = "" if self.source == "keyword" else (" (cached)" if self.cached else " (asked)")
        return f"{self.predicate}: {'pass' if self.passed else 'FAIL'}{how}: {self.reason}"


class Judge:
    """A configured judge with its cache; the provider is made on the first cache miss."""

    def __init__(self, config: "ModelConfig", cache: JudgeCache | None = None, *,
                 provider_factory: "Callable[[ModelConfig], Provider] | None" = None, offline: bool = False):
        self.config = judge_config(config)
        self.name = config.name
        self.fingerprint = fingerprint(self.config)
        self.cache = cache
        self._factory = provider_factory
        self._provider: Any = None
        self.offline = offline  # --replay: answer from the cache only; a miss is an error, never a live call
        self.hits = self.requests = 0  # verdicts from the cache, and requests made, by this process

    def provider(self) -> "Provider":
        if self._provider is None:
            from ..providers.registry import make_provider

            self._provider = (self._factory or make_provider)(self.config)
        return self._provider

    def judge(self, *, case_id: str, task: str, reference: str | None, predicate: str, rubric: str,
              text: str) -> Judgment:
        """The verdict on `text`; raises JudgeError when the judge cannot give one."""
        key = cache_key(self.fingerprint, predicate, rubric, case_id, context_digest(task, reference), text)
        try:
            hit = self.cache.get(key) if self.cache is not None else None
        except CacheError as exc:
            raise JudgeError(str(exc)) from None
        if hit is not None:
            self.hits += 1
            return Judgment(predicate, "judge", hit["verdict"] == "pass", hit["reason"], rubric, key, cached=True)
        from ..providers.base import MalformedReply, ProviderError

        where = f"judge {self.name}"
        if self.offline:
            raise JudgeError(f"{where}: no cached verdict for {predicate} on this text, and --agentfloor-replay makes no "
                             "live request")
        msgs = messages(task=task, reference=reference, predicate=predicate, rubric=rubric, text=text)
        self.requests += 1
        try:
            reply = self.provider().complete(msgs, [], case=None, json_reply=True)  # type: ignore[call-arg]
        except ProviderError as exc:
            raise JudgeError(f"{where}: {exc}") from None
        except MalformedReply as exc:
            raise JudgeError(f"{where}: unreadable reply: {exc}") from None
        if reply.finish_reason == "length":
            raise JudgeError(f"{where}: reply cut at max_tokens={self.config.max_tokens} before the verdict ended")
        try:
            passed, reason = parse_reply(reply.content)
        except UnparseableReply as exc:
            raise JudgeError(f"{where}: unparseable reply ({PROMPT_VERSION} asks for {{\"verdict\", \"reason\"}} "
                             f"JSON): {exc}") from None
        busy = reply.busy_s if reply.busy_s is not None else reply.latency_s
        p = self.config.pricing
        priced = any(v is not None for v in (p.hourly_usd, p.input_per_mtok, p.output_per_mtok))
        from ..results import usage_invalid

        # usage the server got wrong makes the judge's cost unknown, never negative
        cost = p.cost(reply.tokens_in, reply.tokens_out, busy) if priced and not usage_invalid(
            reply.tokens_in, reply.tokens_out, busy) else None
        out = Judgment(predicate, "judge", passed, reason, rubric, key, cached=False, tokens_in=reply.tokens_in,
                       tokens_out=reply.tokens_out, latency_s=reply.latency_s, cost_usd=cost)
        if self.cache is not None:
            self._store({"key": key, "verdict": "pass" if passed else "fail", "reason": reason,
                         "prompt_version": PROMPT_VERSION, "judge": self.fingerprint, "judge_model": self.name,
                         "predicate": predicate, "case": case_id, "tokens_in": reply.tokens_in,
                         "tokens_out": reply.tokens_out, "latency_s": round(reply.latency_s, 6)})
        return out

    def _store(self, entry: dict[str, Any]) -> None:
        assert self.cache is not None
        try:
            self.cache.put(entry)
        except CacheError as exc:  # the verdict was given, but an unwritable cache is the setup's fault
            raise JudgeError(str(exc)) from None

    def describe(self) -> str:
        return f"{self.name} ({self.config.provider}:{self.config.model or 'default'}, prompt {PROMPT_VERSION})"

    def close(self) -> None:
        if self._provider is not None:
            self._provider.close()
            self._provider = None
        if self.cache is not None:
            self.cache.close()
