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
from typing import Any, Callable
from urllib.parse import parse_qsl, urlencode

SECRET_HEADER = re.compile(r"(?i)^(authorization|proxy-authorization|cookie|set-cookie|.*(api[-_]?key|token|secret|"
                           r"password|auth).*)$")
SECRET_PARAM = re.compile(r"(?i)(key|token|secret|password|passwd|sig|signature|auth|code|credential)")
BUILTIN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"),
)
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

    def apply(self, record: dict[str, Any], secrets: list[str]) -> dict[str, Any]:
        """The record with the request's secrets, every pattern's matches and the hook's edits applied."""
        def fix(text: str) -> str:
            for s in secrets:
                if s in text:
                    text = text.replace(s, self.replacement)
            for p in self.patterns:
                text = p.sub(self.replacement, text)
            return text

        out = _walk(record, fix)
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
