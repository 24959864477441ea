"""Secrets never reach the capture files: headers are not stored, secret values are struck out everywhere.

Three steps, in this order, on every record before it is written (:func:`Redactor.apply`):

1. **Known secrets of the request**: the values of its credential headers (``Authorization``,
   ``api-key``, ``x-api-key``, cookies, any header naming a key, token or secret; a bearer
   token's token alone too) and of its query string's key-like parameters are replaced wherever
   they appear in the record (an agent that pastes its key into a prompt does not leak it). Headers
   themselves are never stored; the stored path carries the query with those values replaced.
2. **Patterns**: built-in ones (OpenAI-style ``sk-...`` keys, ``Bearer ...`` tokens) and the
   config's ``[redact] patterns``, on every string of the request and the reply.
3. **The hook** ``pytest_agentfloor_capture_redact(record)`` of every plugin module named by
   ``[redact] plugins`` or ``--redact-plugin``: it edits the record in place.
"""

from __future__ import annotations

import importlib
import re
import threading
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode

SECRET_HEADER = re.compile(r"(?i)^(authorization|proxy-authorization|cookie|set-cookie|.*(api[-_]?key|token|secret|"
                           r"password|auth).*)$")
SECRET_PARAM = re.compile(r"(?i)(key|token|secret|password|passwd|sig|signature|auth|code|credential)")
#: written literal first (the word boundary as a lookbehind after it): ``\bsk-...`` scanned a 42 KB
#: prompt in 2 ms, ``sk-(?<!\wsk-)...`` (the same matches) in 0.02 ms, since re then searches for the
#: literal. The case-insensitive one cannot start with a literal, so it runs only where its word occurs
BUILTIN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-(?<!\wsk-)[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"),
)
#: pattern -> a lower-case word every match contains: the pattern runs only on text whose lower() has it
PREFILTER: dict[re.Pattern[str], str] = {BUILTIN_PATTERNS[1]: "bearer"}
#: texts at least this long have their pattern substitutions remembered: an agent sends the same system
#: prompt (and the same history) with every call, and scanning a registry-sized prompt costs milliseconds
CACHE_MIN_CHARS = 512
CACHE_MAX_CHARS = 32_000_000  # about 64 MB of text (keys and values); the cache starts over past it
#: a secret value shorter than this is not struck out of text (it would blank ordinary words)
MIN_SECRET = 6


def secret_values(headers: list[tuple[str, str]], query: str) -> list[str]:
    """The request's secret values: credential headers, bearer tokens, key-like query parameters."""
    out = []
    for name, value in headers:
        if SECRET_HEADER.match(name.strip()):
            out.append(value.strip())
            parts = value.strip().split(None, 1)
            if len(parts) == 2:  # "Bearer TOKEN", "Basic ...": the token alone too
                out.append(parts[1].strip())
    for name, value in parse_qsl(query, keep_blank_values=True):
        if SECRET_PARAM.search(name):
            out.append(value)
    return sorted({v for v in out if len(v) >= MIN_SECRET}, key=len, reverse=True)


def clean_query(query: str, replacement: str) -> str:
    """The query string with every key-like parameter's value replaced."""
    if not query:
        return ""
    pairs = [(k, replacement if SECRET_PARAM.search(k) else v) for k, v in parse_qsl(query, keep_blank_values=True)]
    return urlencode(pairs)


def _walk(value: Any, fix: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, list):
        return [_walk(v, fix) for v in value]
    if isinstance(value, dict):
        return {fix(k) if isinstance(k, str) else k: _walk(v, fix) for k, v in value.items()}
    return value


class Redactor:
    def __init__(self, patterns: tuple[re.Pattern[str], ...] = (), replacement: str = "[REDACTED]",
                 plugins: tuple[str, ...] = ()):
        self.patterns = BUILTIN_PATTERNS + tuple(patterns)
        self.replacement = replacement
        self.hook = _hook(plugins)
        self._cache: dict[str, str] = {}
        self._cached_chars = 0
        self._lock = threading.Lock()

    def _patterns(self, text: str) -> str:
        """Every pattern's matches replaced (step 2), remembered for long texts."""
        long = len(text) >= CACHE_MIN_CHARS
        if long:
            hit = self._cache.get(text)
            if hit is not None:
                return hit
        lowered: str | None = None
        out = text
        for p in self.patterns:
            word = PREFILTER.get(p)
            if word is not None:
                lowered = out.lower() if lowered is None else lowered
                if word not in lowered:
                    continue
            new = p.sub(self.replacement, out)
            if new is not out:
                lowered = None
            out = new
        if long:
            with self._lock:
                if self._cached_chars > CACHE_MAX_CHARS:
                    self._cache.clear()
                    self._cached_chars = 0
                self._cache[text] = out
                self._cached_chars += len(text) + len(out)
        return out

    def _fixer(self, secrets: list[str]) -> Callable[[str], str]:
        def fix(text: str) -> str:
            for s in secrets:
                if s in text:
                    text = text.replace(s, self.replacement)
            return self._patterns(text)
        return fix

    def part(self, value: Any, secrets: list[str]) -> Any:
        """One part of a record with steps 1 and 2 applied (the proxy does the request's part while the
        upstream works on it, so only the reply's part is left for when the reply is complete)."""
        return _walk(value, self._fixer(secrets))

    def apply(self, record: dict[str, Any], secrets: list[str], *, done: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The record with the request's secrets, every pattern's matches and the hook's edits applied;
        ``done``: top-level fields already passed through :meth:`part` with the same secrets."""
        fix = self._fixer(secrets)
        out = {fix(k): (v if k in done else _walk(v, fix)) for k, v in record.items()}
        if self.hook is not None:
            self.hook.pytest_agentfloor_capture_redact(record=out)
            if secrets:  # a hook cannot put a known secret back
                out = _walk(out, lambda t: _strike(t, secrets, self.replacement))
        return out


def _strike(text: str, secrets: list[str], replacement: str) -> str:
    for s in secrets:
        text = text.replace(s, replacement)
    return text


def _hook(plugins: tuple[str, ...]) -> Any:
    """The redaction hook caller over the named plugin modules (None: no plugin)."""
    if not plugins:
        return None
    import pluggy

    from .. import hookspec

    class _Manager(pluggy.PluginManager):
        """Takes a plain ``pytest_agentfloor_capture_*`` function as an implementation, as a conftest.py's."""

        def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
            opts = super().parse_hookimpl_opts(plugin, name)
            if opts is None and name.startswith("pytest_agentfloor_capture_") and callable(getattr(plugin, name, None)):
                return {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False,
                        "trylast": False, "specname": None}
            return opts

    pm = _Manager("pytest")
    pm.add_hookspecs(hookspec)
    for name in plugins:
        pm.register(importlib.import_module(name), name=name)
    return pm.hook
