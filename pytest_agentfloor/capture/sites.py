"""Which call site a request belongs to: a header, a path prefix, a config rule, else ``unassigned``.

First that applies wins:

1. the header ``X-Agentfloor-Site: NAME`` (not forwarded);
2. a path prefix ``/site/NAME/...`` (stripped before forwarding: ``/site/router/v1/chat/completions``
   goes upstream as ``/v1/chat/completions``);
3. the first ``[[site]]`` rule of the capture config whose every condition holds (system prompt's
   sha256 prefix, a string the system prompt contains, the set of tool names, the model);
4. ``unassigned``.

A name from a header or a path is folded to a marker name (lower case, ``[a-z0-9_]``; a leading
digit gets ``site_`` before it), since it becomes a pytest marker and a case id prefix.
"""

from __future__ import annotations

import re
from typing import Any

from .config import SiteRule
from .wire import sha256, system_prompt, tool_names

HEADER = "x-agentfloor-site"
UNASSIGNED = "unassigned"
_PREFIX = re.compile(r"^/site/([^/]+)(/.*)?$")


def fold(name: str) -> str | None:
    text = re.sub(r"[^a-z0-9_]+", "_", name.strip().lower()).strip("_")[:64]
    if not text:
        return None
    return text if text[0].isalpha() else f"site_{text}"


def split_path(path: str) -> tuple[str | None, str]:
    """(site from a /site/NAME/ prefix or None, the path to forward)."""
    m = _PREFIX.match(path)
    if m is None:
        return None, path
    return fold(m.group(1)), m.group(2) or "/"


def rule_site(rules: tuple[SiteRule, ...], request: dict[str, Any]) -> str | None:
    messages = request.get("messages") or []
    prompt = system_prompt(messages)
    digest = sha256(prompt)
    names = frozenset(tool_names(request.get("tools") or []))
    for r in rules:
        if r.system_prompt_sha256 is not None and not digest.startswith(r.system_prompt_sha256.lower()):
            continue
        if r.system_prompt_contains is not None and r.system_prompt_contains not in prompt:
            continue
        if r.tools is not None and r.tools != names:
            continue
        if r.model is not None and r.model != request.get("model"):
            continue
        return r.name
    return None


def assign(header: str | None, path_site: str | None, rules: tuple[SiteRule, ...],
           request: dict[str, Any]) -> tuple[str, str]:
    """(site, how it was assigned: header | path | rule | none)."""
    if header and fold(header):
        return fold(header), "header"  # type: ignore[return-value]
    if path_site:
        return path_site, "path"
    by_rule = rule_site(rules, request)
    if by_rule:
        return by_rule, "rule"
    return UNASSIGNED, "none"
