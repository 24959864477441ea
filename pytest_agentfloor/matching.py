"""Lenient-but-exact value matching shared by the sandbox (scripted failures) and the graders.

Strings compare case- and whitespace-insensitively, numbers numerically, lists as multisets,
dicts as subsets of the observed value.
"""

from __future__ import annotations

import math
from typing import Any


def _float(value: int | float) -> float:
    """float(value), total: an integer too large for a float (a model can write 400 digits) is +-inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return _float(value)
    if isinstance(value, list):
        return sorted((norm(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): norm(v) for k, v in value.items()}
    return value


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", "").lstrip("$"))
        except ValueError:
            return None
    return None


def equal(expected: Any, observed: Any, tol: float = 1e-6) -> bool:
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        got = _num(observed)
        return got is not None and abs(got - float(expected)) <= tol
    if isinstance(expected, dict):
        return isinstance(observed, dict) and subset(expected, observed)
    return norm(expected) == norm(observed)


def subset(expected: dict[str, Any], observed: dict[str, Any] | None) -> bool:
    """Every key of `expected` is present in `observed` with an equal value."""
    if observed is None:
        return False
    return all(k in observed and equal(v, observed[k]) for k, v in expected.items())
