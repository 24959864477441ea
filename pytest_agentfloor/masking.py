"""Masking the session's secrets in what a model says, before it is written anywhere.

A model can echo what it was given or guessed: an API key in its reply, its tool-call arguments
or its reasoning, or the password of the base_url. Grading sees the real text (a verdict never
changes because of masking); records (runs.jsonl, and so reports/, viewer.html and JUnit
properties) and the failure text pytest prints and puts into JUnit XML get ``***`` instead.

Each secret is masked in every form it can take in stored text: as is, JSON-escaped (tool-call
arguments are a JSON string, sometimes a JSON string inside one), URL-quoted (a password in a
URL). Records are masked before the 64 KiB text cap cuts them, so no cut leaves a piece of a key.

Secrets shorter than :data:`MIN_SECRET` characters are not masked: a 3-character "key" such as
``abc`` or ``1234`` also occurs in ordinary text, and replacing every occurrence would garble
answers, arguments and reports while protecting nothing a guess would not find.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

if TYPE_CHECKING:
    from .config import ModelConfig

MIN_SECRET = 8
MASK = "***"


def _escaped(s: str) -> list[str]:
    once = [json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]]
    twice = [json.dumps(e)[1:-1] for e in once]  # a JSON string (arguments) holding a JSON string
    return [s, *once, *twice, quote(s, safe=""), quote(s)]


def secret_forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Every form of each secret of at least MIN_SECRET characters, longest first (a longer form
    that contains a shorter one is masked whole)."""
    forms = {f for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET for f in _escaped(s)}
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


def model_secrets(models: Iterable[ModelConfig | None], environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secrets of the session's models (the judge's included), in all their forms: the value of
    each api_key_env variable and the password of each base_url (as written and percent-decoded)."""
    env = os.environ if environ is None else environ
    raw: list[str] = []
    for model in models:
        if model is None:
            continue
        if model.api_key_env and env.get(model.api_key_env):
            raw.append(env[model.api_key_env])
        for url in model.base_urls:
            try:
                password = urlsplit(url).password
            except ValueError:
                continue
            if password:
                raw += [password, unquote(password)]
    return secret_forms(raw)


def mask_text(text: str, forms: tuple[str, ...]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def mask(value: Any, forms: tuple[str, ...]) -> Any:
    """A copy of `value` (JSON-like: dicts, lists, tuples, strings) with every form of every secret
    replaced by ***, in keys too. Iterative: a model's arguments nested 100,000 deep cannot overflow it."""
    if not forms:
        return value
    if isinstance(value, str):
        return mask_text(value, forms)
    if not isinstance(value, (dict, list, tuple)):
        return value

    def fresh(node: Any) -> Any:
        return {} if isinstance(node, dict) else []

    root = fresh(value)
    stack: list[tuple[Any, Any]] = [(value, root)]
    tuples: list[tuple[Any, Any, Any]] = []  # (parent copy, key, list copy) to turn back into tuples
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for k, v in items:
            if isinstance(v, str):
                v = mask_text(v, forms)
            elif isinstance(v, (dict, list, tuple)):
                child = fresh(v)
                stack.append((v, child))
                if isinstance(v, tuple):
                    tuples.append((dst, mask_text(k, forms) if isinstance(k, str) else k, child))
                v = child
            if isinstance(dst, dict):
                dst[mask_text(k, forms) if isinstance(k, str) else k] = v
            else:
                dst.append(v)
    for parent, k, child in reversed(tuples):  # innermost first: their own tuples are converted already
        parent[k] = tuple(child)
    return tuple(root) if isinstance(value, tuple) else root
