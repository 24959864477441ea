"""The capture config (TOML): site rules, redaction patterns and plugins, graders for ``capture cases``.

```toml
[redact]
patterns = ['(?i)ssn:?\\s*\\d{3}-\\d{2}-\\d{4}']   # regexes; every match becomes the replacement
replacement = "[REDACTED]"
plugins = ["my_redactor"]                          # modules implementing pytest_agentfloor_capture_redact

[[site]]                                           # first rule whose every condition holds wins
name = "router"
system_prompt_sha256 = "3f2a"                      # a prefix of the system prompt's sha256
system_prompt_contains = "You route"
tools = ["get_weather", "set_light"]               # the request's tool names, as a set
model = "gpt-4o-mini"                              # the request's model

[cases.router]                                     # capture cases: this site's grader
grader = "intent"
labels = ["billing", "outage", "other"]
```
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SITE_NAME = re.compile(r"[a-z][a-z0-9_]*")
RULE_KEYS = {"name", "system_prompt_sha256", "system_prompt_contains", "tools", "model"}


class CaptureConfigError(ValueError):
    """A capture config that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class SiteRule:
    name: str
    system_prompt_sha256: str | None = None
    system_prompt_contains: str | None = None
    tools: frozenset[str] | None = None
    model: str | None = None


@dataclass(frozen=True)
class CaptureConfig:
    rules: tuple[SiteRule, ...] = ()
    patterns: tuple[re.Pattern[str], ...] = ()
    replacement: str = "[REDACTED]"
    plugins: tuple[str, ...] = ()
    graders: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_config(path: Path | None) -> CaptureConfig:
    if path is None:
        return CaptureConfig()
    where = str(path)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CaptureConfigError(f"{where}: {exc}") from None
    unknown = sorted(set(data) - {"redact", "site", "cases"})
    if unknown:
        raise CaptureConfigError(f"{where}: unknown table {unknown[0]!r} (known: redact, site, cases)")
    redact = data.get("redact", {})
    bad = sorted(set(redact) - {"patterns", "replacement", "plugins"})
    if bad:
        raise CaptureConfigError(f"{where}: redact: unknown field {bad[0]!r}")
    patterns = []
    for n, text in enumerate(redact.get("patterns", [])):
        try:
            patterns.append(re.compile(text))
        except (re.error, TypeError) as exc:
            raise CaptureConfigError(f"{where}: redact.patterns[{n}]: not a regex ({exc})") from None
    rules = []
    for n, rule in enumerate(data.get("site", [])):
        extra = sorted(set(rule) - RULE_KEYS)
        if extra:
            raise CaptureConfigError(f"{where}: site[{n}]: unknown field {extra[0]!r}")
        name = rule.get("name")
        if not isinstance(name, str) or not SITE_NAME.fullmatch(name):
            raise CaptureConfigError(f"{where}: site[{n}]: name {name!r} must be a lower-case marker name")
        if len(rule) == 1:
            raise CaptureConfigError(f"{where}: site[{n}] ({name}): a rule needs at least one condition")
        tools = rule.get("tools")
        rules.append(SiteRule(name, rule.get("system_prompt_sha256"), rule.get("system_prompt_contains"),
                              frozenset(tools) if tools is not None else None, rule.get("model")))
    graders = data.get("cases", {})
    for site, spec in graders.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("grader"), str):
            raise CaptureConfigError(f"{where}: cases.{site}: needs grader = \"...\"")
    return CaptureConfig(tuple(rules), tuple(patterns), str(redact.get("replacement", "[REDACTED]")),
                         tuple(redact.get("plugins", [])), dict(graders))
