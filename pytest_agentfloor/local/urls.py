"""Where a local model's server is: the environment variables that carry its URL to workers."""

from __future__ import annotations

import re
from typing import Mapping

URL_ENV = "AGENTFLOOR_LOCAL_URL"


def url_env(name: str) -> str:
    """The per-model variable: AGENTFLOOR_LOCAL_URL_<NAME>, NAME upper-cased, other characters `_`."""
    return f"{URL_ENV}_{re.sub(r'[^A-Za-z0-9]', '_', name).upper()}"


def url_for(name: str, env: Mapping[str, str]) -> str | None:
    """The per-model URL, else the shared one, else None."""
    return env.get(url_env(name)) or env.get(URL_ENV) or None
